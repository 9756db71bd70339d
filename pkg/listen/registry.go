package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// Options configure a Registry. The zero value is valid but for the
// required fields noted; see [Options.Validate] for what is invalid.
type Options struct {
	// Subjects builds bus subjects.
	// default: the zero bus.Subjects (the default prefix)
	Subjects bus.Subjects
	// Buffer is the number of messages buffered per legacy session
	// stream. Negative is invalid.
	// default: 256
	Buffer int
	// ListenBuffer is the number of messages buffered per listen stream
	// (a stream that falls this far behind ends as a slow reader). Listen
	// streams are many and mostly idle: their buffer is most of what an
	// idle one costs. Negative is invalid.
	// default: 32
	ListenBuffer int
	// MaxListen caps the listen streams open at once on this registry;
	// negative means off: unlimited.
	// default: 1000
	MaxListen int
	// MaxListenPerClient caps one client's listen streams; negative
	// means off too.
	// default: off (no cap)
	MaxListenPerClient int
	// Logger receives the registry's messages.
	// default: slog.Default()
	Logger *slog.Logger
	// Metrics counts what the registry delivers to listen streams (kind
	// "listen") and the messages a stream's full buffer refused (reason
	// "slow_reader"). Its methods are called under the registry's lock
	// and must not block.
	// default: none (nothing counted)
	Metrics Metrics
}

// Metrics receives a registry's delivery counts (the frontend's
// metrics).
type Metrics interface {
	EventsFannedOut(kind string, n int)
	MessageDropped(reason string)
}

// ErrInvalidOptions is wrapped by every error about Options: what
// [Options.Validate] reports and [Registry.Start] returns.
var ErrInvalidOptions = errors.New("listen: invalid options")

// Validate reports what is invalid in o, wrapping ErrInvalidOptions: a
// negative Buffer or ListenBuffer.
func (o *Options) Validate() error {
	var errs []error
	if o.Buffer < 0 {
		errs = append(errs, fmt.Errorf("%w: Buffer %d is negative", ErrInvalidOptions, o.Buffer))
	}
	if o.ListenBuffer < 0 {
		errs = append(errs, fmt.Errorf("%w: ListenBuffer %d is negative", ErrInvalidOptions, o.ListenBuffer))
	}
	return errors.Join(errs...)
}

// Errors of Open*.
var (
	// ErrTooMany means the listen stream cap is reached (HTTP 503).
	ErrTooMany = errors.New("listen: too many listen streams")
	// ErrTooManyForClient means the client reached MaxListenPerClient.
	ErrTooManyForClient = errors.New("listen: too many listen streams for this client")
	// ErrDuplicate means the client already has a listen stream with this
	// subscription id: the new stream is refused, the old one goes on.
	ErrDuplicate = errors.New("listen: duplicate subscription id")
	// ErrClosed means the registry is shut down.
	ErrClosed = errors.New("listen: registry closed")
	// ErrBusLost means the bus connection is down (see
	// [Registry.BusLost]): no stream can be fed, so none is opened (HTTP
	// 503; the client retries on another frontend).
	ErrBusLost = errors.New("listen: the message bus connection is lost")
)

// End reasons a stream reports after Done.
const (
	ReasonSlow     = "slow reader"
	ReasonDeleted  = "session deleted"
	ReasonShutdown = "shutdown"
	ReasonClosed   = "closed"
	// ReasonSuperseded: a newer GET stream of the session opened.
	ReasonSuperseded = "superseded"
	// ReasonBusLost: the frontend lost its bus connection (BusLost); a
	// legacy client resumes its GET stream elsewhere with Last-Event-ID, a
	// listen stream gets its final result and its client listens again
	// elsewhere.
	ReasonBusLost = "bus lost"
)

// FrameLive starts an item of SessionStream.C that is a live event of
// the session's GET log.
const FrameLive = 'L'

// Session control messages (on Subjects.SessionControl).
const (
	// CtlDeleted announces that the session ended.
	CtlDeleted = "deleted"
	// CtlGetOpened, followed by a stream tag, announces a new GET stream of
	// the session: the older ones end, so a session has one GET stream and
	// each message reaches exactly one stream.
	CtlGetOpened = "getopened:"
)

// Registry feeds the streams of one frontend. Safe for concurrent use.
type Registry struct {
	nc     bus.Conn
	opts   Options
	log    *slog.Logger
	optErr error // what Options.Validate reported, returned by Start

	mu        sync.Mutex // guards everything below
	closed    bool
	lost      bool // between BusLost and BusBack: nothing is opened
	sessions  map[string]*session
	uris      map[string]*uriEntry
	tasks     map[string]*taskEntry // task id -> listen streams watching it
	listens   map[listenKey]*ListenStream
	perClient map[string]int // open listen streams per client
	listSub   bus.Subscription
}

// uriEntry is the subscription to one URI's resources/updated and the
// listen streams watching it. (Legacy sessions get theirs in their GET
// log: see package bus, session events.)
type uriEntry struct {
	sub     bus.Subscription
	listens map[*ListenStream]struct{}
}

// stream is the delivery end shared by both kinds.
type stream struct {
	ch     chan []byte
	done   chan struct{}
	once   sync.Once
	reason string
	notify atomic.Pointer[func()] // called after a message is queued or the stream ends
}

func newStream(buf int) stream {
	return stream{ch: make(chan []byte, buf), done: make(chan struct{})}
}

// C delivers the messages to write, in order.
func (s *stream) C() <-chan []byte { return s.ch }

// Done is closed when the registry ends the stream (slow reader, session
// deleted, shutdown).
func (s *stream) Done() <-chan struct{} { return s.done }

// Reason says why Done was closed.
func (s *stream) Reason() string {
	select {
	case <-s.done:
		return s.reason
	default:
		return ""
	}
}

func (s *stream) end(reason string) {
	s.once.Do(func() {
		s.reason = reason
		close(s.done)
	})
	s.wake()
}

// SetNotify installs f, called (without blocking, possibly under the
// registry's lock: it must not call back into the registry) each time a
// message is queued on C and when the stream ends, for a transport that
// writes streams without a goroutine per stream. Messages queued before
// SetNotify do not call f: the caller drains C once after installing it.
func (s *stream) SetNotify(f func()) { s.notify.Store(&f) }

func (s *stream) wake() {
	if f := s.notify.Load(); f != nil {
		(*f)()
	}
}

// offer hands msg to the stream without blocking and reports whether it
// took it; a full buffer ends it (dropped: the message was refused for a
// slow reader, not for a stream already ended).
func (s *stream) offer(msg []byte) (ok, dropped bool) {
	select {
	case <-s.done:
		return false, false
	default:
	}
	select {
	case s.ch <- msg:
		s.wake()
		return true, false
	default:
		s.end(ReasonSlow)
		return false, true
	}
}

// offerListen offers msg to listen stream l and counts what became of it;
// the caller holds r.mu.
func (r *Registry) offerListen(l *ListenStream, msg []byte) {
	ok, dropped := l.offer(msg)
	switch m := r.opts.Metrics; {
	case m == nil:
	case ok:
		m.EventsFannedOut("listen", 1)
	case dropped:
		m.MessageDropped("slow_reader")
	}
}

// New returns a registry; call Start before opening streams. Invalid
// options (see [Options.Validate]) are reported by Start.
func New(nc bus.Conn, opts Options) *Registry {
	optErr := opts.Validate()
	if opts.Buffer <= 0 { // negative: invalid, reported by Start
		opts.Buffer = 256
	}
	if opts.ListenBuffer <= 0 { // negative: as Buffer
		opts.ListenBuffer = 32
	}
	if opts.MaxListen == 0 {
		opts.MaxListen = 1000
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Registry{
		nc: nc, opts: opts, log: log, optErr: optErr,
		sessions: map[string]*session{}, uris: map[string]*uriEntry{}, listens: map[listenKey]*ListenStream{},
		tasks: map[string]*taskEntry{}, perClient: map[string]int{},
	}
}

// Start subscribes to list_changed events. Invalid options are an error
// wrapping ErrInvalidOptions, a done ctx is ctx.Err(), and then nothing is
// subscribed.
func (r *Registry) Start(ctx context.Context) error {
	if r.optErr != nil {
		return r.optErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sub, err := r.nc.Subscribe(r.opts.Subjects.AllListChanged(), r.onListChanged)
	if err != nil {
		return fmt.Errorf("listen: subscribing to list_changed: %w", err)
	}
	_ = sub.SetPendingLimits(-1, 64<<20)
	r.mu.Lock()
	r.listSub = sub
	r.mu.Unlock()
	return nil
}

// Shutdown ends every stream with ReasonShutdown (listen streams then send
// their final result) and unsubscribes. Streams cannot be opened after it.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.listSub != nil {
		_ = r.listSub.Unsubscribe()
	}
	for _, s := range r.sessions {
		for _, g := range s.streams {
			g.end(ReasonShutdown)
		}
	}
	for _, l := range r.listens {
		l.end(ReasonShutdown)
	}
}

// ListenCount returns the number of open listen streams.
func (r *Registry) ListenCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.listens)
}

// list_changed kinds and the filter field of each.
var listKinds = map[string]func(f *protocol.SubscriptionFilter) bool{
	"tools":     func(f *protocol.SubscriptionFilter) bool { return f.ToolsListChanged },
	"prompts":   func(f *protocol.SubscriptionFilter) bool { return f.PromptsListChanged },
	"resources": func(f *protocol.SubscriptionFilter) bool { return f.ResourcesListChanged },
}

func (r *Registry) onListChanged(m *nats.Msg) {
	r.ListChanged(bus.StreamID(m.Subject)) // the last token is the kind
}

// ListChanged delivers notifications/<kind>/list_changed ("tools",
// "prompts" or "resources") to this registry's streams: every legacy
// session, and the listen streams whose filter asked for it. The frontend
// calls it when the union of its workers' catalogs changes; list events
// published on the bus (Subjects.ListChanged) arrive the same way.
func (r *Registry) ListChanged(kind string) {
	wants, ok := listKinds[kind]
	if !ok {
		return
	}
	method := "notifications/" + kind + "/list_changed"
	n, _ := protocol.EncodeNotification(method, nil)
	legacy := bus.AppendFrame(nil, bus.FrameNotification, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		s.deliver(legacy)
	}
	for _, l := range r.listens {
		if wants(&l.filter) {
			r.offerListen(l, l.tag(method, ""))
		}
	}
}

// addURI and dropURI keep one NATS subscription per URI listen streams
// watch; the caller holds r.mu.
func (r *Registry) addURI(uri string, l *ListenStream) error {
	e := r.uris[uri]
	if e == nil {
		sub, err := r.nc.Subscribe(r.opts.Subjects.ResourceUpdated(uri), func(*nats.Msg) { r.onResourceUpdated(uri) })
		if err != nil {
			return err
		}
		e = &uriEntry{sub: sub, listens: map[*ListenStream]struct{}{}}
		r.uris[uri] = e
	}
	e.listens[l] = struct{}{}
	return nil
}

func (r *Registry) dropURI(uri string, l *ListenStream) {
	e := r.uris[uri]
	if e == nil {
		return
	}
	delete(e.listens, l)
	if len(e.listens) == 0 {
		_ = e.sub.Unsubscribe()
		delete(r.uris, uri)
	}
}

func (r *Registry) onResourceUpdated(uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.uris[uri]
	if e == nil {
		return
	}
	for l := range e.listens {
		r.offerListen(l, l.tag(protocol.NotificationResourceUpdated, uri))
	}
}

// flush makes sure the subscriptions made so far are registered with the
// server before a stream is handed out.
func (r *Registry) flush() error {
	return r.nc.FlushTimeout(5 * time.Second)
}
