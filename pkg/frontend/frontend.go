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
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/fleet"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/internal/hub"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/origin"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/limits"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks/taskhttp"
	"github.com/nats-io/nats.go"
)

// Frontend serves the MCP endpoint.
type Frontend struct {
	nc   bus.Conn
	opts Options
	log  *slog.Logger
	subj bus.Subjects
	id   string

	hostCheck *origin.List
	metrics   *Metrics
	spans     spans // the exchanges' spans (trace.go)

	sub       bus.Subscription // the worker's frames for this frontend's streams
	streams   *stream.Streams  // exchanges, GET and resumed streams
	ctlSub    bus.Subscription
	appendSub bus.Subscription  // the appends this frontend logs for any other (stream.Streams.OnAppend)
	sevSub    bus.Subscription  // the session events it logs (stream.Streams.OnSessionEvents)
	taskAPI   *taskhttp.Handler // the task methods and the workers' task writes
	limits    *limits.Limiter
	reg       *listen.Registry
	fleet     *fleet.View // worker pools: membership, routing, catalog answers

	mu      sync.Mutex
	closing bool
	leaving atomic.Bool // Leave was called: answers close their connections

	busDown atomic.Bool      // the NATS connection is lost (watchBus)
	busCh   chan nats.Status // the connection's status changes, read by watchBus
	busDone chan struct{}    // closed when watchBus returns
	busMu   sync.Mutex       // serializes checkBus; guards reconnects
	// reconnects is the connection's reconnect count when checkBus last
	// looked.
	reconnects uint64
	shutdown   chan struct{} // closed by Shutdown
	hub        *hub.Hub      // writes taken-over listen streams
	plain      *hub.Plain    // serves the listen streams the hub cannot take
	once       sync.Once
	active     sync.WaitGroup // open HTTP exchanges on the MCP endpoint

	heldAccess sync.Map // *httpx.Record -> *heldAccess: listen exchanges whose access line waits (accesslog.go)
}

// New returns a frontend forwarding over nc. Call Start before serving.
func New(nc bus.Conn, opts Options) (*Frontend, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidConfig)
	}
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	opts.Store = opts.Metrics.InstrumentStore(opts.Store) // every store call timed
	hc, err := origin.New(opts.AllowedHosts, opts.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	f := &Frontend{
		nc: nc, opts: opts, log: log.With("frontend", opts.ID), subj: opts.Subjects, id: opts.ID,
		hostCheck: hc, shutdown: make(chan struct{}), metrics: opts.Metrics, spans: newSpans(opts.TracerProvider),
	}
	if f.taskAPI, err = newTasks(f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	perClient := 0 // without Auth a client is its connection: no principal to cap
	if opts.Auth != nil {
		perClient = opts.MaxListenPerPrincipal
	}
	f.reg = listen.New(nc, listen.Options{
		Subjects: opts.Subjects, Buffer: opts.StreamBuffer,
		MaxListen: opts.MaxListen, MaxListenPerClient: perClient, Logger: f.log, Metrics: opts.Metrics,
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
		ID: f.id, Conn: f.nc, Subjects: f.subj, Events: f.opts.Store, Subscribers: f.opts.Store, Registry: f.reg, ListDigest: f.fleet.ListDigest, RequestFormat: f.fleet.RequestFormat,
		Logger: f.log, Metrics: f.metrics,
		RequestTimeout: f.opts.RequestTimeout, WorkerTimeout: f.opts.WorkerTimeout, KeepAlive: f.opts.KeepAlive,
		WriteTimeout: f.opts.WriteTimeout, SSERetry: f.opts.SSERetry, StreamBuffer: f.opts.StreamBuffer,
		Shutdown: f.shutdown, Active: &f.active, Tracer: f.spans.streamTracer(),
		Admit: func(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (func(), bool) {
			h, ok := f.limits.Admit(w, id, session, principalOf(r))
			return h.Release, ok
		},
		EffectError: func(w http.ResponseWriter, id protocol.ID, err error) bool {
			if !limits.IsCapacity(err) {
				return false
			}
			f.limits.WriteSessionNotCreated(w, id, err)
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
			for _, s := range []bus.Subscription{f.sub, f.ctlSub, f.appendSub, f.sevSub} {
				if s != nil {
					_ = s.Unsubscribe()
				}
			}
		}
	}()
	if f.sub, err = bus.SubscribeInline(f.nc, f.subj.FrontendStreams(f.id), "", f.streams.OnFrame); err != nil {
		return fmt.Errorf("frontend: subscribing to stream frames: %w", err)
	}
	_ = f.sub.SetPendingLimits(-1, 256<<20)
	if f.ctlSub, err = f.nc.Subscribe(f.subj.FrontendControl(f.id), func(m *nats.Msg) { _ = bus.Respond(f.nc, m, []byte("ok")) }); err != nil {
		return fmt.Errorf("frontend: subscribing to its control subject: %w", err)
	}
	if f.appendSub, err = f.streams.SubscribeAppends(); err != nil {
		return fmt.Errorf("frontend: subscribing to appends: %w", err)
	}
	if f.sevSub, err = f.streams.SubscribeSessionEvents(); err != nil {
		return fmt.Errorf("frontend: subscribing to session events: %w", err)
	}
	if err = f.taskAPI.Start(ctx); err != nil {
		return fmt.Errorf("frontend: subscribing to task writes: %w", err)
	}
	if err = f.reg.Start(ctx); err != nil {
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
	f.startBusWatch()
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
	f.stopBusWatch()
	f.taskAPI.Stop(ctx)
	f.fleet.Close()
	if f.sub != nil {
		_ = f.sub.Unsubscribe()
		_ = f.ctlSub.Unsubscribe()
	}
	if f.sevSub != nil {
		_ = f.sevSub.Unsubscribe()
	}
	if f.appendSub != nil {
		_ = f.appendSub.Unsubscribe()
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
// connected (it fails from the moment the connection drops until it is
// back; see watchBus) and the store reachable (when it can be pinged).
func (f *Frontend) Ready(ctx context.Context) error {
	select {
	case <-f.shutdown:
		return errors.New("draining")
	default:
	}
	if f.leaving.Load() {
		return errors.New("draining")
	}
	if !f.busUp() {
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
