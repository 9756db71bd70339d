package frontend

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// serveGet opens the legacy session's GET stream: session-scoped
// notifications and server-to-client requests not tied to a POST, plus
// list_changed events; keepalive comments every Options.KeepAlive.
func (f *Frontend) serveGet(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, protocol.CodeInvalidRequest, "Not Acceptable: the Accept header must list text/event-stream")
		return
	}
	if r.Header.Get(hdrSessionID) == "" {
		// No session: a modern client, or a legacy one that has not
		// initialized. There is no standalone stream without a session.
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 clients use subscriptions/listen)")
		return
	}
	if v := r.Header.Get(hdrProtocolVersion); v != "" && !protocol.IsLegacyVersion(v) {
		httpError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: unsupported MCP-Protocol-Version")
		return
	}
	sess, ok := f.loadSession(w, r, protocol.ID{})
	if !ok {
		return
	}

	// Session messages reach exactly one GET stream of the session (queue
	// group); lifecycle and list events reach all of them. nats.go calls
	// each subscription's handler on its own goroutine, hence mu.
	ch := make(chan *nats.Msg, f.opts.StreamBuffer)
	overflow := make(chan struct{})
	var (
		mu         sync.Mutex
		overflowed bool
	)
	handler := func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if overflowed {
			return
		}
		select {
		case ch <- m:
		default:
			overflowed = true
			close(overflow)
		}
	}
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	add := func(s *nats.Subscription, err error) bool {
		if err != nil {
			f.log.Warn("frontend: subscribing for a GET stream", "err", err)
			httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "message bus unavailable; retry")
			return false
		}
		subs = append(subs, s)
		return true
	}
	if !add(f.nc.QueueSubscribe(f.subj.Session(sess.ID), bus.SessionQueue, handler)) ||
		!add(f.nc.Subscribe(f.subj.SessionControl(sess.ID), handler)) ||
		!add(f.nc.Subscribe(f.subj.AllListChanged(), handler)) {
		return
	}
	if err := f.nc.FlushTimeout(5 * time.Second); err != nil {
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "message bus unavailable; retry")
		return
	}

	sse := startSSE(w, f.opts.WriteTimeout, nil)
	var keepalive <-chan time.Time
	if f.opts.KeepAlive > 0 {
		t := time.NewTicker(f.opts.KeepAlive)
		defer t.Stop()
		keepalive = t.C
	}
	ctlSubject := f.subj.SessionControl(sess.ID)
	for {
		select {
		case m := <-ch:
			if m.Subject == ctlSubject {
				if string(m.Data) == ctlDeleted {
					return
				}
				continue
			}
			if err := sse.event("", m.Data); err != nil {
				return
			}
		case <-keepalive:
			if err := sse.comment("keepalive"); err != nil {
				return
			}
		case <-overflow:
			f.log.Warn("frontend: closing a slow GET stream")
			return
		case <-f.shutdown:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// ctlDeleted is the SessionControl message announcing the session's end.
const ctlDeleted = "deleted"

// serveDelete ends a legacy session everywhere: the record, its
// subscriptions and logs go, and every frontend closes its streams.
func (f *Frontend) serveDelete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: DELETE needs an Mcp-Session-Id")
		return
	}
	if !sessionstore.ValidID(sid) {
		httpError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	err := f.opts.Store.Delete(ctx, sid)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
		return
	case err != nil:
		f.log.Error("frontend: deleting a session", "err", err)
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "session store unavailable; retry")
		return
	}
	_ = f.nc.Publish(f.subj.SessionControl(sid), []byte(ctlDeleted))
	w.WriteHeader(http.StatusNoContent)
}
