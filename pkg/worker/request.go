package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/logctx"
	"github.com/mcpfleet/mcpfleet/internal/opmetrics"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// inflight is one request being handled. mu guards the fields below it;
// Invariant: once done is set, nothing more is published for the request.
type inflight struct {
	w       *Worker
	key     string
	reply   string
	session string
	// ctx is the request's context (nil for a session's outbound): when it
	// ends, expire or abort cancels the open server-to-client requests.
	// Cancel it with end (reqctx.go), which also has expire answer the
	// request; cancel alone is for an end that answers itself (run).
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer  // ends ctx at the deadline (startDeadline); nil until the handler is queued
	state  atomic.Int32 // who answers: reqQueued, reqRunning, reqAnswered, reqExpired

	// method, id and start are the request's, for expire: start is set by
	// run before armEnd.
	method string
	id     protocol.ID
	start  time.Time

	mu      sync.Mutex
	done    bool
	pending map[string]struct{} // ids of this request's open server-to-client requests

	sessionLevel bool // the session's GET stream (session events), not a request's stream

	returned bool // the handler returned
	stuck    bool // the request ended before its handler returned

	acked *ackedSender // a legacy request's payload frames are acked (acked.go); nil otherwise

	target string            // what the request addresses (bus.RequestHeader.Target)
	op     *opmetrics.Series // the request's operation in the metrics, while in flight
}

// publish sends a frame unless the request is done. final marks the
// request done (first writer wins) and reports whether this call won.
func (f *inflight) publish(kind bus.FrameKind, payload []byte, final bool) bool {
	if f.sessionLevel {
		// A session's GET stream: through any frontend, into its log.
		_, err := f.w.sess.enqueue(f.session, "", kind, payload, false)
		return err == nil
	}
	if f.acked != nil && f.acked.takes(kind) {
		return f.publishAcked(kind, payload, final)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return false
	}
	if final {
		f.done = true
	}
	if err := f.w.nc.Publish(f.reply, bus.AppendFrame(make([]byte, 0, len(payload)+1), kind, payload)); err != nil {
		f.w.log.Warn("worker: publishing a frame", "kind", string(kind), "err", err)
	}
	return true
}

// abort ends the request without a response: cancellation. Each open
// server-to-client request of the handler is cancelled on the client
// first, then the stream is ended, then the handler's context.
func (f *inflight) abort(reason string) {
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return
	}
	f.done = true
	acked := f.acked != nil && f.acked.takes(bus.FrameEnd)
	var notes [][]byte // an acked request's, sent by abortAcked
	for id := range f.pending {
		n, _ := protocol.EncodeNotification(protocol.NotificationCancelled, map[string]any{"requestId": id, "reason": reason})
		if acked {
			notes = append(notes, n)
			continue
		}
		_ = f.w.nc.Publish(f.reply, bus.AppendFrame(nil, bus.FrameNotification, n))
	}
	if !acked {
		_ = f.w.nc.Publish(f.reply, bus.AppendFrame(nil, bus.FrameEnd, nil))
	}
	f.mu.Unlock()
	if acked {
		f.abortAcked(notes)
	}
	// The request is over for the client: its id may be used again at
	// once, even while the handler is still returning (its goroutine stays
	// counted against MaxInFlight until it does). Cancelling the context
	// runs expire, which forgets the request.
	f.end(errors.New(reason))
}

func (w *Worker) onRequest(m *nats.Msg) {
	hdr, raw, err := bus.DecodeRequest(m.Data)
	if err != nil {
		w.log.Warn("worker: dropping a malformed envelope", "err", err)
		return
	}
	if m.Reply == "" {
		w.onNotification(hdr, raw)
		return
	}
	msg, err := requestMessage(hdr, raw)
	if err != nil || msg.Kind() != protocol.KindRequest {
		var id protocol.ID
		var de *protocol.DecodeError
		if errors.As(err, &de) {
			id = de.ID
		}
		e := protocol.NewError(protocol.CodeInvalidRequest, "invalid request")
		_ = w.nc.Publish(m.Reply, bus.AppendFrame(nil, bus.FrameResponse, protocol.AppendErrorResponse(nil, id, e)))
		return
	}
	in := mcp.RequestInit{
		Method:    msg.Method,
		ID:        msg.ID,
		Era:       hdr.Era,
		Principal: hdr.Principal,
		Features:  mcp.Features{Listen: hdr.Listen, SessionStream: hdr.SessionStream, Tasks: hdr.Tasks},

		Traceparent: hdr.Traceparent, Tracestate: hdr.Tracestate,
	}
	if hdr.Tasks {
		in.TaskHost = w.tasks
	}
	if hdr.CheckParamHeaders {
		in.ParamHeaders = hdr.ParamHeaders
		if in.ParamHeaders == nil {
			in.ParamHeaders = map[string]string{}
		}
	}
	var key string
	if s := hdr.Session; s == nil {
		key = bus.CancelKeyStream(hdr.Frontend, hdr.Stream)
	} else {
		key = bus.CancelKeyLegacy(s.ID, msg.ID)
		in.SessionID = s.ID
		in.ProtocolVersion = s.ProtocolVersion
		in.ClientInfo = s.ClientInfo
		in.ClientCapabilities = s.ClientCapabilities
		in.LogLevel = s.LogLevel
	}

	deadline := time.Now().Add(w.opts.DefaultTimeout)
	if hdr.DeadlineMs > 0 {
		deadline = time.UnixMilli(hdr.DeadlineMs)
	}
	ctx, cancel := newRequestCtx(w.traceContext(m, hdr), deadline)
	f := &inflight{w: w, key: key, reply: m.Reply, ctx: ctx, cancel: cancel, acked: w.newAckedSender(hdr, m.Reply, deadline), target: hdr.Target,
		method: msg.Method, id: msg.ID}
	if hdr.Session != nil {
		f.session = hdr.Session.ID
	}

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		cancel(nil)
		e := shuttingDownError()
		_ = w.nc.Publish(m.Reply, bus.AppendFrame(nil, bus.FrameResponse, protocol.AppendErrorResponse(nil, msg.ID, e)))
		endConsume(ctx, "", e)
		return
	}
	if w.opts.MaxInFlight > 0 && w.handlers >= w.opts.MaxInFlight {
		w.mu.Unlock()
		cancel(nil)
		e := protocol.NewError(protocol.CodeInternalError, "worker busy (%d requests in flight); retry", w.opts.MaxInFlight)
		_ = w.nc.Publish(m.Reply, bus.AppendFrame(nil, bus.FrameResponse, protocol.AppendErrorResponse(nil, msg.ID, e)))
		endConsume(ctx, "", e)
		return
	}
	if _, dup := w.inflight[key]; dup {
		w.mu.Unlock()
		cancel(nil)
		e := protocol.ErrRequestIDInUse(msg.ID)
		_ = w.nc.Publish(m.Reply, bus.AppendFrame(nil, bus.FrameResponse, protocol.AppendErrorResponse(nil, msg.ID, e)))
		endConsume(ctx, "", e)
		return
	}
	w.inflight[key] = f
	w.handlers++
	w.wg.Add(1)
	w.mu.Unlock()

	in.Out = &outbound{f: f}
	// A modern request's client info, capabilities, version and log
	// level come from its _meta, decoded once for Handle.
	req := mcp.NewRequestParams(&in, msg.Params)
	// The handler's log lines made with its context carry the request's
	// attributes (method, id, session, tool).
	f.startDeadline(deadline)
	w.pool.submit(handlerJob{ctx: logctx.WithRequest(ctx, req), f: f, req: req, msg: msg})
}

// requestMessage returns the request an envelope carries: built from the
// header's method and id around the raw params when the frontend sent
// them that way (no second decode), else decoded from the whole message.
func requestMessage(hdr *bus.RequestHeader, raw []byte) (*protocol.Message, error) {
	if hdr.Method == "" {
		return protocol.Decode(raw, 0)
	}
	msg := &protocol.Message{ID: hdr.ID, Method: hdr.Method}
	if len(raw) > 0 {
		msg.Params = raw
	}
	return msg, nil
}

func (w *Worker) onCancel(m *nats.Msg) {
	key := string(m.Data)
	w.mu.Lock()
	f := w.inflight[key]
	w.mu.Unlock()
	if f != nil {
		f.abort("cancelled by the client")
	}
}

// outbound sends a request's messages to its stream.
type outbound struct{ f *inflight }

func (o *outbound) Notify(ctx context.Context, method string, params any) error {
	n, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	if !o.f.publish(bus.FrameNotification, n, false) {
		return errors.New("worker: the request is over")
	}
	return nil
}

func (o *outbound) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return o.f.w.call(ctx, o.f, method, params)
}

// CloseStream asks the frontend to close the client's connection while the
// request goes on (SEP-1699 polling).
func (o *outbound) CloseStream(ctx context.Context, retryAfter time.Duration) error {
	ms := retryAfter.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	if !o.f.publish(bus.FrameClose, strconv.AppendInt(nil, ms, 10), false) {
		return errors.New("worker: the request is over")
	}
	return nil
}

// sessionOutbound reaches a legacy session's GET stream, for messages that
// belong to no request of their own.
func (w *Worker) sessionOutbound(session string) *outbound {
	return &outbound{f: &inflight{
		w: w, session: session,
		cancel: func(error) {}, pending: map[string]struct{}{}, sessionLevel: true,
	}}
}

// onNotification handles a client notification forwarded by a frontend
// (legacy notifications/roots/list_changed).
func (w *Worker) onNotification(hdr *bus.RequestHeader, raw []byte) {
	msg, err := protocol.Decode(raw, 0)
	if err != nil || msg.Kind() != protocol.KindNotification || hdr.Session == nil {
		return
	}
	s := hdr.Session
	req := mcp.NewRequest(&mcp.RequestInit{
		Method: msg.Method, Era: hdr.Era, Principal: hdr.Principal,
		SessionID: s.ID, ProtocolVersion: s.ProtocolVersion,
		ClientInfo: s.ClientInfo, ClientCapabilities: s.ClientCapabilities, LogLevel: s.LogLevel,
		Out: w.sessionOutbound(s.ID), Features: mcp.Features{Listen: hdr.Listen, SessionStream: hdr.SessionStream},
	})
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		defer w.recovered("a notification handler")
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.DefaultTimeout)
		defer cancel()
		w.srv.HandleNotification(ctx, req)
	}()
}

// events publishes change events on the bus.
type events struct{ w *Worker }

// ListChanged re-announces the worker: frontends compare the new catalog
// with the union they serve and raise list_changed to their streams (once
// per stream, however many workers changed).
func (e *events) ListChanged(ctx context.Context, kind string) error {
	if e.w.served.Load() == nil {
		return nil // not started yet: Start announces
	}
	// The caller's cancellation (a handler's request ending) does not cut
	// the re-announcement short; applyCatalog bounds it.
	return e.w.applyCatalog(context.WithoutCancel(ctx), []string{kind})
}

// NotifySession sends a notification to one legacy session's GET stream.
func (e *events) NotifySession(ctx context.Context, session, method string, params any) error {
	return e.w.sessionOutbound(session).Notify(ctx, method, params)
}

func (e *events) ResourceUpdated(ctx context.Context, uri string) error {
	n, err := protocol.EncodeNotification(protocol.NotificationResourceUpdated, &protocol.ResourceUpdatedParams{URI: uri})
	if err != nil {
		return err
	}
	// Listen streams (2026-07-28) watch the URI's subject, at most once;
	// legacy sessions subscribed to it get it in their GET log.
	if err := e.w.nc.Publish(e.w.subj.ResourceUpdated(uri), n); err != nil {
		return fmt.Errorf("worker: publishing resources/updated: %w", err)
	}
	if _, err := e.w.sess.enqueue("", uri, bus.FrameNotification, n, false); err != nil {
		return fmt.Errorf("worker: sending resources/updated to legacy sessions: %w", err)
	}
	return nil
}

// shuttingDownError answers a request or task that Shutdown cut short, or
// that arrived once it had begun (errShutdown): -32603, the client should
// retry elsewhere.
func shuttingDownError() *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "worker is shutting down; retry")
}
