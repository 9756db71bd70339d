// Package worker runs a [mcp.Server]'s handlers for requests arriving over
// the bus. A worker joins the queue group of request subjects, runs each
// request's handler on a goroutine of its own while it runs (one kept from
// an earlier request when one is idle: pool.go) with a context that
// carries the request's deadline and is cancelled by cancellations from
// any frontend, writes the
// request's notifications and server-to-client requests to the stream that
// waits for it, and finally its response (or nothing, if it was cancelled:
// exactly one of the two outcomes wins).
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/fleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Worker. The zero value is valid: every zero field
// means its documented default.
type Options struct {
	// ID names the worker on the bus. It must be unique in the cluster.
	// default: a random id
	ID string
	// Subjects builds the bus subjects.
	// default: bus.DefaultPrefix ("mcp")
	Subjects bus.Subjects
	// Logger receives the worker's logs.
	// default: slog.Default()
	Logger *slog.Logger
	// DefaultTimeout bounds a request that carries no deadline. Negative
	// is a validation error.
	// default: 10 minutes
	DefaultTimeout time.Duration
	// CallTimeout bounds each server-to-client request (sampling,
	// elicitation, roots) a handler makes. Negative is a validation error.
	// default: 5 minutes
	CallTimeout time.Duration
	// HeartbeatInterval is how often a running request tells its frontend
	// the worker is alive. Negative means off (no heartbeats).
	// default: 1s
	HeartbeatInterval time.Duration
	// Metrics receives the worker's Prometheus metrics.
	// default: none (nothing is recorded)
	Metrics *Metrics
	// Filter selects the tools, prompts and resources this worker serves
	// (path.Match patterns).
	// Workers serving different sets form different pools; frontends route
	// each request only to workers that serve it.
	// default: everything the server has
	Filter *mcp.CatalogFilter
	// AnnounceInterval is the heartbeat interval of the worker's
	// announcements to frontends. Negative is a validation error.
	// default: 1s
	AnnounceInterval time.Duration
	// MaxInFlight caps the handlers this worker runs at once; beyond it a
	// request is answered at once with a "busy, retry" error. A handler
	// still running after its request ended (deadline, cancellation or
	// shutdown answered it) keeps its slot until it returns. Negative
	// means off (no cap).
	// default: 4096
	MaxInFlight int
	// AckTimeout is how long the frontend holding a legacy request's
	// stream has to ack each of its frames before the worker sends the
	// frame through any frontend instead (acked.go). Negative is a
	// validation error.
	// default: 1s
	AckTimeout time.Duration
	// TracerProvider makes the spans of each request: the CONSUMER span of
	// its bus message and the INTERNAL span of its handler, whose context
	// the handler gets. The no-op provider (go.opentelemetry.io/otel/trace/
	// noop) makes none: the handler's context then carries the envelope's
	// trace context (the caller's).
	// default: otel.GetTracerProvider(), the global provider
	TracerProvider trace.TracerProvider
}

// ErrInvalidOptions wraps the validation errors of New.
var ErrInvalidOptions = errors.New("worker: invalid options")

// Worker serves requests from the bus with one mcp.Server.
type Worker struct {
	nc   bus.Conn
	srv  *mcp.Server
	opts Options
	log  *slog.Logger
	subj bus.Subjects
	// spans makes the requests' spans (trace.go).
	spans spans
	// busSystem is nc's messaging.system in those spans (bus.SystemOf).
	busSystem string

	subs []bus.Subscription
	wg   sync.WaitGroup // requests not yet answered (and notifications being handled)
	pool *handlerPool   // the goroutines that run the handlers (pool.go)

	mu       sync.Mutex
	inflight map[string]*inflight // cancel key -> request not yet answered
	handlers int                  // handler goroutines running, stuck ones included: what MaxInFlight caps
	calls    map[string]*call     // server-to-client request id -> waiter

	catMu    sync.Mutex                  // serializes applyCatalog
	reqSubs  map[string]bus.Subscription // request subjects served; guarded by catMu
	served   atomic.Pointer[served]
	ann      *fleet.Announcer
	hbStop   chan struct{}
	hbDone   chan struct{}
	leaving  atomic.Bool // Shutdown began: the catalog is no longer applied nor announced
	draining bool        // Shutdown started: queued requests are still served
	closed   bool        // no more requests are taken

	seq   atomic.Uint64
	tasks *taskHost

	sendCtx   context.Context // acked frames are sent until it ends (end of Shutdown)
	stopSends context.CancelFunc
	sess      *sessionSender // session events (sessevents.go)
}

// New returns a worker serving srv over nc. Call Start to subscribe.
func New(nc bus.Conn, srv *mcp.Server, opts *Options) (*Worker, error) {
	if nc == nil || srv == nil {
		return nil, fmt.Errorf("%w: New needs a NATS connection and a server", ErrInvalidOptions)
	}
	w := &Worker{nc: nc, srv: srv, inflight: map[string]*inflight{}, calls: map[string]*call{}, reqSubs: map[string]bus.Subscription{}}
	w.tasks = newTaskHost(w)
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.DefaultTimeout < 0 || w.opts.CallTimeout < 0 || w.opts.AnnounceInterval < 0 || w.opts.AckTimeout < 0 {
		return nil, fmt.Errorf("%w: negative DefaultTimeout, CallTimeout, AnnounceInterval or AckTimeout", ErrInvalidOptions)
	}
	if w.opts.AckTimeout == 0 {
		w.opts.AckTimeout = time.Second
	}
	if w.opts.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		w.opts.ID = hex.EncodeToString(b[:])
	}
	if w.opts.DefaultTimeout == 0 {
		w.opts.DefaultTimeout = 10 * time.Minute
	}
	if w.opts.AnnounceInterval == 0 {
		w.opts.AnnounceInterval = time.Second
	}
	if w.opts.MaxInFlight == 0 {
		w.opts.MaxInFlight = 4096
	}
	if w.opts.CallTimeout == 0 {
		w.opts.CallTimeout = 5 * time.Minute
	}
	if w.opts.HeartbeatInterval == 0 {
		w.opts.HeartbeatInterval = time.Second
	}
	w.log = w.opts.Logger
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With("worker", w.opts.ID)
	w.subj = w.opts.Subjects
	w.spans = newSpans(w.opts.TracerProvider)
	w.busSystem = bus.SystemOf(nc)
	ann, err := fleet.NewAnnouncer(nc, fleet.AnnouncerOptions{ID: w.opts.ID, Subjects: w.subj, Logger: w.log, Interval: w.opts.AnnounceInterval})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	w.ann = ann
	w.sendCtx, w.stopSends = context.WithCancel(context.Background())
	w.sess = newSessionSender(w)
	w.pool = newHandlerPool(w, poolMaxIdle(w.opts.MaxInFlight))
	return w, nil
}

// ID returns the worker's bus id.
func (w *Worker) ID() string { return w.opts.ID }

// Start subscribes to requests, cancellations and client answers,
// installs the worker as the server's event sink and announces the worker
// to frontends. It returns ctx.Err() (wrapped) if ctx ends before start-up
// completes; on error nothing is left subscribed.
func (w *Worker) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.srv.SetEvents(&events{w: w})
	w.sess.start()
	var subs []bus.Subscription
	fail := func(err error) error {
		w.srv.SetEvents(nil)
		w.sess.stop(ctx)
		w.ann.Close()
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
		w.catMu.Lock()
		for _, s := range w.reqSubs {
			_ = s.Unsubscribe()
		}
		w.catMu.Unlock()
		return err
	}
	for _, x := range []struct {
		subj string
		h    nats.MsgHandler
	}{
		{w.subj.Cancel(), w.guard("a cancellation", w.onCancel)},
		{w.subj.WorkerInbox(w.opts.ID), w.guard("a client's answer", w.onAnswer)},
	} {
		s, err := w.nc.Subscribe(x.subj, x.h)
		if err != nil {
			return fail(fmt.Errorf("worker: subscribing to %s: %w", x.subj, err))
		}
		_ = s.SetPendingLimits(-1, 64<<20)
		subs = append(subs, s)
	}
	if err := w.ann.Start(ctx); err != nil {
		return fail(fmt.Errorf("worker: %w", err))
	}
	w.subs = subs
	if err := w.applyCatalog(ctx, nil); err != nil {
		return fail(err)
	}
	if w.opts.HeartbeatInterval > 0 {
		w.hbStop, w.hbDone = make(chan struct{}), make(chan struct{})
		go w.heartbeats(w.hbStop, w.hbDone)
	}
	w.log.Info("worker serving", "pool", w.Pool(), "tools", len(w.servedCatalog().Tools))
	return nil
}

// errShutdown is the cancel cause of requests cut short by Shutdown: they
// are answered with an error telling the client to retry, unlike client
// cancellations, which end without a response.
var errShutdown = errors.New("worker shutting down")

// Shutdown stops taking new requests: it drains the request subscription
// (the bus routes no new work here, and requests already routed are still
// served), waits for running requests until ctx ends, then cancels the
// rest, which get a "retry" error. It is idempotent and safe without Start.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if w.closed || w.draining {
		w.mu.Unlock()
		return nil
	}
	w.draining = true
	w.mu.Unlock()
	var err error
	w.leaving.Store(true)
	w.ann.Leave() // frontends forget this worker now
	defer func() {
		// Heartbeats go on while requests finish: their frontends must
		// not think the worker dead.
		if w.hbStop != nil {
			close(w.hbStop)
			<-w.hbDone
		}
		w.ann.Close()
	}()
	w.catMu.Lock()
	reqSubs := w.reqSubs
	w.reqSubs = map[string]bus.Subscription{}
	w.catMu.Unlock()
	for _, s := range reqSubs {
		if s.DrainWait(ctx) != nil && ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		w.mu.Lock()
		for _, f := range w.inflight {
			f.end(errShutdown)
		}
		w.mu.Unlock()
		// Handlers that ignore their context are not waited for long.
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	}
	// No request comes any more: the idle handler goroutines end now, the
	// ones of handlers still running when theirs return.
	w.pool.stop()
	// Tasks run on, within the same bound, and are cancelled past it.
	if terr := w.tasks.shutdown(ctx); terr != nil && err == nil {
		err = terr
	}
	for _, s := range w.subs {
		_ = s.Unsubscribe()
	}
	// Session events queued by the requests are sent, within ctx (or a
	// second when it is over already).
	// (Events give up by themselves after sessionEventTTL.)
	fctx, fcancel := ctx, context.CancelFunc(func() {})
	if ctx.Err() != nil {
		fctx, fcancel = context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	}
	w.sess.stop(fctx)
	fcancel()
	w.stopSends() // frames still unacked now are given up
	w.srv.SetEvents(nil)
	return err
}
