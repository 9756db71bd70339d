package frontend

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
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
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	g, err := f.reg.OpenSession(ctx, sess.ID)
	cancel()
	if err != nil {
		f.log.Warn("frontend: opening a GET stream", "err", err)
		httpError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "could not open the stream; retry")
		return
	}

	defer g.Close()
	defer f.metrics.streamOpened("get")()
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
		case fr := <-g.C():
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
		case <-g.Done():
			if g.Reason() == listen.ReasonSlow {
				f.log.Warn("frontend: closing a slow GET stream")
				f.metrics.droppedStream("get")
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

// resumePost resumes a POST response stream on any frontend. It
// subscribes first (so nothing published during the replay is lost), then
// replays the logged events after `after`, then relays new events until
// the response, which ends the stream. New events come from the live
// subject of the frontend that holds the stream. When that frontend is gone
// (it does not answer on its control subject, checked now and then), this
// frontend takes the stream over: it subscribes to the worker's frames for
// the stream and logs and writes them itself.
func (f *Frontend) resumePost(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, stream string, after uint64) {
	fe, busID, _ := splitPostStream(stream)
	ch := make(chan *nats.Msg, f.opts.StreamBuffer)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	subscribe := func(subject string) error {
		s, err := f.nc.ChanSubscribe(subject, ch)
		if err != nil {
			return err
		}
		subs = append(subs, s)
		return f.nc.FlushTimeout(storeTimeout)
	}
	framesSubject := f.subj.Stream(fe, busID)
	takeover := false
	takeOver := func() error {
		takeover = true
		return subscribe(framesSubject)
	}
	err := subscribe(f.subj.Live(sess.ID, stream))
	if err == nil && fe != f.id && !f.frontendAlive(r.Context(), fe) {
		err = takeOver()
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
	defer f.metrics.streamOpened("resume")()
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
	// While another frontend holds the stream, check now and then that it
	// is still there; in a takeover, the worker's heartbeats tell that it
	// still runs the request, and without them the request is lost.
	var probe <-chan time.Time
	if fe != f.id && !takeover {
		t := time.NewTicker(f.opts.WorkerTimeout / 4)
		defer t.Stop()
		probe = t.C
	}
	var lost <-chan time.Time
	if takeover {
		lost = time.After(f.opts.WorkerTimeout)
	}
	for {
		select {
		case m := <-ch:
			var data []byte
			if m.Subject == framesSubject {
				status := ""
				if m.Header != nil {
					status = m.Header.Get("Status")
				}
				kind, payload := bus.ParseFrame(m.Data, status)
				lost = time.After(f.opts.WorkerTimeout)
				switch kind {
				case bus.FrameNotification, bus.FrameServerRequest, bus.FrameResponse:
					data = payload
				case bus.FrameEnd:
					return
				default:
					continue
				}
				idx, ok := f.logEvent(sess.ID, stream, data)
				id := ""
				if ok {
					id, last = formatEventID(stream, idx), idx
				}
				if err := sse.event(id, data); err != nil {
					return
				}
			} else {
				idx, d, end, ok := bus.ParseLiveEvent(m.Data)
				if !ok || (!end && idx <= last) {
					continue
				}
				if end {
					return
				}
				data = d
				if err := sse.event(formatEventID(stream, idx), data); err != nil {
					return
				}
				last = idx
			}
			if isResponse(data) {
				return
			}
		case <-probe:
			if !f.frontendAlive(r.Context(), fe) {
				probe = nil
				if err := takeOver(); err != nil {
					return
				}
				lost = time.After(f.opts.WorkerTimeout)
			}
		case <-lost:
			e := protocol.NewError(protocol.CodeInternalError, "the request was lost with the frontend and worker that held it; retry")
			_ = sse.event("", protocol.AppendErrorResponse(nil, protocol.ID{}, e))
			return
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

// frontendAlive asks frontend fe whether it is still there; only a "no
// responders" answer (its connection and subscriptions are gone) counts as
// dead.
func (f *Frontend) frontendAlive(ctx context.Context, fe string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := f.nc.RequestWithContext(ctx, f.subj.FrontendControl(fe), nil)
	return !errors.Is(err, nats.ErrNoResponders)
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
	_ = f.nc.Publish(f.subj.SessionControl(sid), []byte(listen.CtlDeleted))
	f.metrics.session("deleted")
	w.WriteHeader(http.StatusNoContent)
}
