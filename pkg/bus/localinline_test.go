package bus_test

import (
	"sync/atomic"
	"testing"

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
