package frontend

import (
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// forwardSpec describes one request to forward to a worker.
type forwardSpec struct {
	era     protocol.Era
	msg     *protocol.Message
	body    []byte
	session *bus.SessionInfo // legacy
	name    string           // routing name (tool or prompt)
	// onResponse, when set, sees the final response before it is written
	// as plain JSON; it may set headers and returns the HTTP status. An
	// error turns the response into a 503 JSON-RPC error.
	onResponse func(resp []byte, h http.Header) (int, error)
}

// forward publishes the request to the workers and writes what comes back:
// a plain JSON response when the first frame is the response, otherwise an
// SSE stream carrying every notification and server-to-client request, then
// the response. It returns when the exchange is over.
func (f *Frontend) forward(w http.ResponseWriter, r *http.Request, spec *forwardSpec) {
	st := f.openStream()
	defer f.closeStream(st)
	deadline := time.Now().Add(f.opts.RequestTimeout)
	hdr := &bus.RequestHeader{
		Era: spec.era, Frontend: f.id, Stream: st.id, Session: spec.session,
		DeadlineMs: deadline.UnixMilli(), Traceparent: r.Header.Get("Traceparent"),
	}
	data, err := bus.EncodeRequest(hdr, spec.body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "internal error"))
		return
	}
	out := &nats.Msg{Subject: f.subj.Request(spec.msg.Method, spec.name), Reply: f.subj.Stream(f.id, st.id), Data: data}
	if err := f.nc.PublishMsg(out); err != nil {
		f.log.Warn("frontend: publishing a request", "err", err)
		writeError(w, http.StatusServiceUnavailable, spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "message bus unavailable; retry"))
		return
	}
	cancelKey := bus.CancelKeyStream(f.id, st.id)
	if spec.session != nil {
		cancelKey = bus.CancelKeyLegacy(spec.session.ID, spec.msg.ID)
	}

	var sse *sseWriter
	// fail ends the exchange with a JSON-RPC error, on whichever form the
	// response has taken.
	fail := func(status int, e *protocol.Error) {
		if sse == nil {
			writeError(w, status, spec.msg.ID, e)
			return
		}
		_ = sse.event("", protocol.AppendErrorResponse(nil, spec.msg.ID, e))
	}
	cancelWorker := func() { _ = f.nc.Publish(f.subj.Cancel(), []byte(cancelKey)) }

	reqTimer := time.NewTimer(time.Until(deadline))
	defer reqTimer.Stop()
	live := time.NewTimer(f.opts.WorkerTimeout)
	defer live.Stop()
	for {
		select {
		case fr, ok := <-st.ch:
			if !ok {
				// Overflow: the client reads too slowly. Drop the stream.
				cancelWorker()
				return
			}
			live.Reset(f.opts.WorkerTimeout)
			switch fr.kind {
			case bus.FrameHeartbeat:
			case bus.FrameNoResponders:
				fail(http.StatusServiceUnavailable, protocol.NewError(protocol.CodeInternalError,
					"no worker is available to serve %q; retry later", spec.msg.Method))
				return
			case bus.FrameResponse:
				if sse != nil {
					_ = sse.event("", fr.payload)
					return
				}
				status := http.StatusOK
				var extra http.Header
				if spec.onResponse != nil {
					extra = http.Header{}
					s, err := spec.onResponse(fr.payload, extra)
					if err != nil {
						f.log.Error("frontend: completing a response", "method", spec.msg.Method, "err", err)
						writeError(w, http.StatusServiceUnavailable, spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "could not complete the request; retry"))
						return
					}
					status = s
				}
				writeJSON(w, status, fr.payload, func(h http.Header) {
					for k, v := range extra {
						h[k] = v
					}
				})
				return
			case bus.FrameNotification, bus.FrameServerRequest:
				if sse == nil {
					sse = startSSE(w, f.opts.WriteTimeout, nil)
				}
				if err := sse.event("", fr.payload); err != nil {
					f.clientGone(spec, cancelWorker)
					return
				}
			case bus.FrameEnd:
				// Cancelled: the stream ends without a response.
				if sse == nil {
					sse = startSSE(w, f.opts.WriteTimeout, nil)
				}
				return
			}
		case <-live.C:
			cancelWorker()
			fail(http.StatusServiceUnavailable, protocol.NewError(protocol.CodeInternalError,
				"the worker handling %q stopped responding; retry", spec.msg.Method))
			return
		case <-reqTimer.C:
			cancelWorker()
			fail(http.StatusGatewayTimeout, protocol.NewError(protocol.CodeInternalError,
				"request timed out after %s", f.opts.RequestTimeout))
			return
		case <-r.Context().Done():
			f.clientGone(spec, cancelWorker)
			return
		}
	}
}

// clientGone handles a client that closed the response stream: on modern
// requests that is the cancellation; on legacy it is not (the client must
// send notifications/cancelled), so the request runs on.
func (f *Frontend) clientGone(spec *forwardSpec, cancelWorker func()) {
	if spec.era == protocol.EraModern {
		cancelWorker()
	}
}
