package frontend

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/prometheus/client_golang/prometheus"
)

// waitingStore is a store whose session calls may wait (as Redis's do).
type waitingStore struct{ sessionstore.Store }

// TestSessionCallDeadline: a session-store call made for a request is
// bounded by storeTimeout, but for a store whose session calls never wait
// (Memory), which gets the request's own context, with no timer.
func TestSessionCallDeadline(t *testing.T) {
	mem, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close(context.Background()) })
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()

	// Built by New, as the all-in-one builds it: the store is timed for
	// the metrics, and stays immediate.
	nc := bus.NewLocal(nil)
	t.Cleanup(func() { nc.Close() })
	f, err := New(nc, Options{Store: mem, Metrics: NewMetrics(prometheus.NewRegistry(), mem)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := f.sessionCall(parent)
	if ctx != parent {
		t.Errorf("Memory: the call got a context of its own, want the request's")
	}
	cancel()
	if parent.Err() != nil {
		t.Error("cancelling the call cancelled the request")
	}

	f = &Frontend{opts: Options{Store: waitingStore{mem}}}
	before := time.Now()
	ctx, cancel = f.sessionCall(parent)
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(before.Add(storeTimeout)) || deadline.After(time.Now().Add(storeTimeout)) {
		t.Errorf("a store that may wait: deadline %v (set %v), want storeTimeout from now", deadline, ok)
	}
	cancel()
	if ctx.Err() == nil || parent.Err() != nil {
		t.Errorf("cancel: the call's context %v, the request's %v", ctx.Err(), parent.Err())
	}
}
