package frontend

import (
	"context"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// hub tracks the legacy GET streams this frontend holds and feeds them:
// session-scoped messages (queue group: exactly one GET stream of the
// session gets each), list_changed events (every session), and
// resources/updated events (sessions subscribed to the URI; one refcounted
// NATS subscription per URI, so NATS only sends this frontend the URIs its
// clients watch). Subscriptions are loaded from the store when a session's
// first stream opens and reloaded when any frontend changes them.
type hub struct {
	f *Frontend

	mu       sync.Mutex // guards the maps and what they reach
	sessions map[string]*hubSession
	uris     map[string]*hubURI
	listSub  *nats.Subscription
}

type hubSession struct {
	id      string
	streams []*getStream
	next    int // round-robin among streams
	subs    []*nats.Subscription
	uris    map[string]struct{}
}

type hubURI struct {
	sub      *nats.Subscription
	sessions map[string]struct{}
}

// getStream is one open GET stream. The hub sends frames (kind byte +
// JSON-RPC message) on ch without blocking; on overflow or session end it
// closes done. Only the hub sends on ch and closes done.
type getStream struct {
	id      string
	session string
	ch      chan []byte
	done    chan struct{}
	reason  string
	once    sync.Once
}

func (g *getStream) end(reason string) {
	g.once.Do(func() {
		g.reason = reason
		close(g.done)
	})
}

func newHub(f *Frontend) *hub {
	return &hub{f: f, sessions: map[string]*hubSession{}, uris: map[string]*hubURI{}}
}

func (h *hub) start() error {
	sub, err := h.f.nc.Subscribe(h.f.subj.AllListChanged(), func(m *nats.Msg) {
		frame := bus.AppendFrame(nil, bus.FrameNotification, m.Data)
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, s := range h.sessions {
			s.deliver(frame)
		}
	})
	if err != nil {
		return err
	}
	h.listSub = sub
	return nil
}

func (h *hub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listSub != nil {
		_ = h.listSub.Unsubscribe()
	}
	for _, s := range h.sessions {
		for _, g := range s.streams {
			g.end("shutdown")
		}
	}
}

// deliver hands a frame to one stream of the session (round robin).
// Caller holds h.mu.
func (s *hubSession) deliver(frame []byte) {
	for range len(s.streams) {
		g := s.streams[s.next%len(s.streams)]
		s.next++
		select {
		case <-g.done:
			continue
		default:
		}
		select {
		case g.ch <- frame:
		default:
			g.end("slow reader")
		}
		return
	}
}

// attach registers a GET stream; the first stream of a session subscribes
// to the session's subjects and its resource subscriptions.
func (h *hub) attach(ctx context.Context, g *getStream) error {
	h.mu.Lock()
	s := h.sessions[g.session]
	if s != nil {
		s.streams = append(s.streams, g)
		h.mu.Unlock()
		return nil
	}
	s = &hubSession{id: g.session, streams: []*getStream{g}, uris: map[string]struct{}{}}
	h.sessions[g.session] = s
	h.mu.Unlock()

	f := h.f
	q, err := f.nc.QueueSubscribe(f.subj.Session(g.session), bus.SessionQueue, func(m *nats.Msg) {
		kind, payload := bus.ParseFrame(m.Data, "")
		if kind != bus.FrameNotification && kind != bus.FrameServerRequest {
			return
		}
		frame := bus.AppendFrame(nil, kind, payload)
		h.mu.Lock()
		defer h.mu.Unlock()
		if s := h.sessions[g.session]; s != nil {
			s.deliver(frame)
		}
	})
	if err != nil {
		h.detach(g)
		return err
	}
	ctl, err := f.nc.Subscribe(f.subj.SessionControl(g.session), func(m *nats.Msg) { h.control(g.session, m) })
	if err != nil {
		_ = q.Unsubscribe()
		h.detach(g)
		return err
	}
	h.mu.Lock()
	s.subs = append(s.subs, q, ctl)
	h.mu.Unlock()
	if err := h.reload(ctx, g.session); err != nil {
		h.detach(g)
		return err
	}
	return f.nc.FlushTimeout(storeTimeout)
}

// detach unregisters a stream; the session's last stream drops the
// session's subscriptions.
func (h *hub) detach(g *getStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[g.session]
	if s == nil {
		return
	}
	for i, x := range s.streams {
		if x == g {
			s.streams = append(s.streams[:i], s.streams[i+1:]...)
			break
		}
	}
	if len(s.streams) > 0 {
		return
	}
	delete(h.sessions, g.session)
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	for uri := range s.uris {
		h.dropURI(g.session, uri)
	}
}

// control handles a session lifecycle message: deletion ends the streams;
// "subs" reloads the subscriptions and acknowledges.
func (h *hub) control(session string, m *nats.Msg) {
	switch string(m.Data) {
	case ctlDeleted:
		h.mu.Lock()
		if s := h.sessions[session]; s != nil {
			for _, g := range s.streams {
				g.end("session deleted")
			}
		}
		h.mu.Unlock()
	case ctlSubs:
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := h.reload(ctx, session); err != nil {
			h.f.log.Warn("frontend: reloading subscriptions", "err", err)
		}
		_ = h.f.nc.FlushTimeout(storeTimeout)
		if m.Reply != "" {
			_ = m.Respond([]byte("ok"))
		}
	}
}

// reload makes the session's URI subscriptions match the store.
func (h *hub) reload(ctx context.Context, session string) error {
	uris, err := h.f.opts.Store.Subscriptions(ctx, session)
	if err != nil {
		return err
	}
	want := make(map[string]struct{}, len(uris))
	for _, u := range uris {
		want[u] = struct{}{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[session]
	if s == nil {
		return nil
	}
	for u := range s.uris {
		if _, ok := want[u]; !ok {
			delete(s.uris, u)
			h.dropURI(session, u)
		}
	}
	for u := range want {
		if _, ok := s.uris[u]; ok {
			continue
		}
		if err := h.addURI(session, u); err != nil {
			return err
		}
		s.uris[u] = struct{}{}
	}
	return nil
}

// addURI and dropURI keep one NATS subscription per watched URI. Caller
// holds h.mu.
func (h *hub) addURI(session, uri string) error {
	e := h.uris[uri]
	if e == nil {
		sub, err := h.f.nc.Subscribe(h.f.subj.ResourceUpdated(uri), func(m *nats.Msg) { h.resourceUpdated(uri, m.Data) })
		if err != nil {
			return err
		}
		e = &hubURI{sub: sub, sessions: map[string]struct{}{}}
		h.uris[uri] = e
	}
	e.sessions[session] = struct{}{}
	return nil
}

func (h *hub) dropURI(session, uri string) {
	e := h.uris[uri]
	if e == nil {
		return
	}
	delete(e.sessions, session)
	if len(e.sessions) == 0 {
		_ = e.sub.Unsubscribe()
		delete(h.uris, uri)
	}
}

func (h *hub) resourceUpdated(uri string, msg []byte) {
	frame := bus.AppendFrame(nil, bus.FrameNotification, msg)
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.uris[uri]
	if e == nil {
		return
	}
	for sid := range e.sessions {
		if s := h.sessions[sid]; s != nil {
			s.deliver(frame)
		}
	}
}

// Session control messages.
const (
	ctlDeleted = "deleted"
	ctlSubs    = "subs"
)
