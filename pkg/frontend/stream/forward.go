package stream

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// Spec describes one request to forward to a worker.
type Spec struct {
	// Era is the request's protocol era.
	Era protocol.Era
	// Msg is the request.
	Msg *protocol.Message
	// Session is the legacy session of the request; nil for a modern one.
	Session *bus.SessionInfo
	// Name is the routing name (tool or prompt), when Subject is empty.
	Name string
	// Subject is where to publish; empty: Subjects.Request(method, Name).
	Subject string
	// Params are the modern Mcp-Param-* headers.
	Params map[string]string
	// Principal is the authenticated caller ("" without authentication).
	Principal string
	// Release, when set, runs once when the request is over: after the
	// answer, or at the end of a detached exchange (a legacy claim on the
	// request id).
	Release func()
	// Effect, when set, runs once on the final response before it is
	// written, whatever form the answer takes (JSON, SSE, or detached):
	// the store side effects of the request. An error turns the answer
	// into a 503 JSON-RPC error when it is still possible.
	Effect func(resp []byte) error
	// Respond, when set, sets headers on a plain JSON answer and returns
	// its HTTP status (0 keeps the default).
	Respond func(resp []byte, h http.Header) int
	// NoSSE keeps the answer plain JSON: notifications and
	// server-to-client requests before the response are dropped
	// (initialize, whose answer carries the Mcp-Session-Id header).
	NoSSE bool
}

// release runs Release once.
func (sp *Spec) release() {
	if rel := sp.Release; rel != nil {
		sp.Release = nil
		rel()
	}
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
	s         *Streams
	spec      *Spec
	st        *inbox
	deadline  time.Time
	cancelKey string
	loop      Loop[struct{}] // serve's, kept here to save an allocation
	cases     exchangeCases  // loop's cases

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
	busLost    bool    // ended by BusLost: the log stays open for a resume elsewhere
	last       uint64  // the index of the last logged event the client was given (or the exchange logged, detached)
	closeGauge func()  // the open-streams gauge of this exchange's SSE stream
	// logCtx is the context of the exchange's log lines: the request's
	// while the handler runs it, a snapshot of the request's record once
	// detached (the handler goroutine owns the record).
	logCtx context.Context
}

// result of handling one frame.
type step int

const (
	stepContinue step = iota
	stepDone
	stepDetach
)

// Forward publishes the request to the workers and writes what comes back:
// a plain JSON response when the first frame is the response, otherwise an
// SSE stream carrying every notification and server-to-client request, then
// the response. A legacy exchange whose client goes away runs on detached
// (counted in Options.Active) until its response.
func (s *Streams) Forward(w http.ResponseWriter, r *http.Request, spec *Spec) {
	defer spec.release() // a no-op when a detached drain owns it
	session := ""
	if spec.Session != nil {
		session = spec.Session.ID
	}
	held, ok := s.opts.Admit(w, r, spec.Msg.ID, session)
	if !ok {
		return
	}
	defer func() { held() }() // a no-op when a detached drain owns the slots
	ex := s.newExchange(spec)
	ex.logCtx = r.Context()
	if err := ex.publish(r); err != nil {
		s.closeInbox(ex.st)
		s.log.WarnContext(r.Context(), "frontend: publishing a request", "err", err)
		httpx.SetOutcome(w, "unavailable")
		httpx.WriteError(w, http.StatusServiceUnavailable, spec.Msg.ID, protocol.ErrBusUnavailable())
		return
	}
	result := ex.serve(w, r)
	delivered := false
	if ex.client != nil {
		ex.client.stop() // the handler must not return while it writes
		delivered = ex.client.delivered()
		ex.client = nil
	}
	if result != stepDetach {
		ex.finish()
		if delivered && ex.ended && ex.sseID != "" {
			s.endLog(ex.spec.Session.ID, ex.sseID)
		}
		s.closeInbox(ex.st)
		return
	}
	ex.logCtx = detachedLogContext(r.Context())
	ex.detach(held)
	held = func() {} // the request still runs: its in-flight slots go when it ends
}

func (s *Streams) newExchange(spec *Spec) *exchange {
	ex := &exchange{s: s, spec: spec, st: s.openInbox(), deadline: time.Now().Add(s.opts.RequestTimeout)}
	ex.cancelKey = bus.CancelKeyStream(s.id, ex.st.id)
	if spec.Session != nil {
		ex.cancelKey = bus.CancelKeyLegacy(spec.Session.ID, spec.Msg.ID)
	}
	return ex
}

// publish sends the request to the workers, the replies to come to the
// exchange's inbox.
func (ex *exchange) publish(r *http.Request) error {
	s, spec := ex.s, ex.spec
	subject := spec.Subject
	if subject == "" {
		subject = s.subj.Request(spec.Msg.Method, spec.Name)
	}
	hdr := &bus.RequestHeader{
		Era: spec.Era, Method: spec.Msg.Method, ID: spec.Msg.ID, Frontend: s.id, Stream: ex.st.id, Session: spec.Session, Principal: spec.Principal,
		DeadlineMs: ex.deadline.UnixMilli(), ParamHeaders: spec.Params, Listen: true, SessionStream: true, Tasks: true,
		CheckParamHeaders: spec.Era == protocol.EraModern,
	}
	if rec := httpx.RecordFrom(r.Context()); rec != nil {
		hdr.Target = rec.Tool + rec.Prompt + rec.Resource // one of them, at most
	}
	span := ex.traceHeader(r, hdr, subject)
	format := bus.RequestFormat
	if s.opts.RequestFormat != nil {
		format = s.opts.RequestFormat()
	}
	data, err := bus.EncodeRequestAs(format, hdr, spec.Msg.Params)
	if err == nil && !s.nc.IsConnected() {
		err = nats.ErrConnectionClosed // fail fast during a NATS outage
	}
	if err == nil {
		err = s.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: s.subj.Stream(s.id, ex.st.id), Data: data})
	}
	ex.published = time.Now()
	ex.endPublish(span, subject, len(data), err)
	return err
}

// detach runs the rest of a legacy exchange whose client is gone on a
// goroutine of its own, counted in Options.Active: it holds the in-flight
// slots (released by release) and the spec's Release until it ends.
func (ex *exchange) detach(release func()) {
	s := ex.s
	if s.opts.Active != nil {
		s.opts.Active.Add(1) // the caller's own count is still held
	}
	claim := ex.spec.Release
	ex.spec.Release = nil // released when the drain ends
	go func() {           // owned by the exchange: ends with the request (response, deadline or lost worker)
		if s.opts.Active != nil {
			defer s.opts.Active.Done()
		}
		defer s.closeInbox(ex.st)
		if claim != nil {
			defer claim()
		}
		defer release()
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
	if ex.sseID == "" || ex.busLost {
		return // no log; or a log left open for a resume elsewhere
	}
	if !ex.ended {
		ex.logAndPublish([]byte(markEnd))
	}
	_ = ex.s.nc.Publish(ex.s.subj.Live(ex.spec.Session.ID, ex.sseID), []byte(bus.LiveEnd))
}

func (ex *exchange) legacy() bool { return ex.spec.Session != nil }

func (ex *exchange) cancelWorker() {
	_ = ex.s.nc.Publish(ex.s.subj.Cancel(), []byte(ex.cancelKey))
}

// serve runs the exchange attached to the client, until a frame ends it,
// the client goes, the worker is lost or the request times out.
func (ex *exchange) serve(w http.ResponseWriter, r *http.Request) step {
	ex.cases = exchangeCases{ex: ex, w: w, result: stepDone}
	ex.loop = Loop[struct{}]{
		Events:   ex.st.signal,
		Deadline: ex.deadline,
		Liveness: ex.s.opts.WorkerTimeout,
		Gone:     r.Context().Done(),
		Ended:    ex.s.busLost(),
		Cases:    &ex.cases,
	}
	ex.loop.Run()
	result := ex.cases.result
	ex.loop, ex.cases = Loop[struct{}]{}, exchangeCases{} // a detached exchange does not keep w
	return result
}

// exchangeCases are the cases of an attached exchange's Loop (kept in the
// exchange: no closure per case).
type exchangeCases struct {
	ex     *exchange
	w      http.ResponseWriter
	result step
}

func (c *exchangeCases) OnEvent(struct{}) bool {
	s := c.ex.onFrames(c.w, &c.ex.loop)
	if s == stepContinue {
		return true
	}
	c.result = s
	return false
}

func (c *exchangeCases) OnEnded()  { c.result = c.ex.lostBus(c.w) }
func (c *exchangeCases) OnWriter() { c.result = c.ex.writerStopped(c.w) }

func (c *exchangeCases) OnGone() {
	httpx.SetOutcome(c.w, "client_gone")
	c.result = c.ex.clientGone()
}

func (c *exchangeCases) OnLost() {
	c.ex.cancelWorker()
	// 502, not 503: the worker may have run the request, so a proxy must
	// not send it elsewhere by itself.
	c.ex.fail(c.w, http.StatusBadGateway, errWorkerLost(c.ex.spec.Msg.Method))
	httpx.SetOutcome(c.w, "worker_lost")
}

func (c *exchangeCases) OnDeadline() {
	c.ex.cancelWorker()
	c.ex.fail(c.w, http.StatusGatewayTimeout, errTimedOut(c.ex.s.opts.RequestTimeout))
	httpx.SetOutcome(c.w, "timeout")
}

// onFrames handles the frames waiting in the inbox while attached; once
// SSE starts, the loop also watches the client's writer.
func (ex *exchange) onFrames(w http.ResponseWriter, l *Loop[struct{}]) step {
	var overflowed bool
	ex.frames, overflowed = ex.st.take(ex.frames)
	if !ex.gotFrame && len(ex.frames) > 0 {
		ex.gotFrame = true
		ex.s.opts.Metrics.RoundTrip(time.Since(ex.published))
	}
	l.Alive()
	defer func() {
		if ex.client != nil {
			l.Writer = ex.client.done
		}
	}()
	for i, fr := range ex.frames {
		s := ex.frame(w, fr)
		ex.s.ack(fr)
		if s != stepContinue {
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
		ex.s.opts.Metrics.DroppedStream("post")
		httpx.SetOutcome(w, "dropped")
		ex.cancelWorker()
		return stepDone
	}
	return stepContinue
}

// writerStopped handles the client's writer stopping: a write error or an
// overflow.
func (ex *exchange) writerStopped(w http.ResponseWriter) step {
	if ex.client.overflowed.Load() {
		ex.s.opts.Metrics.DroppedStream("post")
		httpx.SetOutcome(w, "dropped")
	} else {
		httpx.SetOutcome(w, "client_gone")
	}
	return ex.clientGone()
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

// lostBus ends an attached exchange whose frontend lost NATS. A legacy
// stream that started ends as it is: nothing more is logged here, so its
// client resumes it with Last-Event-ID on another frontend (the worker's
// later frames reach the log through the append subject). Any other
// request gets a 502: it may still run, so it must not be sent elsewhere
// by a proxy. The worker is not cancelled (it cannot be told).
func (ex *exchange) lostBus(w http.ResponseWriter) step {
	ex.busLost = true
	httpx.SetOutcome(w, "unavailable")
	if ex.sseID != "" {
		ex.ended = true
		return stepDone
	}
	ex.fail(w, http.StatusBadGateway, errBusLost())
	return stepDone
}

// detachedLogContext is the log context of an exchange that goes on after
// its handler returned: ctx's values, with a copy of its httpx.Record
// taken now (the handler goroutine owns the record itself).
func detachedLogContext(ctx context.Context) context.Context {
	ctx = context.WithoutCancel(ctx)
	if rec := httpx.RecordFrom(ctx); rec != nil {
		snap := *rec
		ctx = httpx.WithRecord(ctx, &snap)
	}
	return ctx
}
