package worker

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// served is what the worker serves now: its server's catalog, filtered.
type served struct {
	cat  *mcp.Catalog
	pool string
	json []byte // the catalog, as sent to frontends
}

// applyCatalog makes the worker's request subscriptions match what it
// serves: one queue subscription per tool (tools/call) and prompt
// (prompts/get), one for its pool (requests routed by URI or reference),
// one for methods any worker serves, and its pool's catalog requests. It
// announces the result; changed lists the kinds a handler reported changed
// (announced even when the catalog did not change). Serialized by catMu.
func (w *Worker) applyCatalog(changed []string) error {
	w.catMu.Lock()
	defer w.catMu.Unlock()
	if w.leaving.Load() {
		return nil
	}
	cat := w.srv.Catalog().Filter(w.opts.Filter)
	pool := cat.Hash()
	old := w.served.Load()
	if old != nil && old.pool == pool {
		if len(changed) > 0 {
			w.announce(false, changed)
		}
		return nil
	}
	raw, err := json.Marshal(cat)
	if err != nil {
		return err
	}
	now := &served{cat: cat, pool: pool, json: raw}
	want := map[string]nats.MsgHandler{
		w.subj.UnnamedRequests():  w.onRequest,
		w.subj.PoolRequests(pool): w.onRequest,
		w.subj.Catalog(pool):      w.onCatalog,
	}
	for _, t := range cat.Tools {
		want[w.subj.Request(protocol.MethodToolsCall, t.Name)] = w.onRequest
	}
	for _, p := range cat.Prompts {
		want[w.subj.Request(protocol.MethodPromptsGet, p.Name)] = w.onRequest
	}
	w.mu.Lock()
	closed := w.closed || w.draining
	w.mu.Unlock()
	if closed {
		return nil
	}
	// Subscribe the new subjects before dropping the old ones, so the
	// worker is never briefly absent from a subject it keeps serving.
	for subj, h := range want {
		if _, ok := w.reqSubs[subj]; ok {
			continue
		}
		queue := bus.WorkerQueue
		if subj == w.subj.Catalog(pool) {
			queue = bus.CatalogQueue
		}
		s, err := w.nc.QueueSubscribe(subj, queue, h)
		if err != nil {
			return fmt.Errorf("worker: subscribing to %s: %w", subj, err)
		}
		_ = s.SetPendingLimits(-1, 64<<20)
		w.reqSubs[subj] = s
	}
	w.served.Store(now)
	for subj, s := range w.reqSubs {
		if _, ok := want[subj]; !ok {
			_ = s.Unsubscribe()
			delete(w.reqSubs, subj)
		}
	}
	if err := w.nc.FlushTimeout(5 * time.Second); err != nil {
		return fmt.Errorf("worker: flushing subscriptions: %w", err)
	}
	var kinds []string
	if old != nil {
		kinds = mcp.SameLists(old.cat, cat)
	}
	for _, k := range changed {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	w.announce(false, kinds)
	return nil
}

// announce publishes the worker's heartbeat.
func (w *Worker) announce(leaving bool, changed []string) {
	s := w.served.Load()
	if s == nil {
		return
	}
	a := bus.Announcement{Worker: w.opts.ID, Pool: s.pool, IntervalMs: w.opts.AnnounceInterval.Milliseconds(), Leaving: leaving, Changed: changed}
	b, _ := json.Marshal(&a)
	if err := w.nc.Publish(w.subj.Announce(), b); err != nil {
		w.log.Warn("worker: announcing", "err", err)
	}
}

// heartbeats announces the worker every AnnounceInterval and tells each
// request's frontend every HeartbeatInterval that the worker still holds
// the request (so a dead worker is detected without waiting for the
// request's deadline), until stop closes. One goroutine for all requests.
func (w *Worker) heartbeats(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ann := time.NewTicker(w.opts.AnnounceInterval)
	defer ann.Stop()
	var beat <-chan time.Time
	if w.opts.HeartbeatInterval > 0 {
		t := time.NewTicker(w.opts.HeartbeatInterval)
		defer t.Stop()
		beat = t.C
	}
	payload := []byte(w.opts.ID)
	var running []*inflight
	for {
		select {
		case <-stop:
			return
		case <-ann.C:
			if !w.leaving.Load() {
				w.announce(false, nil)
			}
		case <-beat:
			w.mu.Lock()
			running = running[:0]
			for _, f := range w.inflight {
				running = append(running, f)
			}
			w.mu.Unlock()
			for _, f := range running {
				f.publish(bus.FrameHeartbeat, payload, false)
			}
			clear(running)
		}
	}
}

// onCatalog answers a frontend's request for the worker's catalog.
func (w *Worker) onCatalog(m *nats.Msg) {
	if s := w.served.Load(); s != nil && m.Reply != "" {
		_ = m.Respond(s.json)
	}
}

// servedCatalog returns what the worker serves.
func (w *Worker) servedCatalog() *mcp.Catalog {
	if s := w.served.Load(); s != nil {
		return s.cat
	}
	return w.srv.Catalog().Filter(w.opts.Filter)
}

// Pool returns the worker's pool: the hash of the catalog it serves.
func (w *Worker) Pool() string {
	if s := w.served.Load(); s != nil {
		return s.pool
	}
	return ""
}
