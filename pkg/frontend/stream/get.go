package stream

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// Get serves a GET of session sess (loaded and checked by the caller): a
// new GET stream, or, with lastEventID (the Last-Event-ID header, "" for
// none), the resumption of a GET or POST stream after that event. An id
// that is not one of this server's is refused with 400.
func (s *Streams) Get(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, lastEventID string) {
	streamID, after := "", uint64(0)
	if lastEventID != "" {
		id, idx, ok := ParseEventID(lastEventID)
		if !ok {
			httpx.HTTPError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: Last-Event-ID is not an event id of this server")
			return
		}
		if id[0] == 'p' {
			s.resumePost(w, r, sess, id, idx)
			return
		}
		streamID, after = id, idx
	}
	s.getStream(w, r, sess, streamID, after)
}

// getStream serves the session's GET stream: session-scoped notifications
// and server-to-client requests not tied to a POST, list_changed events,
// and resources/updated for subscribed URIs, each with its index in the
// session's GET log (bus.SessionLog) as its event id; keepalive comments
// every Options.KeepAlive. Those messages are logged by whichever frontend
// takes them (OnSessionEvents), whether or not a stream is open: this
// stream relays what reaches the log, in log order, once. A GET with an
// event id of the session's GET log (streamID is bus.SessionLog) replays
// the events after `after` first; any other (a GET stream id of an older
// version), or one whose events are gone, starts a fresh stream at the
// log's end.
func (s *Streams) getStream(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, streamID string, after uint64) {
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	// Subscribed first: nothing logged from now on is missed.
	g, err := s.opts.Registry.OpenSession(ctx, sess.ID)
	cancel()
	if errors.Is(err, listen.ErrBusLost) {
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrBusUnavailable())
		return
	}
	if err != nil {
		s.log.WarnContext(r.Context(), "frontend: opening a GET stream", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrStreamNotOpened())
		return
	}
	defer g.Close()
	rl := &getRelay{s: s, r: r, g: g, session: sess.ID}
	var replay []sessionstore.Event
	if streamID == bus.SessionLog {
		// Lists that changed while no frontend held the stream: their
		// list_changed is logged now, so the replay has it.
		s.noteLists(r.Context(), sess.ID, true)
		replay, err = s.readLog(r.Context(), sess.ID, after)
		switch {
		case errors.Is(err, sessionstore.ErrEventsPurged):
			streamID = "" // gone: a fresh stream
		case err != nil:
			s.storeErr(r.Context(), w, err)
			return
		default:
			rl.last = after
		}
	}
	resumed := streamID == bus.SessionLog
	if !resumed {
		// The priming event's id is the index of a start marker, so a
		// client that reconnects after it gets everything logged since.
		idx, ok := s.logEvent(sess.ID, bus.SessionLog, []byte(markStart))
		if !ok {
			httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrSessionStoreUnavailable())
			return
		}
		rl.last = idx
		s.noteLists(r.Context(), sess.ID, false) // the lists the client starts with
	}
	defer s.opts.Metrics.StreamOpened("get")()
	// A session has one GET stream: a newer one replaces older ones,
	// wherever they are held, so each message goes to exactly one stream.
	// The tag names this opening, not the stream: a resumption (on any
	// frontend) replaces the stream still held too.
	tag := NewStreamID('t')
	g.SetTag(tag)
	_ = s.nc.Publish(s.subj.SessionControl(sess.ID), []byte(listen.CtlGetOpened+tag))
	rl.sse = StartSSE(w, s.opts.WriteTimeout, nil)
	if !resumed {
		if err := rl.sse.Priming(FormatEventID(bus.SessionLog, rl.last), s.opts.SSERetry); err != nil {
			return
		}
	}
	if !rl.write(replay) {
		return
	}
	rl.run()
}

// readLog reads the session's GET log after `after`.
func (s *Streams) readLog(ctx context.Context, session string, after uint64) ([]sessionstore.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return s.opts.Events.EventsAfter(ctx, session, bus.SessionLog, after)
}

// getRelay writes one GET stream: the session's GET log from last on.
type getRelay struct {
	s       *Streams
	r       *http.Request
	g       *listen.SessionStream
	sse     *SSE
	session string
	last    uint64 // the index of the last event written (or skipped: markers)
}

// write writes the events after last, in order, markers skipped; false
// when a write failed.
func (rl *getRelay) write(evs []sessionstore.Event) bool {
	for _, ev := range evs {
		if ev.Index <= rl.last {
			continue
		}
		rl.last = ev.Index
		if isMarker(ev.Data) {
			continue
		}
		if err := rl.sse.Event(FormatEventID(bus.SessionLog, ev.Index), ev.Data); err != nil {
			rl.slow(err)
			return false
		}
	}
	return true
}

// logged writes an event the log has at idx: at once when it is the next
// one, after what the log has before it when some are missing (they went
// to another frontend's live publish first, or were markers), not at all
// when it was written already. false ends the stream.
func (rl *getRelay) logged(idx uint64, data []byte) bool {
	switch {
	case idx <= rl.last:
		return true
	case idx == rl.last+1:
		return rl.write([]sessionstore.Event{{Index: idx, Data: data}})
	}
	evs, err := rl.s.readLog(rl.r.Context(), rl.session, rl.last)
	if err != nil {
		// Events are gone (or the store is down): the client resumes,
		// and starts afresh if they are gone.
		rl.s.log.WarnContext(rl.r.Context(), "frontend: reading a GET log", "err", err)
		return false
	}
	return rl.write(evs)
}

// onItem handles an item of the session stream (listen.SessionStream.C).
func (rl *getRelay) onItem(item []byte) bool {
	if len(item) == 0 {
		return true
	}
	switch item[0] {
	case listen.FrameLive:
		idx, data, end, ok := bus.ParseLiveEvent(item[1:])
		if !ok || end {
			return true
		}
		return rl.logged(idx, data)
	case byte(bus.FrameNotification):
		// Raised by this frontend (list_changed): logged here.
		payload := item[1:]
		if idx, ok := rl.s.logListChanged(rl.session, payload); ok {
			rl.s.opts.Metrics.EventsFannedOut("session", 1)
			return rl.logged(idx, payload)
		}
		if err := rl.sse.Event("", payload); err != nil {
			rl.slow(err)
			return false
		}
	}
	return true
}

// slow counts a stream whose write failed for want of a reader.
func (rl *getRelay) slow(err error) {
	if SlowWrite(err) || rl.g.Reason() == listen.ReasonSlow {
		rl.s.log.WarnContext(rl.r.Context(), "frontend: closing a slow GET stream")
		rl.s.opts.Metrics.DroppedStream("get")
	}
}

// run relays the session's messages and keepalives until the stream ends
// (superseded, slow, session deleted, the bus lost), the server stops or
// the client goes.
func (rl *getRelay) run() {
	s, g := rl.s, rl.g
	l := &Loop[[]byte]{
		Events:    g.C(),
		OnEvent:   rl.onItem,
		KeepAlive: s.opts.KeepAlive,
		OnKeepAlive: func() bool {
			if err := rl.sse.Comment("keepalive"); err != nil {
				rl.slow(err)
				return false
			}
			return true
		},
		Ended: g.Done(),
		OnEnded: func() {
			switch g.Reason() {
			case listen.ReasonSlow:
				s.log.WarnContext(rl.r.Context(), "frontend: closing a slow GET stream")
				s.opts.Metrics.DroppedStream("get")
			case listen.ReasonBusLost:
				// What arrived before the loss is written first; then the
				// response ends, and the client resumes after its last
				// event id on another frontend.
				drainQueued(g.C(), rl.onItem)
			}
		},
		Stop: s.opts.Shutdown,
		Gone: rl.r.Context().Done(),
	}
	l.Run()
}

// streamLog reads a stream's whole log; start is its start marker (nil when
// the stream is not this session's, or its beginning was trimmed).
func (s *Streams) streamLog(ctx context.Context, session, stream string) (start []byte, all []sessionstore.Event, err error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	all, err = s.opts.Events.EventsAfter(ctx, session, stream, 0)
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
func (s *Streams) storeErr(ctx context.Context, w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, protocol.ID{}, protocol.ErrSessionNotFound())
	default:
		s.log.ErrorContext(ctx, "frontend: reading a stream log", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrSessionStoreUnavailable())
	}
	return false
}

// isResponse reports whether a logged message is a JSON-RPC response.
func isResponse(data []byte) bool {
	m, err := protocol.Decode(data, 0)
	return err == nil && m.Kind() == protocol.KindResponse
}

// drainQueued hands f what c holds now, without waiting, until f fails.
func drainQueued(c <-chan []byte, f func([]byte) bool) {
	for {
		select {
		case m := <-c:
			if !f(m) {
				return
			}
		default:
			return
		}
	}
}
