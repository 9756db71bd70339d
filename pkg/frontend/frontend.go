// Package frontend is mcpfleet's HTTP transport: the MCP endpoint (one URL
// serving both protocol eras) and session handling for the legacy era. It
// holds no handler code: every request is checked here and forwarded over
// the bus to a worker; the client streams that carry the worker's frames
// back (POST response streams, legacy GET streams, their resumption) are
// package stream's, and listen streams, once open, package hub's.
//
// The MCP endpoint is a plain http.Handler ([Frontend.Handler]); gin is
// used only for routing ([Frontend.Router]).
//
// A frontend keeps no per-session state for idle sessions: a session costs
// memory and goroutines only while one of its streams is open.
package frontend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/fleet"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/internal/hub"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/limits"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks/taskhttp"
	"github.com/nats-io/nats.go"
)

// MaxIDLen caps Options.ID (it goes into SSE event ids and bus subjects).
const MaxIDLen = stream.MaxFrontendIDLen

// Options configure a Frontend. Store is required; every other zero value
// means the documented default.
type Options struct {
	// ID names the frontend on the bus (at most MaxIDLen bytes); empty
	// means random. Unique per
	// cluster.
	ID string
	// Subjects builds bus subjects; the zero value uses "mcp".
	Subjects bus.Subjects
	// Store holds legacy sessions. Required.
	Store sessionstore.Store
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps a POST body (413 beyond); zero means 4 MiB.
	MaxBodyBytes int64
	// MaxDepth caps JSON nesting of a body (-32700 beyond); zero means
	// protocol.DefaultMaxDepth.
	MaxDepth int
	// RequestTimeout bounds a request from POST to response; zero means
	// 10 minutes.
	RequestTimeout time.Duration
	// WorkerTimeout is how long a request may go without any frame from its
	// worker (workers send heartbeats every second while a handler runs)
	// before the worker is presumed dead and the client gets an error; zero
	// means 4s.
	WorkerTimeout time.Duration
	// KeepAlive is the interval of SSE comment frames on GET streams; zero
	// means 30s; negative disables them.
	KeepAlive time.Duration
	// StreamBuffer is the number of frames buffered per open stream; a
	// stream whose reader falls further behind is closed. Zero means 256.
	StreamBuffer int
	// AllowedHosts lists the Host header values accepted (host or
	// host:port, case-insensitive); empty means loopback names only
	// (localhost, 127.0.0.1, [::1]) on any port. "*" accepts any host.
	AllowedHosts []string
	// AllowedOrigins lists accepted Origin header values (scheme://host[:port]);
	// empty means loopback origins only (http or https, any port). "*"
	// accepts any origin. Requests without Origin are accepted.
	AllowedOrigins []string
	// WriteTimeout bounds each write to a client stream; zero means 10s.
	WriteTimeout time.Duration
	// BodyTimeout bounds the reading of a POST body (408 beyond, and the
	// connection closes); zero means 10s.
	BodyTimeout time.Duration
	// Limits. Each applies with its default when zero and is off when
	// negative.
	//
	// MaxStringBytes caps a string in a message (default 2 MiB) and
	// MaxArrayLen the elements of an array or the members of an object
	// (default 10000): 400 beyond.
	MaxStringBytes int
	MaxArrayLen    int
	// MaxInFlightPerSession (default 64) and MaxInFlightPerPrincipal
	// (default 256, with Auth) cap the requests a legacy session or a
	// principal has running through this frontend: 429 beyond.
	MaxInFlightPerSession   int
	MaxInFlightPerPrincipal int
	// RatePerPrincipal (requests per second, default 50) and RateBurst
	// (default 100) limit each principal (with Auth) on this frontend:
	// 429 with Retry-After beyond.
	RatePerPrincipal float64
	RateBurst        int
	// MaxSessionsPerPrincipal caps the legacy sessions a principal (with
	// Auth) holds, across the cluster (default 100): 429 beyond.
	MaxSessionsPerPrincipal int
	// MaxInitializeBytes caps the params of an initialize (default 64 KiB):
	// a session keeps the client's capabilities and clientInfo for its
	// life. -32602 beyond.
	MaxInitializeBytes int
	// MaxSubscriptionsPerSession caps a legacy session's resource
	// subscriptions (default 1000; each is a bus subscription wherever
	// its GET stream is): -32602 beyond.
	MaxSubscriptionsPerSession int
	// SessionTTL is the store's idle lifetime of a session (default 30
	// min): a principal's session count forgets a session that long after
	// its creation.
	SessionTTL time.Duration
	// MaxListenPerPrincipal caps a principal's open listen streams on this
	// frontend (default 32): 429 beyond.
	MaxListenPerPrincipal int
	// Auth, when set, requires a bearer token on every MCP request (OAuth
	// 2.1 resource server) and binds sessions, listen streams, tasks and
	// MRTR state to the token's principal. Nil: no authentication (the
	// loopback default).
	Auth *auth.Verifier
	// SSERetry is the reconnection delay (SSE retry:) announced in the
	// priming event of legacy streams; zero means 1s, negative omits it.
	SSERetry time.Duration
	// MaxListen caps the subscriptions/listen streams open on this
	// frontend (HTTP 503 beyond); zero means 1000, negative means no cap.
	MaxListen int
	// StateTTL is how long a used MRTR requestState stays refused; it must
	// be at least the workers' mcp.ServerOptions.StateTTL. Zero means 15
	// minutes.
	StateTTL time.Duration
	// Metrics receives the frontend's Prometheus metrics; nil records none.
	Metrics *Metrics
	// ListenKeepAlive is the interval of SSE comments on listen streams,
	// which also detect a dead peer and free its slot; zero means 15s,
	// negative disables them.
	ListenKeepAlive time.Duration
}

// Frontend serves the MCP endpoint.
type Frontend struct {
	nc   *nats.Conn
	opts Options
	log  *slog.Logger
	subj bus.Subjects
	id   string

	hostCheck *allowList
	metrics   *Metrics

	sub     *nats.Subscription // the worker's frames for this frontend's streams
	streams *stream.Streams    // exchanges, GET and resumed streams
	ctlSub  *nats.Subscription
	taskAPI *taskhttp.Handler // the task methods and the workers' task writes
	limits  *limits.Limiter
	reg     *listen.Registry
	fleet   *fleet.View // worker pools: membership, routing, catalog answers

	mu      sync.Mutex
	closing bool
	leaving atomic.Bool // Leave was called: answers close their connections

	shutdown chan struct{} // closed by Shutdown
	hub      *hub.Hub      // writes taken-over listen streams
	plain    *hub.Plain    // serves the listen streams the hub cannot take
	once     sync.Once
	active   sync.WaitGroup // open HTTP exchanges on the MCP endpoint
}

// ErrInvalidConfig wraps configuration errors from New.
var ErrInvalidConfig = errors.New("frontend: invalid configuration")

// New returns a frontend forwarding over nc. Call Start before serving.
func New(nc *nats.Conn, opts Options) (*Frontend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidConfig)
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: a session store is required", ErrInvalidConfig)
	}
	if opts.MaxBodyBytes < 0 || opts.MaxDepth < 0 || opts.RequestTimeout < 0 || opts.WorkerTimeout < 0 || opts.StreamBuffer < 0 || opts.WriteTimeout < 0 || opts.BodyTimeout < 0 {
		return nil, fmt.Errorf("%w: negative limits are not allowed", ErrInvalidConfig)
	}
	if len(opts.ID) > MaxIDLen {
		return nil, fmt.Errorf("%w: the id is %d bytes long, over %d", ErrInvalidConfig, len(opts.ID), MaxIDLen)
	}
	if opts.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		opts.ID = hex.EncodeToString(b[:])
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 10 * time.Minute
	}
	if opts.WorkerTimeout == 0 {
		opts.WorkerTimeout = 4 * time.Second
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 30 * time.Second
	}
	if opts.StreamBuffer == 0 {
		opts.StreamBuffer = 256
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = 10 * time.Second
	}
	if opts.SSERetry == 0 {
		opts.SSERetry = time.Second
	}
	if opts.StateTTL <= 0 {
		opts.StateTTL = 15 * time.Minute
	}
	if opts.ListenKeepAlive == 0 {
		opts.ListenKeepAlive = 15 * time.Second
	}
	defaultInt(&opts.MaxListenPerPrincipal, 32)
	defaultInt(&opts.MaxInitializeBytes, 64<<10)
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 30 * time.Minute
	}
	hc, err := newAllowList(opts.AllowedHosts, opts.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	f := &Frontend{
		nc: nc, opts: opts, log: log.With("frontend", opts.ID), subj: opts.Subjects, id: opts.ID,
		hostCheck: hc, shutdown: make(chan struct{}), metrics: opts.Metrics,
	}
	maxListen := opts.MaxListen
	if maxListen == 0 {
		maxListen = 1000
	}
	if f.taskAPI, err = newTasks(f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	perClient := 0 // without Auth a client is its connection: no principal to cap
	if opts.Auth != nil {
		perClient = opts.MaxListenPerPrincipal
	}
	f.reg = listen.New(nc, listen.Options{
		Subjects: opts.Subjects, Subscriptions: opts.Store, Buffer: opts.StreamBuffer,
		MaxListen: maxListen, MaxListenPerClient: perClient, Logger: f.log,
	})
	if f.fleet, err = fleet.NewView(nc, fleet.ViewOptions{Subjects: opts.Subjects, Logger: f.log, ListChanged: f.reg.ListChanged}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if f.limits, err = newLimits(&opts, opts.SessionTTL, f.log); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := f.newStreams(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return f, nil
}

// newStreams builds the client streams and the listen servers, on the
// frontend's options, limits and shutdown.
func (f *Frontend) newStreams() (err error) {
	f.streams, err = stream.New(stream.Options{
		ID: f.id, Conn: f.nc, Subjects: f.subj, Events: f.opts.Store, Registry: f.reg, Logger: f.log, Metrics: f.metrics,
		RequestTimeout: f.opts.RequestTimeout, WorkerTimeout: f.opts.WorkerTimeout, KeepAlive: f.opts.KeepAlive,
		WriteTimeout: f.opts.WriteTimeout, SSERetry: f.opts.SSERetry, StreamBuffer: f.opts.StreamBuffer,
		Shutdown: f.shutdown, Active: &f.active,
		Admit: func(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (func(), bool) {
			s, ok := f.admit(w, r, id, session)
			return s.release, ok
		},
		EffectError: func(w http.ResponseWriter, id protocol.ID, err error) bool {
			if !isCapacity(err) {
				return false
			}
			f.sessionNotCreated(w, id, err)
			return true
		},
	})
	if err != nil {
		return err
	}
	lo := hub.Options{WriteTimeout: f.opts.WriteTimeout, KeepAlive: f.opts.ListenKeepAlive, Logger: f.log, Metrics: f.metrics, Active: &f.active}
	if f.hub, err = hub.New(lo); err != nil {
		return err
	}
	f.plain, err = hub.NewPlain(lo)
	return err
}

// defaultInt sets *v to def when it is zero, and to 0 (off) when negative.
func defaultInt(v *int, def int) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	}
}

// ID returns the frontend's bus id.
func (f *Frontend) ID() string { return f.id }

// Start subscribes to the frontend's stream subjects and follows the
// workers' announcements. It returns ctx.Err() (wrapped) if ctx ends
// before start-up completes. On error nothing is left subscribed.
func (f *Frontend) Start(ctx context.Context) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.fleet.Close()
			f.reg.Shutdown()
			f.taskAPI.Close()
			for _, s := range []*nats.Subscription{f.sub, f.ctlSub} {
				if s != nil {
					_ = s.Unsubscribe()
				}
			}
		}
	}()
	if f.sub, err = f.nc.Subscribe(f.subj.FrontendStreams(f.id), f.streams.OnFrame); err != nil {
		return fmt.Errorf("frontend: subscribing to stream frames: %w", err)
	}
	_ = f.sub.SetPendingLimits(-1, 256<<20)
	if f.ctlSub, err = f.nc.Subscribe(f.subj.FrontendControl(f.id), func(m *nats.Msg) { _ = m.Respond([]byte("ok")) }); err != nil {
		return fmt.Errorf("frontend: subscribing to its control subject: %w", err)
	}
	if err = f.taskAPI.Start(ctx); err != nil {
		return fmt.Errorf("frontend: subscribing to task writes: %w", err)
	}
	if err = f.reg.Start(); err != nil {
		return fmt.Errorf("frontend: subscribing to events: %w", err)
	}
	if err = f.fleet.Start(ctx); err != nil {
		return fmt.Errorf("frontend: following worker announcements: %w", err)
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err = f.nc.FlushWithContext(fctx); err != nil {
		return fmt.Errorf("frontend: flushing subscriptions: %w", err)
	}
	return nil
}

// Shutdown stops accepting new exchanges (503), closes long-lived streams,
// waits until in-flight exchanges end or ctx expires, then unsubscribes.
// It is idempotent.
func (f *Frontend) Shutdown(ctx context.Context) error {
	f.once.Do(func() {
		f.mu.Lock()
		f.closing = true
		f.mu.Unlock()
		f.reg.Shutdown() // listen streams send their final result
		close(f.shutdown)
		f.plain.Stop()
	})
	done := make(chan struct{})
	go func() { f.active.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.hub.Stop()
	f.taskAPI.Stop(ctx)
	f.fleet.Close()
	if f.sub != nil {
		_ = f.sub.Unsubscribe()
		_ = f.ctlSub.Unsubscribe()
	}
	return err
}

// Leave starts a drain without refusing anything yet: every answer from
// now on closes its connection (Connection: close), so a proxy's
// keep-alive connections to this frontend end after their next request
// instead of being closed under it, and /readyz reports draining. Call
// it, stop accepting connections, give the proxy a moment, then Shutdown.
func (f *Frontend) Leave() { f.leaving.Store(true) }

// Ready reports whether the frontend can serve: not draining, NATS
// connected and the store reachable (when it can be pinged).
func (f *Frontend) Ready(ctx context.Context) error {
	select {
	case <-f.shutdown:
		return errors.New("draining")
	default:
	}
	if f.leaving.Load() {
		return errors.New("draining")
	}
	if !f.nc.IsConnected() {
		return errors.New("NATS is not connected")
	}
	if p, ok := f.opts.Store.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("session store: %w", err)
		}
	}
	return nil
}

// Handler returns the MCP endpoint as a plain http.Handler.
func (f *Frontend) Handler() http.Handler { return http.HandlerFunc(f.serveMCP) }
