package frontend

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// serveGet opens a legacy session's GET stream, or resumes a stream (GET
// or POST) after the event named by Last-Event-ID.
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
	streamID, after := "", uint64(0)
	if last := r.Header.Get(hdrLastEventID); last != "" {
		s, idx, ok := parseEventID(last)
		if !ok {
			httpError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: Last-Event-ID is not an event id of this server")
			return
		}
		if s[0] == 'p' {
			f.resumePost(w, r, sess, s, idx)
			return
		}
		streamID, after = s, idx
	}
	f.getStream(w, r, sess, streamID, after)
}

// getStream serves the session's GET stream: session-scoped notifications
// and server-to-client requests not tied to a POST, list_changed events,
// and resources/updated for subscribed URIs, each logged for resumption;
// keepalive comments every Options.KeepAlive. A resumed GET stream first
// replays the events after `after`.
func (f *Frontend) getStream(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, streamID string, after uint64) {
	resumed := streamID != ""
	if !resumed {
		streamID = newStreamID('g')
	}
	var replay []sessionstore.Event
	if resumed {
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		evs, err := f.opts.Store.EventsAfter(ctx, sess.ID, streamID, after)
		cancel()
		if err != nil && !f.storeErr(w, err) {
			return
		}
		replay = evs
	}
	g := &getStream{id: streamID, session: sess.ID, ch: make(chan []byte, f.opts.StreamBuffer), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	err := f.hub.attach(ctx, g)
	cancel()
	defer f.hub.detach(g)
	if err != nil {
		f.log.Warn("frontend: opening a GET stream", "err", err)
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "could not open the stream; retry")
		return
	}

	sse := startSSE(w, f.opts.WriteTimeout, nil)
	if !resumed {
		if err := sse.priming(formatEventID(streamID, 0), f.opts.SSERetry); err != nil {
			return
		}
	}
	for _, ev := range replay {
		if err := sse.event(formatEventID(streamID, ev.Index), ev.Data); err != nil {
			return
		}
	}
	var keepalive <-chan time.Time
	if f.opts.KeepAlive > 0 {
		t := time.NewTicker(f.opts.KeepAlive)
		defer t.Stop()
		keepalive = t.C
	}
	for {
		select {
		case fr := <-g.ch:
			_, payload := bus.ParseFrame(fr, "")
			id := ""
			if idx, ok := f.logEvent(sess.ID, streamID, payload); ok {
				id = formatEventID(streamID, idx)
			}
			if err := sse.event(id, payload); err != nil {
				return
			}
		case <-keepalive:
			if err := sse.comment("keepalive"); err != nil {
				return
			}
		case <-g.done:
			if g.reason == "slow reader" {
				f.log.Warn("frontend: closing a slow GET stream")
			}
			return
		case <-f.shutdown:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// storeErr writes the answer to a store error and reports whether the
// caller may go on (ErrEventsPurged is not fatal: the replay is empty).
func (f *Frontend) storeErr(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, sessionstore.ErrEventsPurged):
		return true
	case errors.Is(err, sessionstore.ErrNotFound):
		httpError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
	default:
		f.log.Error("frontend: reading a stream log", "err", err)
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "session store unavailable; retry")
	}
	return false
}

// resumePost resumes a POST response stream on any frontend: it subscribes
// to the stream's live subject first (so nothing published during the
// replay is lost), replays the logged events after `after`, then relays
// live events until the response, which ends the stream.
func (f *Frontend) resumePost(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, stream string, after uint64) {
	liveCh := make(chan *nats.Msg, f.opts.StreamBuffer)
	sub, err := f.nc.ChanSubscribe(f.subj.Live(sess.ID, stream), liveCh)
	if err == nil {
		defer sub.Unsubscribe()
		err = f.nc.FlushTimeout(storeTimeout)
	}
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "message bus unavailable; retry")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	evs, err := f.opts.Store.EventsAfter(ctx, sess.ID, stream, after)
	cancel()
	if errors.Is(err, sessionstore.ErrEventsPurged) {
		httpError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "the stream's events are no longer available; retry the request")
		return
	}
	if err != nil && !f.storeErr(w, err) {
		return
	}
	sse := startSSE(w, f.opts.WriteTimeout, nil)
	last := after
	for _, ev := range evs {
		if err := sse.event(formatEventID(stream, ev.Index), ev.Data); err != nil {
			return
		}
		last = ev.Index
		if isResponse(ev.Data) {
			return
		}
	}
	var keepalive <-chan time.Time
	if f.opts.KeepAlive > 0 {
		t := time.NewTicker(f.opts.KeepAlive)
		defer t.Stop()
		keepalive = t.C
	}
	deadline := time.NewTimer(f.opts.RequestTimeout)
	defer deadline.Stop()
	for {
		select {
		case m := <-liveCh:
			idx, data, end, ok := bus.ParseLiveEvent(m.Data)
			if !ok || (!end && idx <= last) {
				continue
			}
			if end {
				return
			}
			if err := sse.event(formatEventID(stream, idx), data); err != nil {
				return
			}
			last = idx
			if isResponse(data) {
				return
			}
		case <-keepalive:
			if err := sse.comment("keepalive"); err != nil {
				return
			}
		case <-deadline.C:
			return
		case <-f.shutdown:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// isResponse reports whether a logged message is a JSON-RPC response.
func isResponse(data []byte) bool {
	m, err := protocol.Decode(data, 0)
	return err == nil && m.Kind() == protocol.KindResponse
}

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
