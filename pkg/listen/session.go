package listen

import (
	"context"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// session is the registry's view of one legacy session with GET streams on
// this frontend. Guarded by Registry.mu.
type session struct {
	id      string
	streams []*SessionStream
	next    int // round robin among streams
	subs    []bus.Subscription
	// ready is closed once the first stream has made the session's
	// subscriptions; err (set before) says why they could not be made.
	ready chan struct{}
	err   error
}

// SessionStream is one legacy GET stream. C delivers two kinds of items:
// FrameLive followed by a live event of the session's GET log (an index
// and a message already logged, bus.ParseLiveEvent), and
// bus.FrameNotification followed by a notification this frontend raised
// itself (list_changed), which the stream logs.
type SessionStream struct {
	stream
	// Session is the legacy session id.
	Session string
	reg     *Registry
	tag     string // the transport's name for the stream; guarded by reg.mu
	// announced is set when the stream's own CtlGetOpened came back on the
	// control subject; guarded by reg.mu. Control messages arrive in the
	// order the NATS server received them, so an announcement for another
	// tag that arrives after this one was published after it, and
	// supersedes it; one arriving before may be older and does not.
	announced bool
}

// SetTag names the stream for CtlGetOpened: a tag of its own (two
// openings of the same SSE stream, a resumption, have two tags, so the
// newer supersedes the older). The transport then publishes
// CtlGetOpened+tag on the session's control subject; when it comes back,
// the stream is announced, and from then on a CtlGetOpened with another tag
// (a newer stream, on any frontend) ends it with ReasonSuperseded.
func (g *SessionStream) SetTag(tag string) {
	g.reg.mu.Lock()
	g.tag = tag
	g.reg.mu.Unlock()
}

// deliver hands a frame to one live stream of the session (round robin).
func (s *session) deliver(frame []byte) {
	for range len(s.streams) {
		g := s.streams[s.next%len(s.streams)]
		s.next++
		ok, dropped := g.offer(frame)
		if ok {
			return
		}
		if m := g.reg.opts.Metrics; dropped && m != nil {
			m.MessageDropped("slow_reader")
		}
	}
}

// OpenSession registers a GET stream of a legacy session. The first stream
// of a session subscribes to the live subject of the session's GET log
// (Subjects.Live(session, bus.SessionLog)) and to its control subject
// before OpenSession returns. Close the stream when done. It
// fails with ErrClosed after Shutdown and ErrBusLost while the bus is lost
// (see [Registry.BusLost]).
func (r *Registry) OpenSession(ctx context.Context, sessionID string) (*SessionStream, error) {
	g := &SessionStream{stream: newStream(r.opts.Buffer), Session: sessionID, reg: r}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if r.lost || !r.nc.IsConnected() {
		r.mu.Unlock()
		return nil, ErrBusLost
	}
	s := r.sessions[sessionID]
	if s != nil {
		s.streams = append(s.streams, g)
		r.mu.Unlock()
		// The first stream may still be subscribing: wait for it, so that
		// nothing raised after this returns is lost.
		select {
		case <-s.ready:
		case <-ctx.Done():
			g.Close()
			return nil, ctx.Err()
		}
		if s.err != nil {
			g.Close()
			return nil, s.err
		}
		return g.lostCheck()
	}
	s = &session{id: sessionID, streams: []*SessionStream{g}, ready: make(chan struct{})}
	r.sessions[sessionID] = s
	r.mu.Unlock()

	err := r.subscribeSession(ctx, s)
	s.err = err
	close(s.ready)
	if err != nil {
		g.Close()
		return nil, err
	}
	return g.lostCheck()
}

// lostCheck refuses a stream that BusLost ended while it was being opened.
func (g *SessionStream) lostCheck() (*SessionStream, error) {
	if g.Reason() == ReasonBusLost {
		g.Close()
		return nil, ErrBusLost
	}
	return g, nil
}

// subscribeSession makes the subscriptions of a session's first stream.
func (r *Registry) subscribeSession(ctx context.Context, s *session) error {
	sessionID := s.id
	subj := r.opts.Subjects
	q, err := r.nc.Subscribe(subj.Live(sessionID, bus.SessionLog), func(m *nats.Msg) {
		frame := make([]byte, 0, 1+len(m.Data))
		frame = append(append(frame, FrameLive), m.Data...)
		r.mu.Lock()
		defer r.mu.Unlock()
		if s := r.sessions[sessionID]; s != nil {
			s.deliver(frame)
		}
	})
	if err != nil {
		return err
	}
	ctl, err := r.nc.Subscribe(subj.SessionControl(sessionID), func(m *nats.Msg) { r.control(sessionID, m) })
	if err != nil {
		_ = q.Unsubscribe()
		return err
	}
	r.mu.Lock()
	if r.sessions[sessionID] != s {
		// The bus was lost meanwhile (BusLost dropped the session): these
		// subscriptions must not outlive it.
		r.mu.Unlock()
		_ = q.Unsubscribe()
		_ = ctl.Unsubscribe()
		return ErrBusLost
	}
	s.subs = append(s.subs, q, ctl)
	r.mu.Unlock()
	return r.flush()
}

// Close unregisters the stream; the session's last stream drops the
// session's subscriptions. Idempotent.
func (g *SessionStream) Close() {
	r := g.reg
	g.end(ReasonClosed)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[g.Session]
	if s == nil {
		return
	}
	found := false
	for i, x := range s.streams {
		if x == g {
			s.streams = append(s.streams[:i], s.streams[i+1:]...)
			found = true
			break
		}
	}
	if !found {
		return // dropped already (BusLost), or a later session of the same id
	}
	if len(s.streams) > 0 {
		return
	}
	r.dropSession(s)
}

// dropSession forgets session s and drops its bus subscriptions; the
// caller holds r.mu.
func (r *Registry) dropSession(s *session) {
	if r.sessions[s.id] == s {
		delete(r.sessions, s.id)
	}
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
}

// control handles a session lifecycle message: deletion ends the
// streams, a newer GET stream supersedes the older ones.
func (r *Registry) control(sessionID string, m *nats.Msg) {
	if tag, ok := strings.CutPrefix(string(m.Data), CtlGetOpened); ok {
		r.mu.Lock()
		if s := r.sessions[sessionID]; s != nil {
			for _, g := range s.streams {
				switch {
				case g.tag == tag:
					g.announced = true
				case g.announced:
					g.end(ReasonSuperseded)
				}
			}
		}
		r.mu.Unlock()
		return
	}
	if string(m.Data) == CtlDeleted {
		r.mu.Lock()
		if s := r.sessions[sessionID]; s != nil {
			for _, g := range s.streams {
				g.end(ReasonDeleted)
			}
		}
		r.mu.Unlock()
	}
}
