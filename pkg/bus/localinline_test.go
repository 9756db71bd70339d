package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// TestLocalInline: on a Local, an inline handler has run when Publish
// returns (no hand-off to another goroutine), and it may publish to other
// inline handlers and subscribe while it runs (the index is not locked).
func TestLocalInline(t *testing.T) {
	l := bus.NewLocal(quietLogger())
	t.Cleanup(l.Close)
	var got, chained atomic.Int32
	if _, err := bus.SubscribeInline(l, "li.b", "", func(*nats.Msg) { chained.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.SubscribeInline(l, "li.a", "q", func(m *nats.Msg) {
		got.Add(1)
		if err := l.Publish("li.b", m.Data); err != nil {
			t.Errorf("Publish from an inline handler: %v", err)
		}
		s, err := l.Subscribe("li.c", func(*nats.Msg) {})
		if err != nil {
			t.Errorf("Subscribe from an inline handler: %v", err)
			return
		}
		_ = s.Unsubscribe()
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Publish("li.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if g, c := got.Load(), chained.Load(); g != int32(i+1) || c != int32(i+1) {
			t.Fatalf("after Publish %d: handler ran %d times, chained %d, want %d", i+1, g, c, i+1)
		}
	}
	l.Close()
	if err := l.Publish("li.a", nil); err == nil {
		t.Error("Publish after Close succeeded")
	}
	if got.Load() != 3 {
		t.Errorf("a handler ran after Close")
	}
}

// TestLocalInlineDrainRouted: a message a publisher routed to an inline
// subscription before it was drained is still handled, and the drain
// waits for it. Here the publisher is held in the first
// subscription's handler while the second, already chosen, is drained.
func TestLocalInlineDrainRouted(t *testing.T) {
	l := bus.NewLocal(quietLogger())
	t.Cleanup(l.Close)
	entered, release := make(chan struct{}), make(chan struct{})
	if _, err := bus.SubscribeInline(l, "ld.x", "", func(*nats.Msg) {
		close(entered)
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	var second atomic.Int32
	s, err := bus.SubscribeInline(l, "ld.x", "", func(*nats.Msg) { second.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	pubDone := make(chan error, 1)
	go func() { pubDone <- l.Publish("ld.x", []byte("m")) }()
	select {
	case <-entered:
	case <-time.After(deadline):
		t.Fatal("the first handler was not called")
	}
	// The second call is reserved: the drain cannot end before it runs.
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := s.DrainWait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DrainWait with a routed message not yet handled: %v, want context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-pubDone; err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if n := second.Load(); n != 1 {
		t.Errorf("the drained subscription handled %d routed messages, want 1", n)
	}
}

// TestLocalPublishAllocs: a publish allocates only the messages it
// delivers (nothing for its bookkeeping of inline calls while few).
func TestLocalPublishAllocs(t *testing.T) {
	l := bus.NewLocal(quietLogger())
	t.Cleanup(l.Close)
	data := []byte("payload")
	if got := testing.AllocsPerRun(100, func() { _ = l.Publish("la.none", data) }); got != 0 {
		t.Errorf("a publish nothing takes: %v allocations, want 0", got)
	}
	if _, err := bus.SubscribeInline(l, "la.x", "", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(100, func() { _ = l.Publish("la.x", data) }); got != 1 {
		t.Errorf("a publish to one inline subscription: %v allocations, want 1 (the message)", got)
	}
}
