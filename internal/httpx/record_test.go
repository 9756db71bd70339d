package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestRecordErrorType(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for _, tc := range []struct {
		name string
		do   func(w http.ResponseWriter, rec *Record)
		want string
		out  string
	}{
		{"ok", func(w http.ResponseWriter, rec *Record) { WriteJSON(w, 200, []byte(`{}`), nil) }, "", "ok"},
		{"jsonrpc error", func(w http.ResponseWriter, rec *Record) {
			WriteError(w, 200, protocol.Int64ID(1), protocol.NewError(protocol.CodeInvalidParams, "bad"))
		}, "-32602", "error"},
		{"tool error", func(w http.ResponseWriter, rec *Record) {
			rec.Method = protocol.MethodToolsCall
			rec.NoteResponse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`), 0, false)
		}, "tool_error", "ok"},
		{"escaped isError in content is no tool error", func(w http.ResponseWriter, rec *Record) {
			rec.Method = protocol.MethodToolsCall
			rec.NoteResponse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"isError\":true}"}]}}`), 0, false)
		}, "", "ok"},
		{"outcome", func(w http.ResponseWriter, rec *Record) { SetOutcome(w, "worker_lost"); w.WriteHeader(502) }, "worker_lost", "worker_lost"},
		{"status", func(w http.ResponseWriter, rec *Record) { w.WriteHeader(503) }, "unavailable", "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rw := NewRecorder(httptest.NewRecorder(), r, time.Now())
			tc.do(rw, RecordOf(rw))
			if got := rw.Rec.ErrorType(); got != tc.want {
				t.Errorf("ErrorType = %q, want %q", got, tc.want)
			}
			if got := rw.Rec.Outcome(); got != tc.out {
				t.Errorf("Outcome = %q, want %q", got, tc.out)
			}
		})
	}
	if RecordFrom(WithRecord(r.Context(), &Record{Method: "x"})).Method != "x" || RecordFrom(r.Context()) != nil {
		t.Error("WithRecord/RecordFrom")
	}
}
