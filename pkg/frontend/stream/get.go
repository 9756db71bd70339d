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
// and resources/updated for subscribed URIs, each logged for resumption;
// keepalive comments every Options.KeepAlive. A resumed GET stream first
// replays the events after `after`; a stream of another session, or whose
// events are gone, is not resumed: a fresh stream (new priming id) starts.
func (s *Streams) getStream(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, streamID string, after uint64) {
	var replay []sessionstore.Event
	if streamID != "" {
		evs, ok, err := s.ownedEvents(r.Context(), sess.ID, streamID, after)
		if err != nil && !s.storeErr(w, err) {
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
		streamID = NewStreamID('g')
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	g, err := s.opts.Registry.OpenSession(ctx, sess.ID)
	cancel()
	if errors.Is(err, listen.ErrBusLost) {
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrBusUnavailable())
		return
	}
	if err != nil {
		s.log.Warn("frontend: opening a GET stream", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrStreamNotOpened())
		return
	}
	defer g.Close()
	defer s.opts.Metrics.StreamOpened("get")()
	// A session has one GET stream: a newer one replaces older ones,
	// wherever they are held, so each message goes to exactly one stream.
	// The tag names this opening, not the stream: a resumption of the
	// same stream (same stream id, here or on another frontend) replaces
	// the one still held too.
	tag := NewStreamID('t')
	g.SetTag(tag)
	_ = s.nc.Publish(s.subj.SessionControl(sess.ID), []byte(listen.CtlGetOpened+tag))
	sse := StartSSE(w, s.opts.WriteTimeout, nil)
	if !s.openGet(sse, sess.ID, streamID, resumed, replay) {
		return
	}
	s.relayGet(r, sse, g, sess.ID, streamID)
}

// openGet writes the start of a GET stream: the priming event of a new
// one (its start marker logged), or the replay of a resumed one. It
// reports false when a write failed.
func (s *Streams) openGet(sse *SSE, session, streamID string, resumed bool, replay []sessionstore.Event) bool {
	if !resumed {
		if idx, ok := s.logEvent(session, streamID, []byte(markStart)); ok {
			if err := sse.Priming(FormatEventID(streamID, idx), s.opts.SSERetry); err != nil {
				return false
			}
		}
	}
	for _, ev := range replay {
		if isMarker(ev.Data) {
			continue
		}
		if err := sse.Event(FormatEventID(streamID, ev.Index), ev.Data); err != nil {
			return false
		}
	}
	return true
}

// relayGet writes the session's messages, each logged, and keepalives,
// until the stream ends (superseded, slow, session deleted, the bus lost),
// the server stops or the client goes.
func (s *Streams) relayGet(r *http.Request, sse *SSE, g *listen.SessionStream, session, streamID string) {
	// slowGet counts a stream whose write failed for want of a reader.
	slowGet := func(err error) {
		if SlowWrite(err) || g.Reason() == listen.ReasonSlow {
			s.log.Warn("frontend: closing a slow GET stream")
			s.opts.Metrics.DroppedStream("get")
		}
	}
	onEvent := func(fr []byte) bool {
		_, payload := bus.ParseFrame(fr, "")
		id := ""
		if idx, ok := s.logEvent(session, streamID, payload); ok {
			id = FormatEventID(streamID, idx)
		}
		if err := sse.Event(id, payload); err != nil {
			slowGet(err)
			return false
		}
		return true
	}
	l := &Loop[[]byte]{
		Events:    g.C(),
		OnEvent:   onEvent,
		KeepAlive: s.opts.KeepAlive,
		OnKeepAlive: func() bool {
			if err := sse.Comment("keepalive"); err != nil {
				slowGet(err)
				return false
			}
			return true
		},
		Ended: g.Done(),
		OnEnded: func() {
			switch g.Reason() {
			case listen.ReasonSlow:
				s.log.Warn("frontend: closing a slow GET stream")
				s.opts.Metrics.DroppedStream("get")
			case listen.ReasonBusLost:
				// What arrived before the loss is written (and logged)
				// first; then the response ends, and the client resumes
				// after its last event id on another frontend.
				drainQueued(g.C(), onEvent)
			}
		},
		Stop: s.opts.Shutdown,
		Gone: r.Context().Done(),
	}
	l.Run()
}

// ownedEvents returns the events after `after` of a stream of this
// session. ok is false when the session has no such stream (its log has
// no start marker: another session's stream, a forged id) or its events
// are gone.
func (s *Streams) ownedEvents(ctx context.Context, session, stream string, after uint64) (evs []sessionstore.Event, ok bool, err error) {
	start, all, err := s.streamLog(ctx, session, stream)
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
func (s *Streams) storeErr(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, protocol.ID{}, protocol.ErrSessionNotFound())
	default:
		s.log.Error("frontend: reading a stream log", "err", err)
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
