package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/nats-io/nats.go"
)

// ViewOptions configure a View.
type ViewOptions struct {
	// Subjects builds the bus subjects.
	// default: bus.DefaultPrefix ("mcp")
	Subjects bus.Subjects
	// Logger receives the failures of catalog fetches.
	// default: slog.Default()
	Logger *slog.Logger
	// ListChanged is called with a list kind ("tools", "prompts",
	// "resources") when that list of the union changes: a pool joins or
	// leaves, or a worker reports a handler changed it. It must not block.
	// default: none (changes are not raised)
	ListChanged func(kind string)
	// SweepInterval is how often workers that stopped announcing are
	// forgotten. Negative is a validation error.
	// default: 250ms
	SweepInterval time.Duration
	// CatalogTimeout bounds the fetch of a pool's catalog. Negative is a
	// validation error.
	// default: 5s
	CatalogTimeout time.Duration
	// StartWait is how long Start waits for the first pool's catalog, so
	// that requests right after start see the cluster. Negative means off
	// (Start does not wait).
	// default: 500ms
	StartWait time.Duration
}

// View is a frontend's view of the worker pools: it tracks the live
// workers from their announcements and what each pool serves (its catalog,
// fetched once per pool). From the union it answers initialize,
// server/discover and the lists, routes each request only to workers that
// serve it, and calls ViewOptions.ListChanged when the union changes (a
// pool joins, leaves, or a handler changes its lists).
//
// Its methods are safe for concurrent use.
type View struct {
	nc   bus.Conn
	opts ViewOptions
	log  *slog.Logger

	mu       sync.Mutex // guards the maps and the fields below
	workers  map[string]*member
	pools    map[string]*mcp.Catalog
	fetching map[string]bool
	reported map[string][]string // pool -> kinds to raise once its catalog is in
	wasLive  bool                // live has been closed
	closed   bool                // Close was called: no new fetches
	sub      bus.Subscription

	snap   atomic.Pointer[snapshot] // what requests read; never nil
	format atomic.Int32             // RequestFormat

	live    chan struct{}      // closed when the first pool's catalog is in
	ctx     context.Context    // cancelled by Close: ends catalog fetches
	cancel  context.CancelFunc //
	fetches sync.WaitGroup     // catalog fetches running
	stop    chan struct{}      // closed by Close: ends the sweep
	done    chan struct{}      // closed when the sweep ended; nil before Start
}

// member is one live worker.
type member struct {
	pool    string // the pool it announces
	prev    string // its previous pool, served until pool's catalog is in
	expires time.Time
	format  int // the request header format it reads (Announcement.RequestFormat)
}

// errClosed is returned by Start after Close.
var errClosed = errors.New("fleet: the view is closed")

// NewView returns a view following announcements on nc. Call Start to
// follow them and Close to stop.
func NewView(nc bus.Conn, opts ViewOptions) (*View, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: a NATS connection is required", ErrInvalidOptions)
	}
	if opts.SweepInterval < 0 || opts.CatalogTimeout < 0 {
		return nil, fmt.Errorf("%w: negative SweepInterval or CatalogTimeout", ErrInvalidOptions)
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 250 * time.Millisecond
	}
	if opts.CatalogTimeout == 0 {
		opts.CatalogTimeout = 5 * time.Second
	}
	switch {
	case opts.StartWait == 0:
		opts.StartWait = 500 * time.Millisecond
	case opts.StartWait < 0:
		opts.StartWait = 0
	}
	if opts.ListChanged == nil {
		opts.ListChanged = func(string) {}
	}
	v := &View{
		nc: nc, opts: opts, log: opts.Logger,
		workers: map[string]*member{}, pools: map[string]*mcp.Catalog{}, fetching: map[string]bool{}, reported: map[string][]string{},
		live: make(chan struct{}), stop: make(chan struct{}),
	}
	if v.log == nil {
		v.log = slog.Default()
	}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	v.snap.Store(&snapshot{cat: &mcp.Catalog{}})
	return v, nil
}

// Start subscribes to announcements, asks every worker to announce itself
// and waits up to ViewOptions.StartWait for the first pool's catalog, so
// requests right after start see the cluster. It returns ctx.Err() if ctx
// ends first. On error nothing is left running. Call it once.
func (v *View) Start(ctx context.Context) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			v.Close()
		}
	}()
	sub, err := v.nc.Subscribe(v.opts.Subjects.Announce(), v.onAnnounce)
	if err != nil {
		return err
	}
	_ = sub.SetPendingLimits(-1, 64<<20)
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		_ = sub.Unsubscribe()
		return errClosed
	}
	v.sub = sub
	v.done = make(chan struct{})
	v.mu.Unlock()
	go v.sweep()
	if err := v.nc.Publish(v.opts.Subjects.AnnounceQuery(), nil); err != nil {
		return err
	}
	if v.opts.StartWait <= 0 {
		return nil
	}
	t := time.NewTimer(v.opts.StartWait)
	defer t.Stop()
	select {
	case <-v.live:
	case <-t.C: // no worker yet: requests go to any worker meanwhile
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Close stops following announcements and waits for the view's goroutines
// to end. The view keeps answering from what it last knew. It is
// idempotent and safe without Start.
func (v *View) Close() {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	sub, done := v.sub, v.done
	v.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	v.cancel()
	close(v.stop)
	if done != nil {
		<-done
	}
	v.fetches.Wait()
}

// Alive reports whether worker announced itself lately (and is not
// leaving).
func (v *View) Alive(worker string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := v.workers[worker]
	return w != nil && time.Now().Before(w.expires)
}

func (v *View) onAnnounce(m *nats.Msg) {
	var a Announcement
	if json.Unmarshal(m.Data, &a) != nil || a.Worker == "" || a.Pool == "" {
		return
	}
	interval := time.Duration(a.IntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = defaultInterval
	}
	expires := time.Now().Add(missedBeats * interval)
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	w := v.workers[a.Worker]
	changed := false
	switch {
	case a.Leaving:
		if w != nil {
			delete(v.workers, a.Worker)
			changed = true
		}
	case w == nil:
		v.workers[a.Worker] = &member{pool: a.Pool, expires: expires, format: a.RequestFormat}
		changed = true
	case w.pool != a.Pool || w.format != a.RequestFormat:
		w.prev, w.pool, w.expires, w.format = w.pool, a.Pool, expires, a.RequestFormat
		if w.prev == w.pool {
			w.prev = ""
		}
		changed = true
	default:
		w.expires = expires
	}
	known := v.pools[a.Pool] != nil
	fetch := !a.Leaving && !known && !v.fetching[a.Pool]
	if fetch {
		v.fetching[a.Pool] = true
		v.fetches.Add(1)
	}
	if !known && len(a.Changed) > 0 {
		// Raised once the new catalog is in, so clients that refetch
		// their lists get the new ones.
		v.reported[a.Pool] = append(v.reported[a.Pool], a.Changed...)
	}
	v.mu.Unlock()
	if fetch {
		go v.fetch(a.Pool)
	}
	switch {
	case changed && known:
		v.rebuild(a.Changed)
	case changed:
		v.rebuild(nil)
	case len(a.Changed) > 0 && known:
		v.raise(a.Changed)
	}
}

// fetch asks the pool's workers for its catalog. Close ends it.
func (v *View) fetch(pool string) {
	defer v.fetches.Done()
	ctx, cancel := context.WithTimeout(v.ctx, v.opts.CatalogTimeout)
	defer cancel()
	m, err := v.nc.RequestWithContext(ctx, v.opts.Subjects.Catalog(pool), nil)
	var cat mcp.Catalog
	if err == nil {
		err = json.Unmarshal(m.Data, &cat)
	}
	v.mu.Lock()
	delete(v.fetching, pool)
	reported := v.reported[pool]
	delete(v.reported, pool)
	if err == nil {
		v.pools[pool] = &cat
	}
	v.mu.Unlock()
	if err != nil {
		if v.ctx.Err() == nil {
			v.log.Warn("frontend: fetching a pool's catalog", "pool", pool, "err", err)
		}
		return
	}
	v.rebuild(reported)
}

// sweep forgets workers that stopped announcing, and catalogs of pools
// without workers, until Close.
func (v *View) sweep() {
	defer close(v.done)
	t := time.NewTicker(v.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case now := <-t.C:
			v.mu.Lock()
			changed := false
			for id, w := range v.workers {
				if now.After(w.expires) {
					delete(v.workers, id)
					changed = true
				}
			}
			v.mu.Unlock()
			if changed {
				v.rebuild(nil)
			}
		}
	}
}

// rebuild recomputes the union of live pools; list kinds that changed (or
// that a worker reported changed) are raised.
func (v *View) rebuild(reported []string) {
	v.mu.Lock()
	live := map[string]bool{}
	format := bus.RequestFormat
	if len(v.workers) == 0 {
		format = 0 // none known: what every worker reads
	}
	for _, w := range v.workers {
		format = min(format, w.format)
	}
	v.format.Store(int32(format))
	for _, w := range v.workers {
		switch {
		case v.pools[w.pool] != nil:
			live[w.pool] = true
			w.prev = ""
		case w.prev != "" && v.pools[w.prev] != nil:
			live[w.prev] = true // until the new pool's catalog is in
		}
	}
	for p := range v.pools {
		if live[p] || v.fetching[p] {
			continue
		}
		inUse := false
		for _, w := range v.workers {
			inUse = inUse || w.pool == p || w.prev == p
		}
		if !inUse {
			delete(v.pools, p)
		}
	}
	names := make([]string, 0, len(live))
	for p := range live {
		names = append(names, p)
	}
	slices.Sort(names)
	cats := make([]*mcp.Catalog, len(names))
	for i, p := range names {
		cats[i] = v.pools[p]
	}
	s := newSnapshot(names, cats)
	old := v.snap.Swap(s)
	if s.live && !v.wasLive {
		v.wasLive = true
		close(v.live)
	}
	v.mu.Unlock()
	kinds := slices.Clone(reported)
	if old.live || s.live {
		for _, k := range mcp.SameLists(old.cat, s.cat) {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if old.live {
		v.raise(kinds)
	}
}

// RequestFormat is the request header format to write
// (bus.EncodeRequestAs): the newest that every live worker reads, 0 (the
// JSON header, which every version reads) while no worker is known.
func (v *View) RequestFormat() int { return int(v.format.Load()) }

// ListDigest returns the digest (mcp.ListDigest) of the list of kind
// ("tools", "prompts" or "resources") the union of live pools offers now:
// it changes exactly when a list_changed of that kind is raised for a
// change of the lists.
func (v *View) ListDigest(kind string) string {
	if s := v.snap.Load(); s != nil {
		return s.digests[kind]
	}
	return ""
}

// raise reports kinds to ViewOptions.ListChanged.
func (v *View) raise(kinds []string) {
	for _, k := range kinds {
		v.opts.ListChanged(k)
	}
}

// snapshot is an immutable picture of the union of live pools.
type snapshot struct {
	cat       *mcp.Catalog      // the union
	digests   map[string]string // list kind -> mcp.ListDigest of cat
	live      bool              // at least one pool is known
	resources map[string]string
	templates []templateRoute
	prompts   map[string]string // prompt -> pool (for completion)
}

type templateRoute struct {
	raw  string
	tmpl *uritemplate.Template
	pool string
}

// newSnapshot builds the union of cats, the catalogs of the pools names
// (sorted): the first pool serving a resource, prompt or template wins.
func newSnapshot(names []string, cats []*mcp.Catalog) *snapshot {
	s := &snapshot{cat: mcp.MergeCatalogs(cats), live: len(cats) > 0, resources: map[string]string{}, prompts: map[string]string{}, digests: map[string]string{}}
	for _, k := range []string{"tools", "prompts", "resources"} {
		s.digests[k] = mcp.ListDigest(s.cat, k)
	}
	for i, c := range cats {
		for _, r := range c.Resources {
			if _, ok := s.resources[r.URI]; !ok {
				s.resources[r.URI] = names[i]
			}
		}
		for _, p := range c.Prompts {
			if _, ok := s.prompts[p.Name]; !ok {
				s.prompts[p.Name] = names[i]
			}
		}
		for _, t := range c.Templates {
			if tmpl, err := uritemplate.Parse(t.URITemplate); err == nil {
				s.templates = append(s.templates, templateRoute{raw: t.URITemplate, tmpl: tmpl, pool: names[i]})
			}
		}
	}
	return s
}

// poolFor returns the pool serving uri (a resource, or a match of a
// template, or a template itself for completion); "" when none does.
func (s *snapshot) poolFor(uri string) string {
	if p, ok := s.resources[uri]; ok {
		return p
	}
	for _, t := range s.templates {
		if t.raw == uri {
			return t.pool
		}
		if _, ok := t.tmpl.Match(uri); ok {
			return t.pool
		}
	}
	return ""
}

// HasTool and HasPrompt report whether the union of the live pools'
// catalogs offers the tool or prompt (a binary search; no allocation).
func (v *View) HasTool(name string) bool { return v.snap.Load().cat.HasTool(name) }

// HasPrompt: see HasTool.
func (v *View) HasPrompt(name string) bool { return v.snap.Load().cat.HasPrompt(name) }

// ResourceLabel names uri by the union of the live pools' catalogs, for
// metric labels the catalog bounds: uri itself for a static resource, the
// URI template it matches for a template's resource; ok is false for
// anything else (see mcp.Catalog.ResourceLabel: the answers are cached
// with the snapshot of the union, so a repeated URI costs a map lookup
// and no allocation, and a change of the pools starts afresh).
func (v *View) ResourceLabel(uri string) (label string, ok bool) {
	return v.snap.Load().cat.ResourceLabel(uri)
}
