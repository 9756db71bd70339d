package worker

import (
	"context"
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
}

// flushTimeout bounds the flush of the worker's subscriptions.
const flushTimeout = 5 * time.Second

// applyCatalog makes the worker's request subscriptions match what it
// serves: one queue subscription per tool (tools/call) and prompt
// (prompts/get), one for its pool (requests routed by URI or reference),
// one for methods any worker serves, and (through the announcer) its
// pool's catalog requests. It announces the result; changed lists the
// kinds a handler reported changed (announced even when the catalog did
// not change). ctx bounds the flush of the subscriptions. Serialized by
// catMu.
func (w *Worker) applyCatalog(ctx context.Context, changed []string) error {
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
			w.ann.Announce(changed)
		}
		return nil
	}
	raw, err := json.Marshal(cat)
	if err != nil {
		return err
	}
	now := &served{cat: cat, pool: pool}
	onRequest := w.guard("a request", w.onRequest)
	want := map[string]nats.MsgHandler{
		w.subj.UnnamedRequests():  onRequest,
		w.subj.PoolRequests(pool): onRequest,
	}
	for _, t := range cat.Tools {
		want[w.subj.Request(protocol.MethodToolsCall, t.Name)] = onRequest
	}
	for _, p := range cat.Prompts {
		want[w.subj.Request(protocol.MethodPromptsGet, p.Name)] = onRequest
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
		s, err := bus.SubscribeInline(w.nc, subj, bus.WorkerQueue, h)
		if err != nil {
			return fmt.Errorf("worker: subscribing to %s: %w", subj, err)
		}
		_ = s.SetPendingLimits(-1, 64<<20)
		w.reqSubs[subj] = s
	}
	if err := w.ann.Serve(pool, raw); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.served.Store(now)
	for subj, s := range w.reqSubs {
		if _, ok := want[subj]; !ok {
			_ = s.Unsubscribe()
			delete(w.reqSubs, subj)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := w.nc.FlushWithContext(fctx); err != nil {
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
	w.ann.Announce(kinds)
	return nil
}

// heartbeats tells each request's frontend every HeartbeatInterval that
// the worker still holds the request (so a dead worker is detected without
// waiting for the request's deadline), until stop closes. One goroutine
// for all requests.
func (w *Worker) heartbeats(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	payload := []byte(w.opts.ID)
	var running []*inflight
	for {
		select {
		case <-stop:
			return
		case <-t.C:
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
