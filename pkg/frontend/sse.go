package frontend

import (
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
)

// sseWriter is package stream's SSE writer under the names the task
// handlers (tasks.go) use; code that moves out of this package calls
// stream.StartSSE directly.
type sseWriter struct{ *stream.SSE }

func startSSE(w http.ResponseWriter, timeout time.Duration, extra func(http.Header)) *sseWriter {
	return &sseWriter{stream.StartSSE(w, timeout, extra)}
}

func (s *sseWriter) event(id string, data []byte) error { return s.Event(id, data) }
