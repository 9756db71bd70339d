package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// busFactory starts a new bus for one test (stopped when it ends) and
// returns how to open a connection to it (closed when the test ends).
// Connections of one bus see each other's messages.
type busFactory = func(t *testing.T) func(name string) bus.Conn

// runBusSuite checks every point of the [bus.Conn] contract against the
// implementation newBus makes (suite_nats_test.go, suite_local_test.go).
func runBusSuite(t *testing.T, newBus busFactory) {
	for name, f := range map[string]func(*testing.T, func(string) bus.Conn){
		"PublishSubscribe":   suitePublishSubscribe,
		"Wildcards":          suiteWildcards,
		"QueueGroups":        suiteQueueGroups,
		"RequestReply":       suiteRequestReply,
		"NoResponders":       suiteNoResponders,
		"Ordering":           suiteOrdering,
		"ConcurrentPublish":  suiteConcurrentPublish,
		"Unsubscribe":        suiteUnsubscribe,
		"Drain":              suiteDrain,
		"SlowConsumer":       suiteSlowConsumer,
		"Close":              suiteClose,
		"MaxPayload":         suiteMaxPayload,
		"InvalidSubscribers": suiteInvalidSubscribers,
		"Inline":             suiteInline,
		"InlineDrain":        suiteInlineDrain,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, newBus(t))
		})
	}
}

// inbox collects the messages a subscription's handler receives.
type inbox struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	got  chan struct{} // cap 1: a message arrived
}

func newInbox() *inbox { return &inbox{got: make(chan struct{}, 1)} }

func (b *inbox) handle(m *nats.Msg) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	select {
	case b.got <- struct{}{}:
	default:
	}
}

func (b *inbox) snapshot() []*nats.Msg {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*nats.Msg(nil), b.msgs...)
}

// wait returns the messages once there are at least n, failing the test
// after the deadline.
func (b *inbox) wait(t *testing.T, n int) []*nats.Msg {
	t.Helper()
	timeout := time.After(deadline)
	for {
		if ms := b.snapshot(); len(ms) >= n {
			return ms
		}
		select {
		case <-b.got:
		case <-timeout:
			t.Fatalf("%d messages after %s, want %d", len(b.snapshot()), deadline, n)
		}
	}
}

func subscribe(t *testing.T, nc bus.Conn, subject string, b *inbox) bus.Subscription {
	t.Helper()
	s, err := nc.Subscribe(subject, b.handle)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", subject, err)
	}
	return s
}

func flushConn(t *testing.T, ncs ...bus.Conn) {
	t.Helper()
	for _, nc := range ncs {
		if err := nc.FlushTimeout(deadline); err != nil {
			t.Fatalf("FlushTimeout: %v", err)
		}
	}
}

func publish(t *testing.T, nc bus.Conn, subject, data string) {
	t.Helper()
	if err := nc.Publish(subject, []byte(data)); err != nil {
		t.Fatalf("Publish(%s): %v", subject, err)
	}
}

func suitePublishSubscribe(t *testing.T, conn func(string) bus.Conn) {
	pub, sub := conn("pub"), conn("sub")
	if !pub.IsConnected() || !sub.IsConnected() {
		t.Fatal("a new connection is not connected")
	}
	b := newInbox()
	subscribe(t, sub, "s.one", b)
	ch := make(chan *nats.Msg, 4)
	if _, err := sub.ChanSubscribe("s.one", ch); err != nil {
		t.Fatalf("ChanSubscribe: %v", err)
	}
	flushConn(t, sub)
	data := []byte("hello")
	m := &nats.Msg{Subject: "s.one", Reply: "s.reply", Data: data, Header: nats.Header{"K": []string{"v"}}}
	if err := pub.PublishMsg(m); err != nil {
		t.Fatalf("PublishMsg: %v", err)
	}
	data[0], m.Header["K"][0] = 'j', "changed" // the caller's again once published
	got := b.wait(t, 1)[0]
	if string(got.Data) != "hello" || got.Subject != "s.one" || got.Reply != "s.reply" || got.Header.Get("K") != "v" {
		t.Errorf("handler got %q on %s reply %s header %v", got.Data, got.Subject, got.Reply, got.Header)
	}
	select {
	case c := <-ch:
		if string(c.Data) != "hello" || c.Header.Get("K") != "v" {
			t.Errorf("channel got %q header %v", c.Data, c.Header)
		}
	case <-time.After(deadline):
		t.Fatal("nothing in the channel")
	}
}

func suiteWildcards(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("w")
	star, tail, exact := newInbox(), newInbox(), newInbox()
	subscribe(t, nc, "w.*.c", star)
	subscribe(t, nc, "w.>", tail)
	subscribe(t, nc, "w.b.c", exact)
	flushConn(t, nc)
	for _, s := range []string{"w", "w.b.c.d", "w.b.c", "w.x.c", "w.x", "v.b.c"} {
		publish(t, nc, s, s)
	}
	publish(t, nc, "w.b.c", "marker")
	subjects := func(ms []*nats.Msg) []string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Data))
		}
		return out
	}
	for name, c := range map[string]struct {
		b    *inbox
		want []string
	}{
		"w.*.c": {star, []string{"w.b.c", "w.x.c"}},
		"w.>":   {tail, []string{"w.b.c.d", "w.b.c", "w.x.c", "w.x"}},
		"w.b.c": {exact, []string{"w.b.c"}},
	} {
		// The marker, published last, is last: nothing else matched.
		got := subjects(c.b.wait(t, len(c.want)+1))
		if want := append(c.want, "marker"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s got %v, want %v", name, got, want)
		}
	}
}

func suiteQueueGroups(t *testing.T, conn func(string) bus.Conn) {
	const n = 300
	pub := conn("pub")
	group := newInbox() // what the members of group "workers" got
	var counts [3]int
	var mu sync.Mutex
	for i := range counts {
		nc := conn("member" + strconv.Itoa(i))
		if _, err := nc.QueueSubscribe("q.work", "workers", func(m *nats.Msg) {
			mu.Lock()
			counts[i]++
			mu.Unlock()
			group.handle(m)
		}); err != nil {
			t.Fatalf("QueueSubscribe: %v", err)
		}
		flushConn(t, nc)
	}
	other, plain := newInbox(), newInbox()
	onc := conn("other")
	if _, err := onc.QueueSubscribe("q.work", "others", other.handle); err != nil {
		t.Fatalf("QueueSubscribe: %v", err)
	}
	subscribe(t, onc, "q.work", plain)
	flushConn(t, onc)
	for i := range n {
		publish(t, pub, "q.work", strconv.Itoa(i))
	}
	publish(t, pub, "q.work", "last")
	other.wait(t, n+1)
	plain.wait(t, n+1)
	seen := map[string]int{}
	for _, m := range group.wait(t, n+1) {
		seen[string(m.Data)]++
	}
	for i := range n {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("message %d delivered %d times in the group, want once", i, c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, c := range counts {
		if c == 0 {
			t.Errorf("member %d got none of %d messages (%v): not spread", i, n+1, counts)
		}
	}
}

func suiteRequestReply(t *testing.T, conn func(string) bus.Conn) {
	srv, cli := conn("srv"), conn("cli")
	s, err := srv.Subscribe("r.echo", func(m *nats.Msg) {
		if m.Header.Get("K") != "" {
			_ = srv.PublishMsg(&nats.Msg{Subject: m.Reply, Header: m.Header, Data: m.Data})
			return
		}
		_ = bus.Respond(srv, m, append([]byte("re:"), m.Data...))
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	_ = s.SetPendingLimits(-1, 64<<20)
	flushConn(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	m, err := cli.RequestWithContext(ctx, "r.echo", []byte("x"))
	if err != nil || string(m.Data) != "re:x" {
		t.Fatalf("RequestWithContext: %v, %v", err, m)
	}
	m, err = cli.RequestMsgWithContext(ctx, &nats.Msg{Subject: "r.echo", Data: []byte("y"), Header: nats.Header{"K": []string{"v"}}})
	if err != nil || string(m.Data) != "y" || m.Header.Get("K") != "v" {
		t.Fatalf("RequestMsgWithContext: %v, %v", err, m)
	}
	if err := bus.Respond(cli, &nats.Msg{Subject: "r.echo"}, nil); !errors.Is(err, nats.ErrMsgNoReply) {
		t.Errorf("Respond without a reply subject: %v", err)
	}
	// Unanswered: the context's error.
	_, _ = srv.Subscribe("r.silent", func(*nats.Msg) {})
	flushConn(t, srv)
	sctx, scancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer scancel()
	if _, err := cli.RequestWithContext(sctx, "r.silent", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("unanswered request: %v, want context.DeadlineExceeded", err)
	}
}

func suiteNoResponders(t *testing.T, conn func(string) bus.Conn) {
	nc := conn("nr")
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if _, err := nc.RequestWithContext(ctx, "nr.nobody", nil); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("request to nobody: %v, want nats.ErrNoResponders", err)
	}
	// A message with a reply subject: the reply subject gets the status.
	b := newInbox()
	subscribe(t, nc, "nr.stream.*", b)
	flushConn(t, nc)
	if err := nc.PublishMsg(&nats.Msg{Subject: "nr.nobody", Reply: "nr.stream.1", Data: []byte("req")}); err != nil {
		t.Fatalf("PublishMsg: %v", err)
	}
	m := b.wait(t, 1)[0]
	if k, _ := bus.ParseFrame(m.Data, m.Header.Get("Status")); k != bus.FrameNoResponders {
		t.Errorf("reply subject got %q with header %v: not no responders", m.Data, m.Header)
	}
}

func suiteOrdering(t *testing.T, conn func(string) bus.Conn) {
	const n = 2000
	pub, sub := conn("pub"), conn("sub")
	b := newInbox()
	s := subscribe(t, sub, "o.seq", b)
	_ = s.SetPendingLimits(-1, 64<<20)
	ch := make(chan *nats.Msg, n)
	if _, err := sub.ChanSubscribe("o.seq", ch); err != nil {
		t.Fatalf("ChanSubscribe: %v", err)
	}
	flushConn(t, sub)
	for i := range n {
		publish(t, pub, "o.seq", strconv.Itoa(i))
	}
	for i, m := range b.wait(t, n) {
		if string(m.Data) != strconv.Itoa(i) {
			t.Fatalf("handler: message %d is %q", i, m.Data)
		}
	}
	for i := range n {
		if m := <-ch; string(m.Data) != strconv.Itoa(i) {
			t.Fatalf("channel: message %d is %q", i, m.Data)
		}
	}
}

func suiteConcurrentPublish(t *testing.T, conn func(string) bus.Conn) {
	const pubs, each = 8, 200
	sub := conn("sub")
	b := newInbox()
	s := subscribe(t, sub, "c.*", b)
	_ = s.SetPendingLimits(-1, 64<<20)
	flushConn(t, sub)
	var wg sync.WaitGroup
	for p := range pubs {
		nc := conn("pub" + strconv.Itoa(p))
		wg.Go(func() {
			for i := range each {
				_ = nc.Publish("c."+strconv.Itoa(p), []byte(strconv.Itoa(i)))
			}
		})
	}
	wg.Wait()
	next := map[string]int{}
	for _, m := range b.wait(t, pubs*each) {
		if string(m.Data) != strconv.Itoa(next[m.Subject]) {
			t.Fatalf("%s: got %q, want %d (publisher order lost)", m.Subject, m.Data, next[m.Subject])
		}
		next[m.Subject]++
	}
}
