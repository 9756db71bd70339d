package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// AnnouncerOptions configure an Announcer.
type AnnouncerOptions struct {
	// ID is the worker's bus id, named in every announcement.
	// default: none (required)
	ID string
	// Subjects builds the bus subjects.
	// default: bus.DefaultPrefix ("mcp")
	Subjects bus.Subjects
	// Logger receives failed announcements.
	// default: slog.Default()
	Logger *slog.Logger
	// Interval is the heartbeat interval of the announcements; frontends
	// forget a worker silent for three intervals. Negative is a
	// validation error.
	// default: 1s
	Interval time.Duration
}

// Announcer is a worker's side of the fleet: it announces the worker's pool
// every interval, at once when a frontend asks and when the worker calls
// Announce, and answers frontends' requests for the pool's catalog.
//
// Its methods are safe for concurrent use.
type Announcer struct {
	nc   bus.Conn
	opts AnnouncerOptions
	log  *slog.Logger

	served  atomic.Pointer[servedPool] // nil until Serve
	leaving atomic.Bool                // Leave was called

	mu       sync.Mutex // guards the fields below
	querySub bus.Subscription
	catSub   bus.Subscription // the catalog subject of the served pool
	catSubj  string
	closed   bool
	stop     chan struct{} // closed by Close: ends the heartbeat
	done     chan struct{} // closed when the heartbeat ended; nil before Start
}

// servedPool is what the worker serves: its pool and catalog.
type servedPool struct {
	pool    string
	catalog []byte // the catalog, as sent to frontends
}

// NewAnnouncer returns an announcer for the worker opts.ID on nc. Call
// Start, then Serve once the worker serves a catalog.
func NewAnnouncer(nc bus.Conn, opts AnnouncerOptions) (*Announcer, error) {
	switch {
	case nc == nil:
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidOptions)
	case opts.ID == "":
		return nil, fmt.Errorf("%w: the worker id is required", ErrInvalidOptions)
	case opts.Interval < 0:
		return nil, fmt.Errorf("%w: negative Interval", ErrInvalidOptions)
	}
	if opts.Interval == 0 {
		opts.Interval = defaultInterval
	}
	a := &Announcer{nc: nc, opts: opts, log: opts.Logger, stop: make(chan struct{})}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a, nil
}

// Start answers frontends' announcement queries and starts the heartbeat.
// Nothing is announced before Serve. It returns ctx.Err() if ctx is done.
// On error nothing is left running. Call it once.
func (a *Announcer) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A query is answered even while leaving: frontends then hear of the
	// worker until it stops (as before the move to this package).
	s, err := a.nc.Subscribe(a.opts.Subjects.AnnounceQuery(), func(*nats.Msg) { a.Announce(nil) })
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", a.opts.Subjects.AnnounceQuery(), err)
	}
	_ = s.SetPendingLimits(-1, 64<<20)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		_ = s.Unsubscribe()
		return errAnnouncerClosed
	}
	a.querySub = s
	a.done = make(chan struct{})
	go a.heartbeat()
	return nil
}

// errAnnouncerClosed is returned by Start after Close.
var errAnnouncerClosed = fmt.Errorf("fleet: the announcer is closed")

// Serve makes the announcer announce pool and answer its catalog requests
// with catalog (the JSON of the catalog the worker serves). It subscribes
// to the new pool's catalog subject before dropping the previous one's, so
// a pool's catalog is never briefly unanswered; it neither flushes the
// connection nor announces (the worker does both once all its
// subscriptions are in place).
func (a *Announcer) Serve(pool string, catalog []byte) error {
	subj := a.opts.Subjects.Catalog(pool)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.leaving.Load() {
		return nil
	}
	var old bus.Subscription
	if subj != a.catSubj || a.catSub == nil {
		s, err := a.nc.QueueSubscribe(subj, bus.CatalogQueue, a.onCatalog)
		if err != nil {
			return fmt.Errorf("subscribing to %s: %w", subj, err)
		}
		_ = s.SetPendingLimits(-1, 64<<20)
		old, a.catSub, a.catSubj = a.catSub, s, subj
	}
	a.served.Store(&servedPool{pool: pool, catalog: catalog})
	if old != nil {
		_ = old.Unsubscribe()
	}
	return nil
}

// Pool returns the pool last given to Serve ("" before).
func (a *Announcer) Pool() string {
	if s := a.served.Load(); s != nil {
		return s.pool
	}
	return ""
}

// Announce announces the worker as alive in its pool; changed lists the
// kinds whose lists a handler reported changed. It does nothing before
// Serve.
func (a *Announcer) Announce(changed []string) { a.publish(false, changed) }

// Leave announces that the worker is leaving (frontends forget it at once),
// ends the periodic announcements and stops taking catalog requests (those
// already received are still answered). Announcement queries are still
// answered until Close.
func (a *Announcer) Leave() {
	a.leaving.Store(true)
	a.publish(true, nil)
	a.mu.Lock()
	if a.catSub != nil {
		_ = a.catSub.Drain()
		a.catSub = nil
	}
	a.mu.Unlock()
}

// Close stops the heartbeat and unsubscribes, waiting for the heartbeat
// goroutine to end. It announces nothing (call Leave first). It is
// idempotent and safe without Start.
func (a *Announcer) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.stop)
	done := a.done
	for _, s := range []bus.Subscription{a.querySub, a.catSub} {
		if s != nil {
			_ = s.Unsubscribe()
		}
	}
	a.querySub, a.catSub = nil, nil
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

// publish sends one announcement.
func (a *Announcer) publish(leaving bool, changed []string) {
	s := a.served.Load()
	if s == nil {
		return
	}
	ann := Announcement{Worker: a.opts.ID, Pool: s.pool, IntervalMs: a.opts.Interval.Milliseconds(), Leaving: leaving, Changed: changed,
		RequestFormat: bus.RequestFormat}
	b, _ := json.Marshal(&ann)
	if err := a.nc.Publish(a.opts.Subjects.Announce(), b); err != nil {
		a.log.Warn("worker: announcing", "err", err)
	}
}

// heartbeat announces the worker every interval until Leave or Close.
func (a *Announcer) heartbeat() {
	defer close(a.done)
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			if !a.leaving.Load() {
				a.Announce(nil)
			}
		}
	}
}

// onCatalog answers a frontend's request for the pool's catalog.
func (a *Announcer) onCatalog(m *nats.Msg) {
	if s := a.served.Load(); s != nil && m.Reply != "" {
		_ = bus.Respond(a.nc, m, s.catalog)
	}
}
