package frontend

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
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
		httpx.HTTPError(w, http.StatusNotAcceptable, protocol.CodeInvalidRequest, "Not Acceptable: the Accept header must list text/event-stream")
		return
	}
	if r.Header.Get(hdrSessionID) == "" {
		// No session: a modern client, or a legacy one that has not
		// initialized. There is no standalone stream without a session.
		w.Header().Set("Allow", "POST")
		httpx.HTTPError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 clients use subscriptions/listen)")
		return
	}
	if !f.sessionVersionOK(w, r, protocol.ID{}) {
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
			httpx.HTTPError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: Last-Event-ID is not an event id of this server")
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
// replays the events after `after`; a stream of another session, or whose
// events are gone, is not resumed: a fresh stream (new priming id) starts.
func (f *Frontend) getStream(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, streamID string, after uint64) {
	var replay []sessionstore.Event
	if streamID != "" {
		evs, ok, err := f.ownedEvents(r.Context(), sess.ID, streamID, after)
		if err != nil && !f.storeErr(w, err) {
			return
		}
		if ok {
			replay = evs
		} else {
			streamID = ""
		}
	}
	resumed := streamID != ""
	if !resumed {
		streamID = newStreamID('g')
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	g, err := f.reg.OpenSession(ctx, sess.ID)
	cancel()
	if err != nil {
		f.log.Warn("frontend: opening a GET stream", "err", err)
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "could not open the stream; retry")
		return
	}
	defer g.Close()
	defer f.metrics.StreamOpened("get")()
	// A session has one GET stream: a newer one replaces older ones,
	// wherever they are held, so each message goes to exactly one stream.
	g.SetTag(streamID)
	_ = f.nc.Publish(f.subj.SessionControl(sess.ID), []byte(listen.CtlGetOpened+streamID))
	sse := startSSE(w, f.opts.WriteTimeout, nil)
	if !resumed {
		if idx, ok := f.logEvent(sess.ID, streamID, []byte(markStart)); ok {
			if err := sse.priming(formatEventID(streamID, idx), f.opts.SSERetry); err != nil {
				return
			}
		}
	}
	for _, ev := range replay {
		if isMarker(ev.Data) {
			continue
		}
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
	// slowGet counts a stream whose write failed for want of a reader.
	slowGet := func(err error) {
		if slowWrite(err) || g.Reason() == listen.ReasonSlow {
			f.log.Warn("frontend: closing a slow GET stream")
			f.metrics.DroppedStream("get")
		}
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
				slowGet(err)
				return
			}
		case <-keepalive:
			if err := sse.comment("keepalive"); err != nil {
				slowGet(err)
				return
			}
		case <-g.Done():
			if g.Reason() == listen.ReasonSlow {
				f.log.Warn("frontend: closing a slow GET stream")
				f.metrics.DroppedStream("get")
			}
			return
		case <-f.shutdown:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// ownedEvents returns the events after `after` of a stream of this
// session, and the whole log's start marker. ok is false when the session
// has no such stream (its log has no start marker: another session's
// stream, a forged id) or its events are gone.
func (f *Frontend) ownedEvents(ctx context.Context, session, stream string, after uint64) (evs []sessionstore.Event, ok bool, err error) {
	start, all, err := f.streamLog(ctx, session, stream)
	if err != nil || start == nil {
		return nil, false, err
	}
	for i, ev := range all {
		if ev.Index > after {
			return all[i:], true, nil
		}
	}
	return nil, true, nil
}

// streamLog reads a stream's whole log; start is its start marker (nil when
// the stream is not this session's, or its beginning was trimmed).
func (f *Frontend) streamLog(ctx context.Context, session, stream string) (start []byte, all []sessionstore.Event, err error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	all, err = f.opts.Store.EventsAfter(ctx, session, stream, 0)
	switch {
	case errors.Is(err, sessionstore.ErrEventsPurged):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case len(all) == 0 || !bytes.HasPrefix(all[0].Data, []byte(markStart)):
		return nil, nil, nil
	}
	return all[0].Data, all, nil
}

// storeErr writes the answer to a store error and reports whether the
// caller may go on (never: kept for symmetry with the callers' flow).
func (f *Frontend) storeErr(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.HTTPError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
	default:
		f.log.Error("frontend: reading a stream log", "err", err)
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "session store unavailable; retry")
	}
	return false
}

// resumePost resumes a POST response stream of this session on any
// frontend. It subscribes first (so nothing published during the replay is
// lost), then replays the logged events after `after`, then relays new
// events until the response (or the end marker), which ends the stream.
// New events come from the live subject of the frontend that holds the
// stream; a gap in them, or an end without the response, is filled from the
// log. When no frontend holds the stream any more (the one named in its id
// does not answer, or it is this one and the exchange is gone), this
// frontend takes the stream over: it subscribes to the worker's frames for
// the stream and logs and writes them itself.
func (f *Frontend) resumePost(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, stream string, after uint64) {
	// A resumed stream waits like the request it resumes: it holds the
	// session's in-flight slots.
	held, ok := f.admit(w, r, protocol.ID{}, sess.ID)
	if !ok {
		return
	}
	defer held.release()
	fe, busID, _ := splitPostStream(stream)
	ch := make(chan *nats.Msg, 4*f.opts.StreamBuffer)
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
	orphaned := func() bool {
		if fe == f.id {
			return !f.hasStream(busID)
		}
		return !f.frontendAlive(r.Context(), fe)
	}
	err := subscribe(f.subj.Live(sess.ID, stream))
	if err == nil && orphaned() {
		err = takeOver()
	}
	if err != nil {
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "message bus unavailable; retry")
		return
	}
	start, all, err := f.streamLog(r.Context(), sess.ID, stream)
	if err != nil {
		f.storeErr(w, err)
		return
	}
	if start == nil || after == 0 {
		httpx.HTTPError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "no such stream in this session, or its events are gone; retry the request")
		return
	}
	var reqID protocol.ID
	_ = reqID.UnmarshalJSON(start[len(markStart):])
	defer f.metrics.StreamOpened("resume")()
	sse := startSSE(w, f.opts.WriteTimeout, nil)
	last := after
	// replay writes the logged events after last; it reports whether the
	// stream is over (response or end marker).
	replay := func(evs []sessionstore.Event) (over bool, err error) {
		for _, ev := range evs {
			if ev.Index <= last {
				continue
			}
			last = ev.Index
			if isMarker(ev.Data) {
				if string(ev.Data) == markEnd {
					return true, nil
				}
				continue
			}
			if err := sse.event(formatEventID(stream, ev.Index), ev.Data); err != nil {
				return true, err
			}
			if isResponse(ev.Data) {
				return true, nil
			}
		}
		return false, nil
	}
	refill := func() bool {
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		evs, err := f.opts.Store.EventsAfter(ctx, sess.ID, stream, last)
		cancel()
		if err != nil {
			return true
		}
		over, err := replay(evs)
		return over || err != nil
	}
	if over, _ := replay(all); over {
		return
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
	if !takeover {
		t := time.NewTicker(f.opts.WorkerTimeout / 4)
		defer t.Stop()
		probe = t.C
	}
	lostTimer := time.NewTimer(f.opts.WorkerTimeout)
	defer lostTimer.Stop()
	var lost <-chan time.Time
	if takeover {
		lost = lostTimer.C
	}
	for {
		select {
		case m := <-ch:
			if m.Subject == framesSubject {
				status := ""
				if m.Header != nil {
					status = m.Header.Get("Status")
				}
				kind, payload := bus.ParseFrame(m.Data, status)
				lostTimer.Reset(f.opts.WorkerTimeout)
				switch kind {
				case bus.FrameNotification, bus.FrameServerRequest, bus.FrameResponse:
				case bus.FrameEnd:
					f.logEvent(sess.ID, stream, []byte(markEnd))
					return
				default:
					continue
				}
				idx, ok := f.logEvent(sess.ID, stream, payload)
				id := ""
				if ok {
					id, last = formatEventID(stream, idx), idx
				}
				if err := sse.event(id, payload); err != nil || kind == bus.FrameResponse {
					return
				}
				continue
			}
			idx, data, end, ok := bus.ParseLiveEvent(m.Data)
			switch {
			case !ok:
			case end:
				refill() // anything the live subject dropped is in the log
				return
			case idx <= last:
			case idx > last+1:
				if refill() {
					return
				}
			default:
				if over, err := replay([]sessionstore.Event{{Index: idx, Data: data}}); over || err != nil {
					return
				}
			}
		case <-probe:
			if orphaned() {
				probe = nil
				if err := takeOver(); err != nil {
					return
				}
				if refill() {
					return
				}
				lostTimer.Reset(f.opts.WorkerTimeout)
				lost = lostTimer.C
			}
		case <-lost:
			e := protocol.NewError(protocol.CodeInternalError, "the request was lost with the frontend and worker that held it; retry")
			resp := protocol.AppendErrorResponse(nil, reqID, e)
			if idx, ok := f.logEvent(sess.ID, stream, resp); ok {
				_ = sse.event(formatEventID(stream, idx), resp)
			} else {
				_ = sse.event("", resp)
			}
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

// hasStream reports whether this frontend has the bus stream open.
func (f *Frontend) hasStream(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams[id] != nil
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
		httpx.HTTPError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: DELETE needs an Mcp-Session-Id")
		return
	}
	if !sessionstore.ValidID(sid) {
		httpx.HTTPError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	sess, err := f.opts.Store.Get(ctx, sid)
	if err == nil && sess.Principal != principalOf(r) {
		err = sessionstore.ErrNotFound // another principal's session does not exist for this caller
	}
	if err == nil {
		err = f.opts.Store.Delete(ctx, sid)
	}
	if err == nil {
		f.uncountSession(ctx, sess.Principal, sid, time.Now())
	}
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.HTTPError(w, http.StatusNotFound, codeSessionNotFound, "Session not found")
		return
	case err != nil:
		f.log.Error("frontend: deleting a session", "err", err)
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "session store unavailable; retry")
		return
	}
	_ = f.nc.Publish(f.subj.SessionControl(sid), []byte(listen.CtlDeleted))
	f.metrics.Session("deleted")
	w.WriteHeader(http.StatusNoContent)
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

// slowWrite reports whether a write to a client failed because the client
// did not read in time (the write deadline passed).
func slowWrite(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
