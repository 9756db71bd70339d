package bus_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// suiteInline checks SubscribeInline's part of the contract on every
// Conn: it is a subscription like Subscribe's and QueueSubscribe's
// (copies, one member per queue group, per-publisher order, a responder
// for requests, Unsubscribe and a DrainWait that waits for the handler).
func suiteInline(t *testing.T, conn func(string) bus.Conn) {
	pub, sub := conn("pub"), conn("sub")
	all := newInbox()
	if _, err := bus.SubscribeInline(sub, "i.x", "", all.handle); err != nil {
		t.Fatalf("SubscribeInline: %v", err)
	}
	group := newInbox() // what the queue group's members got, in all
	for range 3 {
		if _, err := bus.SubscribeInline(sub, "i.x", "g", group.handle); err != nil {
			t.Fatalf("SubscribeInline in a group: %v", err)
		}
	}
	if _, err := bus.SubscribeInline(sub, "i.x", "bad queue", all.handle); !errors.Is(err, nats.ErrBadQueueName) {
		t.Errorf("a queue name with a space: %v, want nats.ErrBadQueueName", err)
	}
	flushConn(t, sub)
	const n = 50
	for i := range n {
		data := []byte(strconv.Itoa(i))
		if err := pub.Publish("i.x", data); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		data[0] = 'x' // the caller's again once published
	}
	for i, m := range all.wait(t, n) {
		if string(m.Data) != strconv.Itoa(i) {
			t.Fatalf("message %d is %q: out of order or not a copy", i, m.Data)
		}
	}
	group.wait(t, n)
	flushConn(t, pub, sub)
	if got := len(group.snapshot()); got != n {
		t.Errorf("the queue group's members got %d messages in all, want %d (one member each)", got, n)
	}

	// A responder: its answer reaches the requester.
	if _, err := bus.SubscribeInline(sub, "i.echo", "w", func(m *nats.Msg) { _ = bus.Respond(sub, m, append([]byte("re:"), m.Data...)) }); err != nil {
		t.Fatalf("SubscribeInline: %v", err)
	}
	flushConn(t, sub)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if r, err := pub.RequestWithContext(ctx, "i.echo", []byte("q")); err != nil || string(r.Data) != "re:q" {
		t.Errorf("request to an inline responder: %v, %v", r, err)
	}

	// Unsubscribe: no more messages.
	gone, kept := newInbox(), newInbox()
	s, err := bus.SubscribeInline(sub, "i.u", "", gone.handle)
	if err != nil {
		t.Fatalf("SubscribeInline: %v", err)
	}
	subscribe(t, sub, "i.u", kept)
	flushConn(t, sub)
	publish(t, pub, "i.u", "before")
	gone.wait(t, 1)
	if err := s.Unsubscribe(); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	flushConn(t, sub)
	publish(t, pub, "i.u", "after")
	kept.wait(t, 2)
	if got := len(gone.snapshot()); got != 1 {
		t.Errorf("an unsubscribed inline handler got %d messages, want 1", got)
	}
}

// suiteInlineDrain: DrainWait returns once the handler's running call has
// returned, not before, and the drained subscription gets nothing more.
func suiteInlineDrain(t *testing.T, conn func(string) bus.Conn) {
	pub, sub := conn("pub"), conn("sub")
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	calls, returned := 0, 0
	s, err := bus.SubscribeInline(sub, "id.x", "", func(*nats.Msg) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
		mu.Lock()
		returned++
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("SubscribeInline: %v", err)
	}
	flushConn(t, sub)
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Publish("id.x", []byte("held")) }() // on Local, Publish runs the handler
	select {
	case <-entered:
	case <-time.After(deadline):
		t.Fatal("the handler was not called")
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := s.DrainWait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DrainWait with the handler running: %v, want context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-pubDone; err != nil {
		t.Fatalf("Publish: %v", err)
	}
	kept := newInbox()
	subscribe(t, sub, "id.x", kept)
	flushConn(t, sub)
	publish(t, pub, "id.x", "late")
	kept.wait(t, 1)
	flushConn(t, pub, sub)
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 || returned != 1 {
		t.Errorf("a drained inline subscription: %d calls, %d returned, want 1 and 1", calls, returned)
	}
}
