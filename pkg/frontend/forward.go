package frontend

import (
	"context"
	"net/http"
	"strconv"
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
	session *bus.SessionInfo  // legacy
	name    string            // routing name (tool or prompt)
	params  map[string]string // modern Mcp-Param-* headers
	claim   *claim            // legacy: the request id claimed in the store
	// onResponse, when set, sees the final response before it is written
	// as plain JSON; it may set headers and returns the HTTP status. An
	// error turns the response into a 503 JSON-RPC error.
	onResponse func(resp []byte, h http.Header) (int, error)
}

// exchange is one forwarded request, from publish to final frame. It is
// served attached to the client's HTTP response; a legacy exchange whose
// client goes away (or whose worker asks to close the connection, SSE
// polling) goes on detached: its events are still logged, and published
// live for a client that resumes the stream with Last-Event-ID.
type exchange struct {
	f         *Frontend
	spec      *forwardSpec
	st        *stream
	deadline  time.Time
	cancelKey string

	// sse is the client's SSE writer; nil before SSE starts and once
	// detached. sseID is the SSE stream id ("" until SSE starts).
	sse      *sseWriter
	sseID    string
	detached bool

	published  time.Time
	gotFrame   bool
	closeGauge func() // the open-streams gauge of this exchange's SSE stream
}

// result of handling one frame or event.
type step int

const (
	stepContinue step = iota
	stepDone
	stepDetach
)

// forward publishes the request to the workers and writes what comes back:
// a plain JSON response when the first frame is the response, otherwise an
// SSE stream carrying every notification and server-to-client request, then
// the response.
func (f *Frontend) forward(w http.ResponseWriter, r *http.Request, spec *forwardSpec) {
	defer func() { f.release(spec.claim) }() // nil when a detached drain owns it
	st := f.openStream()
	ex := &exchange{f: f, spec: spec, st: st, deadline: time.Now().Add(f.opts.RequestTimeout)}
	ex.cancelKey = bus.CancelKeyStream(f.id, st.id)
	if spec.session != nil {
		ex.cancelKey = bus.CancelKeyLegacy(spec.session.ID, spec.msg.ID)
	}
	hdr := &bus.RequestHeader{
		Era: spec.era, Frontend: f.id, Stream: st.id, Session: spec.session,
		DeadlineMs: ex.deadline.UnixMilli(), Traceparent: r.Header.Get("Traceparent"), Tracestate: r.Header.Get("Tracestate"),
		ParamHeaders: spec.params, Listen: true, SessionStream: true,
		CheckParamHeaders: spec.era == protocol.EraModern,
	}
	data, err := bus.EncodeRequest(hdr, spec.body)
	if err == nil && !f.nc.IsConnected() {
		err = nats.ErrConnectionClosed // fail fast during a NATS outage
	}
	if err == nil {
		err = f.nc.PublishMsg(&nats.Msg{Subject: f.subj.Request(spec.msg.Method, spec.name), Reply: f.subj.Stream(f.id, st.id), Data: data})
	}
	ex.published = time.Now()
	if err != nil {
		f.closeStream(st)
		f.log.Warn("frontend: publishing a request", "err", err)
		writeError(w, http.StatusServiceUnavailable, spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "message bus unavailable; retry"))
		return
	}
	st1 := ex.serve(w, r)
	if st1 != stepDetach && ex.closeGauge != nil {
		ex.closeGauge()
	}
	if st1 != stepDetach && ex.sseID != "" {
		_ = f.nc.Publish(f.subj.Live(spec.session.ID, ex.sseID), []byte(bus.LiveEnd))
	}
	if st1 == stepDetach {
		ex.detached = true
		ex.sse = nil
		f.active.Add(1) // the caller's own count is still held
		cl := spec.claim
		spec.claim = nil // released when the drain ends
		go func() {
			defer f.active.Done()
			defer f.closeStream(st)
			defer f.release(cl)
			if ex.closeGauge != nil {
				defer ex.closeGauge()
			}
			ex.drain()
		}()
		return
	}
	f.closeStream(st)
}

func (ex *exchange) legacy() bool { return ex.spec.session != nil }

func (ex *exchange) cancelWorker() {
	_ = ex.f.nc.Publish(ex.f.subj.Cancel(), []byte(ex.cancelKey))
}

// serve runs the exchange attached to the client.
func (ex *exchange) serve(w http.ResponseWriter, r *http.Request) step {
	f := ex.f
	reqTimer := time.NewTimer(time.Until(ex.deadline))
	defer reqTimer.Stop()
	live := time.NewTimer(f.opts.WorkerTimeout)
	defer live.Stop()
	for {
		select {
		case fr, ok := <-ex.st.ch:
			if !ok { // overflow: the client reads too slowly
				f.metrics.droppedStream("post")
				setOutcome(w, "dropped")
				ex.cancelWorker()
				return stepDone
			}
			if !ex.gotFrame {
				ex.gotFrame = true
				f.metrics.roundTrip(time.Since(ex.published))
			}
			live.Reset(f.opts.WorkerTimeout)
			if s := ex.frame(w, fr); s != stepContinue {
				return s
			}
		case <-live.C:
			ex.cancelWorker()
			ex.fail(w, http.StatusServiceUnavailable, protocol.NewError(protocol.CodeInternalError,
				"the worker handling %q stopped responding; retry", ex.spec.msg.Method))
			setOutcome(w, "worker_lost")
			return stepDone
		case <-reqTimer.C:
			ex.cancelWorker()
			ex.fail(w, http.StatusGatewayTimeout, protocol.NewError(protocol.CodeInternalError,
				"request timed out after %s", f.opts.RequestTimeout))
			setOutcome(w, "timeout")
			return stepDone
		case <-r.Context().Done():
			setOutcome(w, "client_gone")
			return ex.clientGone()
		}
	}
}

// clientGone handles a client that closed the response stream: on modern
// requests that is the cancellation; on legacy it is not (the client must
// send notifications/cancelled), so the request runs on, detached.
func (ex *exchange) clientGone() step {
	if !ex.legacy() {
		ex.cancelWorker()
		return stepDone
	}
	return stepDetach
}

// frame handles one frame while attached.
func (ex *exchange) frame(w http.ResponseWriter, fr frame) step {
	switch fr.kind {
	case bus.FrameNoResponders:
		ex.fail(w, http.StatusServiceUnavailable, protocol.NewError(protocol.CodeInternalError,
			"no worker is available to serve %q; retry later", ex.spec.msg.Method))
		setOutcome(w, "no_worker")
		return stepDone
	case bus.FrameResponse:
		if _, isErr := responseErrorCode(fr.payload); isErr {
			setOutcome(w, "error")
		} else {
			setOutcome(w, "ok")
		}
		if ex.sse != nil {
			_ = ex.emit(fr.payload)
			return stepDone
		}
		ex.writeJSON(w, fr.payload)
		return stepDone
	case bus.FrameNotification, bus.FrameServerRequest:
		ex.startSSE(w)
		if err := ex.emit(fr.payload); err != nil {
			return ex.clientGone()
		}
	case bus.FrameEnd:
		// Cancelled: the stream ends without a response.
		ex.startSSE(w)
		setOutcome(w, "cancelled")
		return stepDone
	case bus.FrameClose:
		if !ex.legacy() {
			return stepContinue
		}
		ex.startSSE(w)
		if ms, err := strconv.ParseUint(string(fr.payload), 10, 32); err == nil {
			_ = ex.sse.raw([]byte("retry: " + strconv.FormatUint(ms, 10) + "\n\n"))
		}
		return stepDetach
	}
	return stepContinue
}

func (ex *exchange) writeJSON(w http.ResponseWriter, payload []byte) {
	status := http.StatusOK
	if !ex.legacy() {
		if code, ok := responseErrorCode(payload); ok {
			status = modernStatus(code)
			if code == protocol.CodeInvalidParams {
				status = http.StatusOK // e.g. unknown tool, resource not found
			}
		}
	}
	var extra http.Header
	if ex.spec.onResponse != nil {
		extra = http.Header{}
		s, err := ex.spec.onResponse(payload, extra)
		if err != nil {
			ex.f.log.Error("frontend: completing a response", "method", ex.spec.msg.Method, "err", err)
			writeError(w, http.StatusServiceUnavailable, ex.spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "could not complete the request; retry"))
			return
		}
		status = s
	}
	if status >= 400 {
		setOutcome(w, "error")
	}
	writeJSON(w, status, payload, func(h http.Header) {
		for k, v := range extra {
			h[k] = v
		}
	})
}

// startSSE switches the response to an SSE stream; on legacy sessions it
// sends the priming event (an id and empty data) so the client can resume.
func (ex *exchange) startSSE(w http.ResponseWriter) {
	if ex.sse != nil {
		return
	}
	ex.sse = startSSE(w, ex.f.opts.WriteTimeout, nil)
	ex.closeGauge = ex.f.metrics.streamOpened("post")
	if ex.legacy() {
		ex.sseID = postStreamID(ex.f.id, ex.st.id)
		_ = ex.sse.priming(formatEventID(ex.sseID, 0), ex.f.opts.SSERetry)
	}
}

// emit logs a legacy stream event (giving it its id), publishes it on the
// stream's live subject (for a client that resumes the stream elsewhere,
// also while this connection seems alive), and writes it to the client
// when attached.
func (ex *exchange) emit(payload []byte) error {
	id := ""
	if ex.legacy() && ex.sseID != "" {
		idx, ok := ex.f.logEvent(ex.spec.session.ID, ex.sseID, payload)
		if ok {
			id = formatEventID(ex.sseID, idx)
			_ = ex.f.nc.Publish(ex.f.subj.Live(ex.spec.session.ID, ex.sseID), bus.AppendLiveEvent(nil, idx, payload))
		}
	}
	if ex.sse == nil {
		return nil
	}
	return ex.sse.event(id, payload)
}

// fail ends the exchange with a JSON-RPC error, in whichever form the
// response has taken.
func (ex *exchange) fail(w http.ResponseWriter, status int, e *protocol.Error) {
	if ex.sse == nil && !ex.detached {
		writeError(w, status, ex.spec.msg.ID, e)
		return
	}
	_ = ex.emit(protocol.AppendErrorResponse(nil, ex.spec.msg.ID, e))
}

// drain runs a detached legacy exchange to its end: events go to the log
// and to the live subject of the stream, where a resuming client gets them.
func (ex *exchange) drain() {
	f := ex.f
	defer func() {
		if ex.sseID != "" {
			_ = f.nc.Publish(f.subj.Live(ex.spec.session.ID, ex.sseID), []byte(bus.LiveEnd))
		}
	}()
	reqTimer := time.NewTimer(time.Until(ex.deadline))
	defer reqTimer.Stop()
	live := time.NewTimer(f.opts.WorkerTimeout)
	defer live.Stop()
	for {
		select {
		case fr, ok := <-ex.st.ch:
			if !ok {
				ex.cancelWorker()
				return
			}
			live.Reset(f.opts.WorkerTimeout)
			switch fr.kind {
			case bus.FrameNotification, bus.FrameServerRequest:
				_ = ex.emit(fr.payload)
			case bus.FrameResponse:
				_ = ex.emit(fr.payload)
				return
			case bus.FrameEnd:
				return
			case bus.FrameNoResponders:
				ex.fail(nil, 0, protocol.NewError(protocol.CodeInternalError, "no worker is available to serve %q; retry later", ex.spec.msg.Method))
				return
			}
		case <-live.C:
			ex.cancelWorker()
			ex.fail(nil, 0, protocol.NewError(protocol.CodeInternalError, "the worker handling %q stopped responding; retry", ex.spec.msg.Method))
			return
		case <-reqTimer.C:
			ex.cancelWorker()
			ex.fail(nil, 0, protocol.NewError(protocol.CodeInternalError, "request timed out after %s", f.opts.RequestTimeout))
			return
		}
	}
}

// release ends a request id claim (Store.End). It runs after the
// response was written, so it costs the client no latency; a client that
// reuses the id at once may still find it claimed for that moment.
func (f *Frontend) release(c *claim) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := f.opts.Store.End(ctx, c.session, c.id, c.token); err != nil {
		f.log.Warn("frontend: releasing a request id", "err", err)
	}
}

// logEvent appends an event to a legacy stream's log and returns its index;
// ok is false when the store failed (the event is then sent without an id).
func (f *Frontend) logEvent(session, stream string, payload []byte) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	idx, err := f.opts.Store.AppendEvent(ctx, session, stream, payload)
	if err != nil {
		f.log.Warn("frontend: logging a stream event", "err", err)
		return 0, false
	}
	return idx, true
}
