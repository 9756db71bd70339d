package bus_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// The suite's tests of a subscription's end and limits, and of a
// connection's (see suite_test.go).

func suiteUnsubscribe(t *testing.T, conn func(string) bus.Conn) {
	pub, sub := conn("pub"), conn("sub")
	gone, kept := newInbox(), newInbox()
	s := subscribe(t, sub, "u.x", gone)
	subscribe(t, sub, "u.x", kept)
	flushConn(t, sub)
	publish(t, pub, "u.x", "before")
	gone.wait(t, 1)
	kept.wait(t, 1)
	if err := s.Unsubscribe(); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	flushConn(t, sub)
	publish(t, pub, "u.x", "after")
	kept.wait(t, 2)
	if n := len(gone.snapshot()); n != 1 {
		t.Errorf("an unsubscribed handler got %d messages, want 1", n)
	}
	if err := s.Unsubscribe(); err == nil {
		t.Error("a second Unsubscribe succeeded")
	}
}

func suiteDrain(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("d")
	release := make(chan struct{})
	b, kept := newInbox(), newInbox()
	s, err := nc.Subscribe("d.x", func(m *nats.Msg) {
		<-release
		b.handle(m)
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	subscribe(t, nc, "d.x", kept)
	flushConn(t, nc)
	for i := range 5 {
		publish(t, nc, "d.x", strconv.Itoa(i))
	}
	kept.wait(t, 5) // the 5 are at the subscriptions too
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	go func() { errc <- s.DrainWait(ctx) }()
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("DrainWait: %v", err)
	}
	ms := b.snapshot() // all delivered once DrainWait returns
	if len(ms) != 5 {
		t.Fatalf("drained subscription delivered %d messages before DrainWait returned, want the 5 it had", len(ms))
	}
	for i, m := range ms {
		if string(m.Data) != strconv.Itoa(i) {
			t.Errorf("message %d is %q", i, m.Data)
		}
	}
	publish(t, nc, "d.x", "late")
	kept.wait(t, 6)
	if n := len(b.snapshot()); n != 5 {
		t.Errorf("a drained subscription got %d messages, want 5", n)
	}
	// A drain that cannot finish in time: the context's error.
	block := make(chan struct{})
	defer close(block)
	s2, _ := nc.Subscribe("d.y", func(*nats.Msg) { <-block })
	publish(t, nc, "d.y", "")
	flushConn(t, nc)
	sctx, scancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer scancel()
	if err := s2.DrainWait(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DrainWait with a handler blocked: %v, want context.DeadlineExceeded", err)
	}
}

func suiteSlowConsumer(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("slow")
	release := make(chan struct{})
	b := newInbox()
	s, err := nc.Subscribe("sc.x", func(m *nats.Msg) {
		<-release
		b.handle(m)
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := s.SetPendingLimits(2, -1); err != nil {
		t.Fatalf("SetPendingLimits: %v", err)
	}
	if err := s.SetPendingLimits(0, 0); err == nil {
		t.Error("SetPendingLimits(0, 0) succeeded")
	}
	flushConn(t, nc)
	for i := range 20 {
		publish(t, nc, "sc.x", strconv.Itoa(i)) // never blocks
	}
	flushConn(t, nc)
	close(release)
	// "end" is dropped too until the backlog is delivered.
	var ms []*nats.Msg
	for len(ms) == 0 || string(ms[len(ms)-1].Data) != "end" {
		publish(t, nc, "sc.x", "end")
		flushConn(t, nc)
		ms = b.wait(t, 1)
	}
	// One in the handler, 2 pending (or 1 if the handler was slow to take
	// the first), the rest lost; then the ends.
	n := 0
	for _, m := range ms {
		if string(m.Data) != "end" {
			n++
		}
	}
	if n < 2 || n > 3 {
		t.Errorf("a slow consumer of 2 pending messages got %d of 20", n)
	}
}

func suiteClose(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("closer")
	b := newInbox()
	s := subscribe(t, nc, "cl.x", b)
	nc.Close()
	nc.Close() // idempotent
	if nc.IsConnected() {
		t.Error("connected after Close")
	}
	if err := nc.Publish("cl.x", nil); err == nil {
		t.Error("Publish after Close succeeded")
	}
	if _, err := nc.Subscribe("cl.y", b.handle); err == nil {
		t.Error("Subscribe after Close succeeded")
	}
	if err := nc.FlushTimeout(deadline); err == nil {
		t.Error("FlushTimeout after Close succeeded")
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if _, err := nc.RequestWithContext(ctx, "cl.x", nil); err == nil {
		t.Error("RequestWithContext after Close succeeded")
	}
	if err := s.Unsubscribe(); err == nil {
		t.Error("Unsubscribe after Close succeeded")
	}
}

func suiteMaxPayload(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("max")
	max := nc.MaxPayload()
	if max < 1<<20 {
		t.Fatalf("MaxPayload %d, want at least 1 MiB", max)
	}
	b := newInbox()
	subscribe(t, nc, "mp.x", b)
	flushConn(t, nc)
	if err := nc.Publish("mp.x", make([]byte, max)); err != nil {
		t.Errorf("a message of MaxPayload bytes: %v", err)
	}
	if err := nc.Publish("mp.x", make([]byte, max+1)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("a message over MaxPayload: %v, want nats.ErrMaxPayload", err)
	}
	if ms := b.wait(t, 1); len(ms[0].Data) != int(max) {
		t.Errorf("got %d bytes", len(ms[0].Data))
	}
}

func suiteInvalidSubscribers(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("bad")
	for _, subj := range []string{"", "a b"} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err == nil {
			t.Errorf("Subscribe(%q) succeeded", subj)
		}
	}
	if err := nc.Publish("", nil); err == nil {
		t.Error("Publish to an empty subject succeeded")
	}
	if _, err := nc.QueueSubscribe("a.b", "a b", func(*nats.Msg) {}); err == nil {
		t.Error("QueueSubscribe with a space in the group succeeded")
	}
}
