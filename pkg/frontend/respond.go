package frontend

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// writeJSON writes a JSON body with status.
func writeJSON(w http.ResponseWriter, status int, body []byte, extra func(http.Header)) {
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
