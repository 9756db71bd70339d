package frontend

import (
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// answerWriteTimeout bounds the write of a JSON answer: a client that
// does not take it within that time loses its connection, so an unread
// answer is not held.
const answerWriteTimeout = 10 * time.Second

// writeJSON writes a JSON body with status, within answerWriteTimeout.
func writeJSON(w http.ResponseWriter, status int, body []byte, extra func(http.Header)) {
	setWriteDeadline(w, time.Now().Add(answerWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if extra != nil {
		extra(h)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes a JSON-RPC error response with an HTTP status.
func writeError(w http.ResponseWriter, status int, id protocol.ID, e *protocol.Error) {
	if status == http.StatusOK {
		setOutcome(w, "error")
	}
	writeJSON(w, status, protocol.AppendErrorResponse(nil, id, e), nil)
}

// httpError writes a transport-level error: an HTTP status with a JSON-RPC
// error body that has no id.
func httpError(w http.ResponseWriter, status int, code int64, msg string) {
	writeError(w, status, protocol.ID{}, protocol.NewError(code, "%s", msg))
}
