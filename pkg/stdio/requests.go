package stdio

import (
	"context"
	"errors"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/logctx"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// call is one request in flight.
type call struct {
	id        protocol.ID
	key       string // idKey(id)
	token     string // of its claim
	cancel    context.CancelFunc
	cancelled bool // guarded by session.mu: the response is not sent
}

// idKey is the key of a client request id: its JSON form, as the store's
// claims take it (1 and "1" differ).
func idKey(id protocol.ID) string { return string(id.AppendJSON(nil)) }

// claim claims key, the id of a request or listen stream about to start,
// in the store until unclaim, and returns the session record with the
// claim's token; or the error answering the request when its id is in use.
// The caller holds s.mu.
func (s *session) claim(id protocol.ID, key string) (*sessionstore.Session, string, *protocol.Error) {
	s.nextToken++
	token := strconv.FormatUint(s.nextToken, 10)
	rec, err := s.store.Begin(s.storeCtx, s.id, key, token, forever)
	switch {
	case errors.Is(err, sessionstore.ErrInFlight):
		return nil, "", protocol.ErrRequestIDInUse(id)
	case err != nil:
		s.log.Error("stdio: claiming a request id", "err", err)
		return nil, "", protocol.ErrInternalFailure()
	}
	return rec, token, nil
}

// unclaim releases the claim made by claim. The caller holds s.mu.
func (s *session) unclaim(key, token string) {
	if err := s.store.End(s.storeCtx, s.id, key, token); err != nil {
		s.log.Error("stdio: releasing a request id", "err", err)
	}
}

// run claims the request's id and starts its handler in its own
// goroutine, with the RequestInit that describe builds from the session
// record (run sets its Out); effect, if set, runs once the handler
// succeeded and before the response is sent.
func (s *session) run(msg *protocol.Message, describe func(*sessionstore.Session) *mcp.RequestInit, effect func()) {
	ctx, cancel := context.WithTimeout(s.baseCtx, s.opts.RequestTimeout)
	c := &call{id: msg.ID, key: idKey(msg.ID), cancel: cancel}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		cancel()
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInternalError, "the server is shutting down"))
		return
	}
	rec, token, e := s.claim(msg.ID, c.key)
	if e == nil && len(s.calls)+len(s.listens) >= s.opts.MaxInFlight {
		s.unclaim(c.key, token)
		e = protocol.NewError(protocol.CodeInternalError, "too many requests in flight (%d); retry", s.opts.MaxInFlight)
	}
	if e != nil {
		s.mu.Unlock()
		cancel()
		s.writeError(msg.ID, e)
		return
	}
	c.token = token
	s.calls[c.key] = c
	s.wg.Add(1)
	s.mu.Unlock()
	in := describe(rec)
	in.Out = &outbound{s: s, c: c, era: in.Era}
	req := mcp.NewRequest(in)
	// The handler's log lines made with its context carry the request's
	// attributes, as on a worker.
	go s.serveCall(logctx.WithRequest(ctx, req), c, req, msg, effect) // owned by the session: ends with the handler, whose ctx Serve cancels
}

// serveCall runs the handler of c and answers it, unless it was cancelled.
func (s *session) serveCall(ctx context.Context, c *call, req *mcp.Request, msg *protocol.Message, effect func()) {
	defer s.wg.Done()
	defer c.cancel()
	ctx, span := s.startSpan(ctx, msg)
	res, err := s.srv.Handle(ctx, req, msg.Params)
	s.mu.Lock()
	delete(s.calls, c.key)
	s.unclaim(c.key, c.token)
	cancelled := c.cancelled
	s.mu.Unlock()
	if cancelled {
		endSpan(span, req, msg, nil, nil, false)
		return // a cancelled request gets no response
	}
	if err != nil {
		e := protocol.AsError(err)
		timedOut := ctx.Err() == context.DeadlineExceeded
		if timedOut {
			e = protocol.ErrRequestTimedOut()
		}
		endSpan(span, req, msg, nil, e, timedOut)
		s.writeError(msg.ID, e)
		return
	}
	endSpan(span, req, msg, res, nil, false)
	if effect != nil {
		effect()
	}
	s.writeResult(msg.ID, res)
}

// notification handles a client notification.
func (s *session) notification(msg *protocol.Message, head *protocol.ParamsHead) {
	switch msg.Method {
	case protocol.NotificationCancelled:
		var id protocol.ID
		if len(head.RequestID) == 0 || id.UnmarshalJSON(head.RequestID) != nil {
			return // a malformed cancel is ignored
		}
		s.cancelRequest(idKey(id))
	case protocol.NotificationRootsListChanged:
		s.rootsChanged(msg)
	}
	// notifications/initialized and unknown notifications need nothing.
}

// rootsChanged runs the server's notifications/roots/list_changed handler
// for the legacy session, in its own goroutine bounded by RequestTimeout.
func (s *session) rootsChanged(msg *protocol.Message) {
	s.mu.Lock()
	if s.era != protocol.EraLegacy || s.closing {
		s.mu.Unlock()
		return
	}
	rec, err := s.store.Get(s.storeCtx, s.id)
	if err != nil {
		s.mu.Unlock()
		s.log.Error("stdio: reading the session record", "err", err)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	in := s.legacyInit(msg.Method, protocol.ID{}, rec)
	in.Out = &outbound{s: s, era: protocol.EraLegacy, c: &call{cancel: func() {}}}
	req := mcp.NewRequest(in)
	go func() { // owned by the session; bounded by RequestTimeout
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.baseCtx, s.opts.RequestTimeout)
		defer cancel()
		s.srv.HandleNotification(ctx, req)
	}()
}

// cancelRequest cancels the request or ends the listen stream whose claim
// key is key.
func (s *session) cancelRequest(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[key]; c != nil {
		c.cancelled = true
		c.cancel()
		return
	}
	if l := s.listens[key]; l != nil {
		delete(s.listens, key) // a cancelled listen gets no result
		s.unclaim(key, l.token)
	}
}

// clientResponse hands the client's answer to the server-to-client request
// waiting for it; an answer nobody waits for is dropped.
func (s *session) clientResponse(msg *protocol.Message) {
	key := msg.ID.String()
	s.mu.Lock()
	ch := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if ch == nil {
		s.log.Debug("stdio: dropping a response to no pending request", "id", key)
		return
	}
	ch <- clientAnswer{result: msg.Result, err: msg.Error} // buffered, one answer
}
