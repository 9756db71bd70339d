// Package stream serves a frontend's client streams: the exchange of a
// forwarded request with its worker (a plain JSON answer or an SSE
// response stream, attached to the client or detached and logged), the
// legacy GET stream of a session, and the resumption of either by
// Last-Event-ID, on any frontend. It owns the SSE writer, the event ids
// and the one writer loop ([Loop]) every stream kind runs. It knows
// nothing of HTTP routing, sessions' lifecycle or authentication: the
// frontend checks a request and hands it over.
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// ErrInvalidOptions wraps the validation errors of New.
var ErrInvalidOptions = errors.New("stream: invalid options")

// storeTimeout bounds one session-store call made for a stream.
const storeTimeout = 5 * time.Second

// Options configure Streams.
type Options struct {
	// ID is the frontend's bus id (at most MaxFrontendIDLen bytes): POST
	// stream ids name it, and the worker's frames for its exchanges are
	// published to it.
	// default: none (required)
	ID string
	// Conn is the frontend's NATS connection.
	// default: none (required)
	Conn bus.Conn
	// Subjects builds bus subjects.
	// default: the zero value ("mcp")
	Subjects bus.Subjects
	// Events logs legacy stream events, for resumption.
	// default: none (required)
	Events sessionstore.EventLog
	// Subscribers finds the legacy sessions subscribed to a resource, for
	// the session events this frontend logs (OnSessionEvents).
	// default: none (required)
	Subscribers SubscriberIndex
	// Registry opens legacy GET streams.
	// default: none (required)
	Registry *listen.Registry
	// ListDigest gives the digest of the list of a kind ("tools",
	// "prompts", "resources") clients are offered now ("" when unknown):
	// a GET log remembers which lists its client was told about, so a
	// stream resumed after a change that no frontend delivered gets its
	// list_changed (see listchanged.go).
	// default: none (list_changed is logged only by the holder)
	ListDigest func(kind string) string
	// RequestFormat gives the request header format to publish requests in
	// (bus.EncodeRequestAs): the newest every live worker reads
	// (fleet.View.RequestFormat), so workers of an earlier version still
	// read them during a rolling upgrade.
	// default: bus.RequestFormat
	RequestFormat func() int
	// Logger receives warnings and errors.
	// default: slog.Default()
	Logger *slog.Logger
	// Metrics receives stream metrics.
	// default: none (nothing recorded)
	Metrics *metrics.Metrics
	// RequestTimeout bounds a request from publish to response, and a
	// resumed stream. Negative is an error.
	// default: 10 min
	RequestTimeout time.Duration
	// WorkerTimeout is how long an exchange may go without any frame from
	// its worker before the worker is presumed lost. Negative is an error.
	// default: 4 s
	WorkerTimeout time.Duration
	// KeepAlive is the interval of SSE comments on GET and resumed
	// streams; negative: off.
	// default: 30 s
	KeepAlive time.Duration
	// WriteTimeout bounds each write to a client stream. Negative is an
	// error.
	// default: 10 s
	WriteTimeout time.Duration
	// SSERetry is the reconnection delay announced in the priming event of
	// legacy streams; negative: omitted.
	// default: 1 s
	SSERetry time.Duration
	// StreamBuffer is the number of frames buffered per exchange (and
	// events per attached client); a stream whose reader falls further
	// behind is closed. Negative is an error.
	// default: 256
	StreamBuffer int
	// Shutdown, when closed, ends GET and resumed streams.
	// default: none (never)
	Shutdown <-chan struct{}
	// Active counts the detached exchanges still running; the owner waits
	// for it on shutdown.
	// default: none (not counted)
	Active *sync.WaitGroup
	// Admit takes the in-flight slots of a request (and a resumed stream)
	// of session ("" for none): it returns their release, or writes the
	// refusal (429) and returns false.
	// default: none (no limits)
	Admit func(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (release func(), ok bool)
	// EffectError answers, while the answer is still plain JSON, the error
	// of a Spec's Effect; it returns false to let the stream answer 503.
	// default: none (always 503)
	EffectError func(w http.ResponseWriter, id protocol.ID, err error) bool
	// Tracer makes the PRODUCER span of each request published to the
	// workers, a child of its exchange's span (httpx.Record.Span); the
	// envelope carries the span's context.
	// default: none (no span: the envelope carries the exchange's span
	// context, the caller's when tracing is off)
	Tracer trace.Tracer
}

// Streams serves the client streams of one frontend. Safe for concurrent
// use.
type Streams struct {
	opts Options
	log  *slog.Logger
	nc   bus.Conn
	subj bus.Subjects
	id   string
	// system is nc's messaging.system in the PRODUCER spans (bus.SystemOf).
	system string

	mu   sync.Mutex
	open map[string]*inbox // bus stream id -> open exchange
	lost chan struct{}     // closed by BusLost, replaced by BusBack
}

// BusLost ends every exchange and resumption this frontend runs, because
// its NATS connection is lost and it can no longer feed them. A legacy
// stream that started ends without an end marker or an error in its log:
// its client resumes it elsewhere with Last-Event-ID, where the worker's
// later messages arrive through the append subject. A request whose answer
// had not started gets a 502 (it may still run). Idempotent until BusBack.
func (s *Streams) BusLost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.lost:
	default:
		close(s.lost)
	}
}

// BusBack lets new exchanges run after a BusLost.
func (s *Streams) BusBack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.lost:
		s.lost = make(chan struct{})
	default:
	}
}

// busLost is the channel the current exchanges watch (closed: lost).
func (s *Streams) busLost() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// New validates opts and returns the streams of a frontend.
func New(opts Options) (*Streams, error) {
	switch {
	case opts.ID == "" || len(opts.ID) > MaxFrontendIDLen:
		return nil, fmt.Errorf("%w: the id must be 1 to %d bytes long", ErrInvalidOptions, MaxFrontendIDLen)
	case opts.Conn == nil:
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidOptions)
	case opts.Events == nil:
		return nil, fmt.Errorf("%w: an event log is required", ErrInvalidOptions)
	case opts.Subscribers == nil:
		return nil, fmt.Errorf("%w: a subscriber index is required", ErrInvalidOptions)
	case opts.Registry == nil:
		return nil, fmt.Errorf("%w: a listen registry is required", ErrInvalidOptions)
	case opts.RequestTimeout < 0 || opts.WorkerTimeout < 0 || opts.WriteTimeout < 0 || opts.StreamBuffer < 0:
		return nil, fmt.Errorf("%w: negative RequestTimeout, WorkerTimeout, WriteTimeout or StreamBuffer", ErrInvalidOptions)
	}
	setDefault(&opts.RequestTimeout, 10*time.Minute)
	setDefault(&opts.WorkerTimeout, 4*time.Second)
	setDefault(&opts.KeepAlive, 30*time.Second)
	setDefault(&opts.WriteTimeout, 10*time.Second)
	setDefault(&opts.SSERetry, time.Second)
	if opts.StreamBuffer == 0 {
		opts.StreamBuffer = 256
	}
	if opts.Admit == nil {
		opts.Admit = func(http.ResponseWriter, *http.Request, protocol.ID, string) (func(), bool) { return func() {}, true }
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Streams{opts: opts, log: log, nc: opts.Conn, system: bus.SystemOf(opts.Conn), subj: opts.Subjects, id: opts.ID, open: map[string]*inbox{}, lost: make(chan struct{})}, nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// logEvent appends an event to a legacy stream's log and returns its index;
// ok is false when the store failed (the event is then sent without an id).
func (s *Streams) logEvent(session, stream string, payload []byte) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	idx, err := s.opts.Events.AppendEvent(ctx, session, stream, payload)
	if err != nil {
		s.log.Warn("frontend: logging a stream event", "err", err)
		return 0, false
	}
	return idx, true
}

// endLog tells the store that a legacy POST stream whose response the
// client got is over: its log goes after the store's grace
// (sessionstore.Options.EndedStreamGrace), so a session's bookkeeping does
// not grow with every stream it ever had.
func (s *Streams) endLog(session, stream string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.opts.Events.EndStream(ctx, session, stream); err != nil {
		s.log.Warn("frontend: ending a stream's log", "err", err)
	}
}

// frontendAlive asks frontend fe whether it is still there; only a "no
// responders" answer (its connection and subscriptions are gone) counts as
// dead.
func (s *Streams) frontendAlive(ctx context.Context, fe string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := s.nc.RequestWithContext(ctx, s.subj.FrontendControl(fe), nil)
	return !errors.Is(err, nats.ErrNoResponders)
}

// ModernStatus maps a JSON-RPC error code to the HTTP status 2026-07-28
// prescribes; other errors travel with 200.
func ModernStatus(code int64) int {
	switch code {
	case protocol.CodeHeaderMismatch, protocol.CodeMissingRequiredClientCapability, protocol.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case protocol.CodeMethodNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalidParams:
		return http.StatusBadRequest // only used here for malformed _meta
	}
	return http.StatusOK
}
