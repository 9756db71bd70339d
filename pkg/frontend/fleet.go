package frontend

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// fleet tracks the live workers from their announcements and what each
// pool serves (its catalog, fetched once per pool). From the union it
// answers initialize, server/discover and the lists, routes each request
// only to workers that serve it, and raises list_changed to this
// frontend's streams when the union changes (a pool joins, leaves, or a
// handler changes its lists).
type fleet struct {
	f *Frontend

	mu       sync.Mutex // guards the maps
	workers  map[string]*fleetWorker
	pools    map[string]*mcp.Catalog
	fetching map[string]bool
	reported map[string][]string // pool -> kinds to raise once its catalog is in

	view atomic.Pointer[fleetView] // what requests read; never nil after start

	sub, qsub *nats.Subscription
	stop      chan struct{}
	done      chan struct{}
}

type fleetWorker struct {
	pool    string // the pool it announces
	prev    string // its previous pool, served until pool's catalog is in
	expires time.Time
}

// fleetView is an immutable snapshot of the union of live pools.
type fleetView struct {
	cat       *mcp.Catalog // the union
	live      bool         // at least one pool is known
	resources map[string]string
	templates []templateRoute
	prompts   map[string]string // prompt -> pool (for completion)
}

type templateRoute struct {
	raw  string
	tmpl *uritemplate.Template
	pool string
}

func newFleet(f *Frontend) *fleet {
	fl := &fleet{f: f, workers: map[string]*fleetWorker{}, pools: map[string]*mcp.Catalog{}, fetching: map[string]bool{}, reported: map[string][]string{}}
	fl.view.Store(&fleetView{cat: &mcp.Catalog{}})
	return fl
}

// start subscribes to announcements, asks every worker to announce itself
// and waits briefly for the first catalogs, so requests right after start
// see the cluster.
func (fl *fleet) start() error {
	var err error
	if fl.sub, err = fl.f.nc.Subscribe(fl.f.subj.Announce(), fl.onAnnounce); err != nil {
		return err
	}
	_ = fl.sub.SetPendingLimits(-1, 64<<20)
	fl.stop, fl.done = make(chan struct{}), make(chan struct{})
	go fl.sweep()
	if err := fl.f.nc.Publish(fl.f.subj.AnnounceQuery(), nil); err != nil {
		return err
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) && !fl.view.Load().live {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (fl *fleet) shutdown() {
	if fl.stop == nil {
		return
	}
	select {
	case <-fl.stop:
		return
	default:
	}
	close(fl.stop)
	<-fl.done
	if fl.sub != nil {
		_ = fl.sub.Unsubscribe()
	}
}

// toolScopes returns the scopes a tool requires (its _meta
// RequiredScopesMeta), from the union of the workers' catalogs.
func (fl *fleet) toolScopes(name string) []string {
	v := fl.view.Load()
	for _, t := range v.cat.Tools {
		if t.Name != name {
			continue
		}
		raw, ok := t.Meta[RequiredScopesMeta]
		if !ok {
			return nil
		}
		var scopes []string
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &scopes)
		return scopes
	}
	return nil
}

// alive reports whether worker announced itself lately (and is not
// leaving).
func (fl *fleet) alive(worker string) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	w := fl.workers[worker]
	return w != nil && time.Now().Before(w.expires)
}

func (fl *fleet) onAnnounce(m *nats.Msg) {
	var a bus.Announcement
	if json.Unmarshal(m.Data, &a) != nil || a.Worker == "" || a.Pool == "" {
		return
	}
	interval := time.Duration(a.IntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = time.Second
	}
	fl.mu.Lock()
	w := fl.workers[a.Worker]
	changed := false
	switch {
	case a.Leaving:
		if w != nil {
			delete(fl.workers, a.Worker)
			changed = true
		}
	case w == nil:
		fl.workers[a.Worker] = &fleetWorker{pool: a.Pool, expires: time.Now().Add(3 * interval)}
		changed = true
	case w.pool != a.Pool:
		w.prev, w.pool, w.expires = w.pool, a.Pool, time.Now().Add(3*interval)
		changed = true
	default:
		w.expires = time.Now().Add(3 * interval)
	}
	known := fl.pools[a.Pool] != nil
	fetch := !a.Leaving && !known && !fl.fetching[a.Pool]
	if fetch {
		fl.fetching[a.Pool] = true
	}
	if !known && len(a.Changed) > 0 {
		// Raised once the new catalog is in, so clients that refetch
		// their lists get the new ones.
		fl.reported[a.Pool] = append(fl.reported[a.Pool], a.Changed...)
	}
	fl.mu.Unlock()
	if fetch {
		go fl.fetch(a.Pool)
	}
	switch {
	case changed && known:
		fl.rebuild(a.Changed)
	case changed:
		fl.rebuild(nil)
	case len(a.Changed) > 0 && known:
		fl.raise(a.Changed)
	}
}

// fetch asks the pool's workers for its catalog.
func (fl *fleet) fetch(pool string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := fl.f.nc.RequestWithContext(ctx, fl.f.subj.Catalog(pool), nil)
	var cat mcp.Catalog
	if err == nil {
		err = json.Unmarshal(m.Data, &cat)
	}
	fl.mu.Lock()
	delete(fl.fetching, pool)
	reported := fl.reported[pool]
	delete(fl.reported, pool)
	if err == nil {
		fl.pools[pool] = &cat
	}
	fl.mu.Unlock()
	if err != nil {
		fl.f.log.Warn("frontend: fetching a pool's catalog", "pool", pool, "err", err)
		return
	}
	fl.rebuild(reported)
}

// sweep forgets workers that stopped announcing, and catalogs of pools
// without workers.
func (fl *fleet) sweep() {
	defer close(fl.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-fl.stop:
			return
		case now := <-t.C:
			fl.mu.Lock()
			changed := false
			for id, w := range fl.workers {
				if now.After(w.expires) {
					delete(fl.workers, id)
					changed = true
				}
			}
			fl.mu.Unlock()
			if changed {
				fl.rebuild(nil)
			}
		}
	}
}

// rebuild recomputes the union of live pools; list kinds that changed (or
// that a worker reported changed) raise list_changed on this frontend's
// streams.
func (fl *fleet) rebuild(reported []string) {
	fl.mu.Lock()
	live := map[string]bool{}
	for _, w := range fl.workers {
		switch {
		case fl.pools[w.pool] != nil:
			live[w.pool] = true
			w.prev = ""
		case w.prev != "" && fl.pools[w.prev] != nil:
			live[w.prev] = true // until the new pool's catalog is in
		}
	}
	for p := range fl.pools {
		if live[p] || fl.fetching[p] {
			continue
		}
		inUse := false
		for _, w := range fl.workers {
			inUse = inUse || w.pool == p || w.prev == p
		}
		if !inUse {
			delete(fl.pools, p)
		}
	}
	names := make([]string, 0, len(live))
	for p := range live {
		names = append(names, p)
	}
	slices.Sort(names)
	cats := make([]*mcp.Catalog, len(names))
	for i, p := range names {
		cats[i] = fl.pools[p]
	}
	v := &fleetView{cat: mcp.MergeCatalogs(cats), live: len(cats) > 0, resources: map[string]string{}, prompts: map[string]string{}}
	for i, c := range cats {
		for _, r := range c.Resources {
			if _, ok := v.resources[r.URI]; !ok {
				v.resources[r.URI] = names[i]
			}
		}
		for _, p := range c.Prompts {
			if _, ok := v.prompts[p.Name]; !ok {
				v.prompts[p.Name] = names[i]
			}
		}
		for _, t := range c.Templates {
			if tmpl, err := uritemplate.Parse(t.URITemplate); err == nil {
				v.templates = append(v.templates, templateRoute{raw: t.URITemplate, tmpl: tmpl, pool: names[i]})
			}
		}
	}
	old := fl.view.Swap(v)
	fl.mu.Unlock()
	kinds := slices.Clone(reported)
	if old.live || v.live {
		for _, k := range mcp.SameLists(old.cat, v.cat) {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if old.live {
		fl.raise(kinds)
	}
}

// raise sends list_changed for kinds to this frontend's streams.
func (fl *fleet) raise(kinds []string) {
	for _, k := range kinds {
		fl.f.reg.ListChanged(k)
	}
}

// poolFor returns the pool serving uri (a resource, or a match of a
// template, or a template itself for completion); "" when none does.
func (v *fleetView) poolFor(uri string) string {
	if p, ok := v.resources[uri]; ok {
		return p
	}
	for _, t := range v.templates {
		if t.raw == uri {
			return t.pool
		}
		if _, ok := t.tmpl.Match(uri); ok {
			return t.pool
		}
	}
	return ""
}

// route says where a request goes: the subject, or a local answer.
type route struct {
	subject string
	local   *protocol.Error // answer this error without a worker
}

// routeFor picks the subject of a request from the union: tools and
// prompts by name (any worker serving them), URIs and completion
// references to the pool that serves them, anything else to any worker.
// Without any known pool, everything goes to any worker.
func (f *Frontend) routeFor(era protocol.Era, method string, head *protocol.ParamsHead, params json.RawMessage) route {
	v := f.fleet.view.Load()
	subj := f.subj
	if !v.live {
		return route{subject: subj.Request(method, routingName(method, head))}
	}
	switch method {
	case protocol.MethodToolsCall:
		name := ""
		if head.Name != nil {
			name = *head.Name
		}
		if !v.cat.HasTool(name) {
			return route{local: protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown tool %q", name)}
		}
		return route{subject: subj.Request(method, name)}
	case protocol.MethodPromptsGet:
		name := ""
		if head.Name != nil {
			name = *head.Name
		}
		if !v.cat.HasPrompt(name) {
			return route{local: protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown prompt %q", name)}
		}
		return route{subject: subj.Request(method, name)}
	case protocol.MethodResourcesRead:
		uri := ""
		if head.URI != nil {
			uri = *head.URI
		}
		if p := v.poolFor(uri); p != "" {
			return route{subject: subj.PoolRequest(p, method)}
		}
		code := int64(protocol.CodeResourceNotFound)
		if era == protocol.EraModern {
			code = protocol.CodeInvalidParams
		}
		return route{local: protocol.NewError(code, "resource not found: %s", uri).WithData(map[string]string{"uri": uri})}
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		if head.URI != nil {
			if p := v.poolFor(*head.URI); p != "" {
				return route{subject: subj.PoolRequest(p, method)}
			}
		}
	case protocol.MethodCompletionComplete:
		var p struct {
			Ref protocol.CompleteReference `json:"ref"`
		}
		_ = json.Unmarshal(params, &p)
		pool := ""
		switch p.Ref.Type {
		case "ref/prompt":
			pool = v.prompts[p.Ref.Name]
		case "ref/resource":
			pool = v.poolFor(p.Ref.URI)
		}
		if pool != "" {
			return route{subject: subj.PoolRequest(pool, method)}
		}
	}
	return route{subject: subj.Request(method, "")}
}

// answerFromCatalog answers initialize, server/discover and the lists from
// the union when a pool is known; ok is false otherwise.
func (f *Frontend) answerFromCatalog(era protocol.Era, msg *protocol.Message, meta *protocol.RequestMeta) (resp []byte, ok bool) {
	v := f.fleet.view.Load()
	if !v.live || !mcp.IsCatalogMethod(msg.Method) {
		return nil, false
	}
	in := mcp.RequestInit{Method: msg.Method, ID: msg.ID, Era: era, Features: mcp.Features{Listen: true, SessionStream: true, Tasks: true}}
	if meta != nil && meta.ProtocolVersion != nil {
		in.ProtocolVersion = *meta.ProtocolVersion
	}
	res, _, err := v.cat.Answer(mcp.NewRequest(&in), msg.Params)
	if err != nil {
		pe, isPE := err.(*protocol.Error)
		if !isPE {
			pe = protocol.NewError(protocol.CodeInternalError, "internal error")
		}
		return protocol.AppendErrorResponse(nil, msg.ID, pe), true
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return protocol.AppendErrorResponse(nil, msg.ID, protocol.NewError(protocol.CodeInternalError, "internal error")), true
	}
	return protocol.AppendResponse(make([]byte, 0, len(raw)+48), msg.ID, raw), true
}
