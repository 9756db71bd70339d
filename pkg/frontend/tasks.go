package frontend

import (
	"net/http"

	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks/taskhttp"
)

// Tasks (both eras) are answered by pkg/tasks/taskhttp; the frontend
// dispatches the task methods to it and gives it what it needs of the
// frontend: the request's principal, the workers' liveness, the session's
// in-flight slots and the SSE writer.

// newTasks builds the frontend's task handler.
func newTasks(f *Frontend) (*taskhttp.Handler, error) {
	return taskhttp.New(taskhttp.Options{
		Conn:      f.nc,
		Subjects:  f.subj,
		Store:     f.opts.Store,
		Logger:    f.log,
		Alive:     func(worker string) bool { return f.fleet.Alive(worker) },
		Principal: principalOf,
		Admit: func(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (func(), bool) {
			h, ok := f.limits.Admit(w, id, session, principalOf(r))
			return h.Release, ok
		},
		StartSSE: func(w http.ResponseWriter) taskhttp.EventWriter {
			return sseEvents{stream.StartSSE(w, f.opts.WriteTimeout, nil)}
		},
		RequestTimeout: f.opts.RequestTimeout,
		Closing:        f.shutdown,
	})
}

// sseEvents is a stream.SSE as a taskhttp.EventWriter.
type sseEvents struct{ s *stream.SSE }

func (e sseEvents) Event(data []byte) error { return e.s.Event("", data) }
