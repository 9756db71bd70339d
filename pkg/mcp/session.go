package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// StreamCloser is implemented by an Outbound whose transport can close the
// client's connection without ending the request (legacy SSE polling,
// SEP-1699): the client reconnects after retryAfter with Last-Event-ID and
// gets the rest of the stream.
type StreamCloser interface {
	CloseStream(ctx context.Context, retryAfter time.Duration) error
}

// SessionNotifier is implemented by an Events sink that can reach one
// legacy session outside of any request: the message goes to the
// session's GET stream, wherever it is held.
type SessionNotifier interface {
	NotifySession(ctx context.Context, sessionID, method string, params any) error
}

// ErrNotSupported is returned when the transport cannot do what was asked.
var ErrNotSupported = errors.New("mcp: not supported by this transport")

// CloseSSEStream closes the client's connection of this request's SSE
// stream while the handler goes on; the client is told to reconnect after
// retryAfter and resumes the stream with Last-Event-ID. Legacy era only.
func (r *Request) CloseSSEStream(ctx context.Context, retryAfter time.Duration) error {
	c, ok := r.in.Out.(StreamCloser)
	if !ok || r.in.Era != protocol.EraLegacy {
		return ErrNotSupported
	}
	return c.CloseStream(ctx, retryAfter)
}

// NotifySession sends a notification to the request's own legacy session,
// outside of the request (on the session's GET stream).
func (r *Request) NotifySession(ctx context.Context, method string, params any) error {
	if r.in.SessionID == "" {
		return ErrNotSupported
	}
	return r.srv.NotifySession(ctx, r.in.SessionID, method, params)
}

// NotifySession sends a notification to one legacy session's GET stream.
func (s *Server) NotifySession(ctx context.Context, sessionID, method string, params any) error {
	b := s.events.Load()
	if b == nil {
		return ErrNotSupported
	}
	n, ok := b.e.(SessionNotifier)
	if !ok {
		return ErrNotSupported
	}
	return n.NotifySession(ctx, sessionID, method, params)
}

// NotifyElicitationComplete tells the client of session sessionID that the
// URL-mode elicitation elicitationID has completed
// (notifications/elicitation/complete; 2025-11-25). It may be called from
// anywhere, e.g. the HTTP callback of the out-of-band flow.
func (s *Server) NotifyElicitationComplete(ctx context.Context, sessionID, elicitationID string) error {
	return s.NotifySession(ctx, sessionID, protocol.NotificationElicitationComplete,
		&protocol.ElicitationCompleteParams{ElicitationID: elicitationID})
}

// URLElicitationRequired returns the -32042 error a handler returns when the
// user must complete URL-mode elicitations first (2025-11-25). Each
// elicitation gets mode "url"; it must carry message, url and
// elicitationId.
func URLElicitationRequired(elicitations ...*protocol.ElicitParams) *protocol.Error {
	for _, e := range elicitations {
		e.Mode = protocol.ElicitModeURL
	}
	return protocol.NewError(protocol.CodeURLElicitationRequired, "URL elicitation required").
		WithData(&protocol.URLElicitationRequiredData{Elicitations: elicitations})
}

// HandleNotification handles a client notification that concerns the
// server author (legacy notifications/roots/list_changed). req carries the
// session; its [RequestInit.Out] reaches the session's GET stream.
func (s *Server) HandleNotification(ctx context.Context, req *Request) {
	req.srv = s
	if req.in.ClientCapabilities == nil {
		req.in.ClientCapabilities = &protocol.ClientCapabilities{}
	}
	switch req.in.Method {
	case protocol.NotificationRootsListChanged:
		if h := s.opts.RootsListChanged; h != nil {
			defer func() {
				if p := recover(); p != nil {
					s.logger().ErrorContext(ctx, "mcp: RootsListChanged panic", "panic", p)
				}
			}()
			h(ctx, req)
		}
	}
}
