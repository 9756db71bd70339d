package frontend

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// forwardSpec describes one request to forward to a worker.
type forwardSpec struct {
	era     protocol.Era
	msg     *protocol.Message
	session *bus.SessionInfo  // legacy
	name    string            // routing name (tool or prompt), when subject is empty
	subject string            // where to publish; empty: Subjects.Request(method, name)
	params  map[string]string // modern Mcp-Param-* headers
	claim   *claim            // legacy: the request id claimed in the store
	// effect, when set, runs once on the final response before it is
	// written, whatever form the answer takes (JSON, SSE, or detached):
	// the store side effects of the request. An error turns the answer
	// into a 503 JSON-RPC error when it is still possible.
	effect func(resp []byte) error
	// respond, when set, sets headers on a plain JSON answer and returns
	// its HTTP status (0 keeps the default).
	respond func(resp []byte, h http.Header) int
	// noSSE keeps the answer plain JSON: notifications and
	// server-to-client requests before the response are dropped
	// (initialize, whose answer carries the Mcp-Session-Id header).
	noSSE bool
}

// exchange is one forwarded request, from publish to final frame. One
// goroutine consumes the worker's frames; on a legacy SSE stream it logs
// each event (giving it its id) and publishes it on the stream's live
// subject before handing it to the client's writer goroutine through a
// bounded queue, so a slow client never stalls the exchange. When the
// client goes away, its queue overflows, or the worker asks to close the
// connection (SSE polling), a legacy exchange goes on detached: its events
// are still logged and published, for the client to resume the stream with
// Last-Event-ID on any frontend.
type exchange struct {
	f         *Frontend
	spec      *forwardSpec
	st        *stream
	deadline  time.Time
	cancelKey string

	// client writes SSE events to the attached client; nil before SSE
	// starts and once detached. sseID is the SSE stream id ("" until a
	// legacy SSE stream starts).
	client *clientWriter
	sseID  string

	published  time.Time
	gotFrame   bool
	frames     []frame // reused by take
	rest       []frame // frames after the one that detached the exchange, for drain
	ended      bool    // the final response (or an end marker) was logged
	closeGauge func()  // the open-streams gauge of this exchange's SSE stream
}

// result of handling one frame.
type step int

const (
	stepContinue step = iota
	stepDone
	stepDetach
)

// Stream log markers: entries of a legacy stream's log that are not
// messages for the client. Every JSON-RPC message starts with '{', so they
// cannot be mistaken for one.
const (
	// markStart is the first entry of every stream log; the priming
	// event's id names it, and its presence in a session's log proves the
	// stream belongs to that session. A POST stream's start marker carries
	// the request id after the space.
	markStart = "\x00start "
	// markEnd ends a stream that ended without a response (cancelled).
	markEnd = "\x00end"
)

func isMarker(data []byte) bool { return len(data) > 0 && data[0] == 0 }

// forward publishes the request to the workers and writes what comes back:
// a plain JSON response when the first frame is the response, otherwise an
// SSE stream carrying every notification and server-to-client request, then
// the response.
func (f *Frontend) forward(w http.ResponseWriter, r *http.Request, spec *forwardSpec) {
	defer func() { f.release(spec.claim) }() // nil when a detached drain owns it
	session := ""
	if spec.session != nil {
		session = spec.session.ID
	}
	held, ok := f.admit(w, r, spec.msg.ID, session)
	if !ok {
		return
	}
	defer held.release() // empty when a detached drain owns the slots
	st := f.openStream()
	ex := &exchange{f: f, spec: spec, st: st, deadline: time.Now().Add(f.opts.RequestTimeout)}
	ex.cancelKey = bus.CancelKeyStream(f.id, st.id)
	if spec.session != nil {
		ex.cancelKey = bus.CancelKeyLegacy(spec.session.ID, spec.msg.ID)
	}
	hdr := &bus.RequestHeader{
		Era: spec.era, Method: spec.msg.Method, ID: spec.msg.ID, Frontend: f.id, Stream: st.id, Session: spec.session, Principal: principalOf(r),
		DeadlineMs: ex.deadline.UnixMilli(), Traceparent: r.Header.Get("Traceparent"), Tracestate: r.Header.Get("Tracestate"),
		ParamHeaders: spec.params, Listen: true, SessionStream: true, Tasks: true,
		CheckParamHeaders: spec.era == protocol.EraModern,
	}
	data, err := bus.EncodeRequest(hdr, spec.msg.Params)
	if err == nil && !f.nc.IsConnected() {
		err = nats.ErrConnectionClosed // fail fast during a NATS outage
	}
	if err == nil {
		subject := spec.subject
		if subject == "" {
			subject = f.subj.Request(spec.msg.Method, spec.name)
		}
		err = f.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: f.subj.Stream(f.id, st.id), Data: data})
	}
	ex.published = time.Now()
	if err != nil {
		f.closeStream(st)
		f.log.Warn("frontend: publishing a request", "err", err)
		httpx.SetOutcome(w, "unavailable")
		httpx.WriteError(w, http.StatusServiceUnavailable, spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "message bus unavailable; retry"))
		return
	}
	result := ex.serve(w, r)
	if ex.client != nil {
		ex.client.stop() // the handler must not return while it writes
		ex.client = nil
	}
	if result != stepDetach {
		ex.finish()
		f.closeStream(st)
		return
	}
	f.active.Add(1) // the caller's own count is still held
	cl := spec.claim
	spec.claim = nil // released when the drain ends
	inflight := held
	held = slots{} // the request still runs: its in-flight slots go when it ends
	go func() {
		defer f.active.Done()
		defer f.closeStream(st)
		defer f.release(cl)
		defer inflight.release()
		ex.drain()
		ex.finish()
	}()
}

// finish closes a stream's bookkeeping: the gauge, the end marker of a
// logged stream that got no response, and the live end signal.
func (ex *exchange) finish() {
	if ex.closeGauge != nil {
		ex.closeGauge()
	}
	if ex.sseID == "" {
		return
	}
	if !ex.ended {
		ex.logAndPublish([]byte(markEnd))
	}
	_ = ex.f.nc.Publish(ex.f.subj.Live(ex.spec.session.ID, ex.sseID), []byte(bus.LiveEnd))
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
		var clientDone <-chan struct{}
		if ex.client != nil {
			clientDone = ex.client.done
		}
		select {
		case <-ex.st.signal:
			var overflowed bool
			ex.frames, overflowed = ex.st.take(ex.frames)
			if !ex.gotFrame && len(ex.frames) > 0 {
				ex.gotFrame = true
				f.metrics.RoundTrip(time.Since(ex.published))
			}
			live.Reset(f.opts.WorkerTimeout)
			for i, fr := range ex.frames {
				if s := ex.frame(w, fr); s != stepContinue {
					if s == stepDetach {
						// What came with the frame that detached (a
						// server-to-client request right after a close,
						// say) is the drain's, not lost.
						ex.rest = append(ex.rest[:0], ex.frames[i+1:]...)
					}
					return s
				}
			}
			if overflowed { // frames were dropped: nothing can be resumed
				f.metrics.DroppedStream("post")
				httpx.SetOutcome(w, "dropped")
				ex.cancelWorker()
				return stepDone
			}
		case <-clientDone:
			// The client's writer stopped: write error or overflow.
			if ex.client.overflowed.Load() {
				f.metrics.DroppedStream("post")
				httpx.SetOutcome(w, "dropped")
			} else {
				httpx.SetOutcome(w, "client_gone")
			}
			return ex.clientGone()
		case <-live.C:
			ex.cancelWorker()
			// 502, not 503: the worker may have run the request, so a
			// proxy must not send it elsewhere by itself.
			ex.fail(w, http.StatusBadGateway, protocol.NewError(protocol.CodeInternalError,
				"the worker handling %q stopped responding; retry", ex.spec.msg.Method))
			httpx.SetOutcome(w, "worker_lost")
			return stepDone
		case <-reqTimer.C:
			ex.cancelWorker()
			ex.fail(w, http.StatusGatewayTimeout, protocol.NewError(protocol.CodeInternalError,
				"request timed out after %s", f.opts.RequestTimeout))
			httpx.SetOutcome(w, "timeout")
			return stepDone
		case <-r.Context().Done():
			httpx.SetOutcome(w, "client_gone")
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
		httpx.SetOutcome(w, "no_worker")
		return stepDone
	case bus.FrameResponse:
		payload := fr.payload
		if e := ex.spec.effect; e != nil {
			if err := e(payload); isCapacity(err) && ex.client == nil {
				ex.f.sessionNotCreated(w, ex.spec.msg.ID, err)
				return stepDone
			} else if err != nil {
				ex.f.log.Error("frontend: completing a response", "method", ex.spec.msg.Method, "err", err)
				payload = protocol.AppendErrorResponse(nil, ex.spec.msg.ID, protocol.NewError(protocol.CodeInternalError, "could not complete the request; retry"))
				if ex.client == nil {
					httpx.SetOutcome(w, "unavailable")
					httpx.WriteJSON(w, http.StatusServiceUnavailable, payload, nil)
					return stepDone
				}
			}
		}
		if _, isErr := responseErrorCode(payload); isErr {
			httpx.SetOutcome(w, "error")
		} else {
			httpx.SetOutcome(w, "ok")
		}
		if ex.client != nil {
			ex.emit(payload)
			ex.ended = true
			return stepDone
		}
		ex.writeJSON(w, payload)
		return stepDone
	case bus.FrameNotification, bus.FrameServerRequest:
		if ex.spec.noSSE {
			return stepContinue
		}
		ex.startSSE(w)
		if !ex.emit(fr.payload) {
			return ex.clientGone()
		}
	case bus.FrameEnd:
		// Cancelled: the stream ends without a response.
		ex.startSSE(w)
		httpx.SetOutcome(w, "cancelled")
		return stepDone
	case bus.FrameClose:
		if !ex.legacy() {
			return stepContinue
		}
		ex.startSSE(w)
		if ms, err := strconv.ParseUint(string(fr.payload), 10, 32); err == nil {
			ex.client.send([]byte("retry: " + strconv.FormatUint(ms, 10) + "\n\n"))
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
	if ex.spec.respond != nil {
		extra = http.Header{}
		if s := ex.spec.respond(payload, extra); s != 0 {
			status = s
		}
	}
	if status >= 400 {
		httpx.SetOutcome(w, "error")
	}
	httpx.WriteJSON(w, status, payload, func(h http.Header) {
		for k, v := range extra {
			h[k] = v
		}
	})
}

// startSSE switches the response to an SSE stream served by a writer
// goroutine; on legacy sessions it logs the stream's start marker and sends
// the priming event (its id, empty data) so the client can resume.
func (ex *exchange) startSSE(w http.ResponseWriter) {
	if ex.client != nil {
		return
	}
	sse := startSSE(w, ex.f.opts.WriteTimeout, nil)
	ex.closeGauge = ex.f.metrics.StreamOpened("post")
	if ex.legacy() {
		ex.sseID = postStreamID(ex.f.id, ex.st.id)
		start := append([]byte(markStart), ex.spec.msg.ID.AppendJSON(nil)...)
		if idx, ok := ex.f.logEvent(ex.spec.session.ID, ex.sseID, start); ok {
			_ = sse.priming(formatEventID(ex.sseID, idx), ex.f.opts.SSERetry)
		} else {
			ex.sseID = "" // without a log the stream cannot be resumed
		}
	}
	ex.client = newClientWriter(sse, ex.f.opts.StreamBuffer)
}

// emit logs a legacy stream event (giving it its id) and publishes it on
// the stream's live subject, then queues it for the attached client. It
// reports false when the client cannot take it (gone or too slow).
func (ex *exchange) emit(payload []byte) bool {
	id := ""
	if idx, ok := ex.logAndPublish(payload); ok {
		id = formatEventID(ex.sseID, idx)
	}
	if ex.client == nil {
		return true
	}
	return ex.client.send(formatEvent(id, payload))
}

// logAndPublish appends data to the stream's log and publishes it live;
// ok is false when there is no log (modern, or the store failed).
func (ex *exchange) logAndPublish(data []byte) (uint64, bool) {
	if ex.sseID == "" {
		return 0, false
	}
	idx, ok := ex.f.logEvent(ex.spec.session.ID, ex.sseID, data)
	if !ok {
		return 0, false
	}
	_ = ex.f.nc.Publish(ex.f.subj.Live(ex.spec.session.ID, ex.sseID), bus.AppendLiveEvent(nil, idx, data))
	return idx, true
}

// fail ends the exchange with a JSON-RPC error, in whichever form the
// response has taken (w is nil once detached).
func (ex *exchange) fail(w http.ResponseWriter, status int, e *protocol.Error) {
	payload := protocol.AppendErrorResponse(nil, ex.spec.msg.ID, e)
	if ex.client == nil && w != nil {
		httpx.WriteError(w, status, ex.spec.msg.ID, e)
		return
	}
	ex.emit(payload)
	ex.ended = true
}

// drain runs a detached legacy exchange to its end: events go to the log
// and to the live subject of the stream, where a resuming client gets them.
func (ex *exchange) drain() {
	f := ex.f
	reqTimer := time.NewTimer(time.Until(ex.deadline))
	defer reqTimer.Stop()
	live := time.NewTimer(f.opts.WorkerTimeout)
	defer live.Stop()
	for _, fr := range ex.rest {
		if ex.drainFrame(fr) {
			return
		}
	}
	ex.rest = nil
	for {
		select {
		case <-ex.st.signal:
			var overflowed bool
			ex.frames, overflowed = ex.st.take(ex.frames)
			live.Reset(f.opts.WorkerTimeout)
			for _, fr := range ex.frames {
				if ex.drainFrame(fr) {
					return
				}
			}
			if overflowed {
				ex.cancelWorker()
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

// refuseServerRequest answers a server-to-client request that can reach no
// client with an error, on behalf of the client.
func (ex *exchange) refuseServerRequest(payload []byte) {
	m, err := protocol.Decode(payload, 0)
	if err != nil || m.Kind() != protocol.KindRequest {
		return
	}
	worker, ok := bus.ParseServerRequestID(m.ID)
	if !ok {
		return
	}
	answer := protocol.AppendErrorResponse(nil, m.ID, protocol.NewError(protocol.CodeInternalError, "the client's stream is gone"))
	if data, err := bus.EncodeAnswer(&bus.ClientAnswer{Session: ex.spec.session.ID}, answer); err == nil {
		_ = ex.f.nc.Publish(ex.f.subj.WorkerInbox(worker), data)
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

// responseErrorCode reads the error code of a response we encoded
// (protocol.AppendResponse / AppendErrorResponse) without decoding it: an
// error response has "error" where a result has "result", before any
// nested content, so a result that merely contains an "error" member is
// not mistaken for one.
func responseErrorCode(resp []byte) (int64, bool) {
	const key = `"error":{"code":`
	i := bytes.Index(resp, []byte(key))
	if i < 0 {
		return 0, false
	}
	if j := bytes.Index(resp, []byte(`"result":`)); j >= 0 && j < i {
		return 0, false
	}
	rest := resp[i+len(key):]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// drainFrame handles one frame of a detached exchange; it reports whether
// the exchange is over.
func (ex *exchange) drainFrame(fr frame) bool {
	f := ex.f
	switch fr.kind {
	case bus.FrameNotification:
		ex.emit(fr.payload)
	case bus.FrameServerRequest:
		if ex.sseID == "" {
			// Nobody can ever see it: answer it for the client so
			// the handler does not wait for nothing.
			ex.refuseServerRequest(fr.payload)
			return false
		}
		ex.emit(fr.payload)
	case bus.FrameResponse:
		if e := ex.spec.effect; e != nil {
			if err := e(fr.payload); err != nil {
				f.log.Error("frontend: completing a detached response", "method", ex.spec.msg.Method, "err", err)
			}
		}
		ex.emit(fr.payload)
		ex.ended = true
		return true
	case bus.FrameEnd:
		return true
	case bus.FrameNoResponders:
		ex.fail(nil, 0, protocol.NewError(protocol.CodeInternalError, "no worker is available to serve %q; retry later", ex.spec.msg.Method))
		return true
	}
	return false
}
