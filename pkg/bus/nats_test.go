package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// deadline bounds every wait on the real server.
const deadline = 5 * time.Second

// quietLogger drops the connection-state logs of the tests.
func quietLogger() *slog.Logger {
	return slog.New(slog.DiscardHandler)
}

// startEmbedded starts a real embedded NATS server that is shut down when
// the test ends.
func startEmbedded(t testing.TB, opts *bus.EmbeddedOptions) *bus.Embedded {
	t.Helper()
	e, err := bus.StartEmbedded(opts)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// connect opens an in-process connection closed when the test ends.
func connect(t testing.TB, e *bus.Embedded, name string) *nats.Conn {
	t.Helper()
	nc, err := e.Connect(name)
	if err != nil {
		t.Fatalf("Connect(%s): %v", name, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func flush(t testing.TB, ncs ...*nats.Conn) {
	t.Helper()
	for _, nc := range ncs {
		if err := nc.FlushTimeout(deadline); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
}

func requestEnvelope(t testing.TB, fe, stream string, id int64) []byte {
	t.Helper()
	env, err := bus.EncodeRequest(&bus.RequestHeader{Era: protocol.EraModern, Frontend: fe, Stream: stream},
		protocol.AppendRequest(nil, protocol.Int64ID(id), protocol.MethodToolsCall, []byte(`{"name":"a.b"}`)))
	if err != nil {
		t.Fatalf("EncodeRequest: %v", err)
	}
	return env
}

// TestNoRespondersReachesTheFrontendStream publishes a request nobody
// serves with its reply set to a frontend stream: NATS answers that stream
// at once with a 503 status, which ParseFrame reports as FrameNoResponders.
func TestNoRespondersReachesTheFrontendStream(t *testing.T) {
	e := startEmbedded(t, &bus.EmbeddedOptions{Logger: quietLogger()})
	fe := connect(t, e, "frontend")
	subj := bus.Subjects{Prefix: "nr"}

	// A callback subscription, as the frontend's: a synchronous one would
	// turn the status message into nats.ErrNoResponders and drop it.
	frames := make(chan *nats.Msg, 4)
	if _, err := fe.Subscribe(subj.FrontendStreams("fe-1"), func(m *nats.Msg) { frames <- m }); err != nil {
		t.Fatal(err)
	}
	flush(t, fe)

	msg := nats.NewMsg(subj.Request(protocol.MethodToolsCall, "nobody.serves.this"))
	msg.Reply = subj.Stream("fe-1", "st-1")
	msg.Data = requestEnvelope(t, "fe-1", "st-1", 1)
	if err := fe.PublishMsg(msg); err != nil {
		t.Fatalf("PublishMsg: %v", err)
	}

	var got *nats.Msg
	select {
	case got = <-frames:
	case <-time.After(deadline):
		t.Fatalf("no frame on %s within %v", subj.FrontendStreams("fe-1"), deadline)
	}
	if got.Subject != msg.Reply {
		t.Errorf("frame subject = %q, want the reply subject %q", got.Subject, msg.Reply)
	}
	if id := bus.StreamID(got.Subject); id != "st-1" {
		t.Errorf("StreamID = %q, want st-1", id)
	}
	status := got.Header.Get("Status")
	if status != "503" {
		t.Errorf("Status header = %q, want 503 (header %v)", status, got.Header)
	}
	if kind, payload := bus.ParseFrame(got.Data, status); kind != bus.FrameNoResponders || payload != nil {
		t.Errorf("ParseFrame = %q, %q; want FrameNoResponders", kind, payload)
	}
	// Once a worker listens, the same publish reaches it instead.
	w := connect(t, e, "worker")
	reqs := make(chan *nats.Msg, 1)
	if _, err := w.QueueSubscribe(subj.AllRequests(), bus.WorkerQueue, func(m *nats.Msg) { reqs <- m }); err != nil {
		t.Fatal(err)
	}
	flush(t, w)
	if err := fe.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-reqs:
		if m.Reply != msg.Reply {
			t.Errorf("worker got reply %q, want %q", m.Reply, msg.Reply)
		}
	case m := <-frames:
		t.Fatalf("frontend got %q (status %q) although a worker listens", m.Data, m.Header.Get("Status"))
	case <-time.After(deadline):
		t.Fatalf("the worker got no request within %v", deadline)
	}
}

// TestQueueGroupDeliversOnce checks that each request published to a
// request subject reaches exactly one of two workers in WorkerQueue.
func TestQueueGroupDeliversOnce(t *testing.T) {
	e := startEmbedded(t, &bus.EmbeddedOptions{Logger: quietLogger()})
	var subj bus.Subjects
	fe := connect(t, e, "frontend")
	w1, w2 := connect(t, e, "worker-1"), connect(t, e, "worker-2")

	var subs []*nats.Subscription
	for _, w := range []*nats.Conn{w1, w2} {
		s, err := w.QueueSubscribeSync(subj.AllRequests(), bus.WorkerQueue)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	flush(t, w1, w2)

	const n = 40
	target := subj.Request(protocol.MethodToolsCall, "a.b")
	for i := range n {
		msg := nats.NewMsg(target)
		msg.Reply = subj.Stream("fe-1", fmt.Sprintf("st-%d", i))
		msg.Data = requestEnvelope(t, "fe-1", fmt.Sprintf("st-%d", i), int64(i))
		if err := fe.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	// The server has routed every message once fe's flush returns; each
	// worker's flush then returns after the messages routed to it.
	flush(t, fe, w1, w2)

	got := map[string]int{}
	total := 0
	for i, s := range subs {
		pending, _, err := s.Pending()
		if err != nil {
			t.Fatal(err)
		}
		for range pending {
			m, err := s.NextMsg(deadline)
			if err != nil {
				t.Fatalf("worker %d: %v", i+1, err)
			}
			if m.Subject != target {
				t.Errorf("subject = %q, want %q", m.Subject, target)
			}
			h, raw, err := bus.DecodeRequest(m.Data)
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if m.Reply != subj.Stream(h.Frontend, h.Stream) {
				t.Errorf("reply %q does not match the header's stream %q", m.Reply, subj.Stream(h.Frontend, h.Stream))
			}
			if _, err := protocol.Decode(raw, 0); err != nil {
				t.Errorf("the forwarded message does not decode: %v", err)
			}
			got[h.Stream]++
			total++
		}
	}
	if total != n {
		t.Errorf("workers received %d requests in total, want %d", total, n)
	}
	for i := range n {
		if c := got[fmt.Sprintf("st-%d", i)]; c != 1 {
			t.Errorf("request st-%d delivered %d times, want once", i, c)
		}
	}
	// Nothing else arrives later either.
	flush(t, fe, w1, w2)
	for i, s := range subs {
		if pending, _, _ := s.Pending(); pending != 0 {
			t.Errorf("worker %d has %d more messages", i+1, pending)
		}
	}
}

func TestEmbeddedWithoutListener(t *testing.T) {
	e := startEmbedded(t, nil)
	if url := e.ClientURL(); url != "" {
		t.Errorf("ClientURL() = %q, want \"\" without a listener", url)
	}
	nc := connect(t, e, "in-process")
	sub, err := nc.SubscribeSync("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("x", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(deadline); err != nil || string(m.Data) != "hi" {
		t.Fatalf("NextMsg = %v, %v", m, err)
	}
}

// TestEmbeddedTCP starts the server on a free TCP port and dials it with
// bus.Connect, then checks Shutdown's context handling.
func TestEmbeddedTCP(t *testing.T) {
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1", Logger: quietLogger()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_ = e.Shutdown(ctx) // the test shuts it down; this only guards a failure midway
	})

	url := e.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL() = %q, want nats://127.0.0.1:<port>", url)
	}
	nc, err := bus.Connect(url, &bus.ConnectOptions{Name: "tcp-client", Logger: quietLogger(), ConnectTimeout: deadline})
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(nc.Close)
	if got := nc.ConnectedUrl(); got != url {
		t.Errorf("ConnectedUrl() = %q, want %q", got, url)
	}

	// A round trip between a TCP client and an in-process one.
	inproc := connect(t, e, "in-process")
	sub, err := inproc.SubscribeSync("tcp.test")
	if err != nil {
		t.Fatal(err)
	}
	flush(t, inproc)
	if err := nc.Publish("tcp.test", []byte("over tcp")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(deadline); err != nil || string(m.Data) != "over tcp" {
		t.Fatalf("NextMsg = %v, %v", m, err)
	}

	// A context that is already done bounds the wait: Shutdown returns its
	// error unless the server happened to stop first.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	returned := make(chan error, 1)
	go func() { returned <- e.Shutdown(cancelled) }()
	select {
	case err := <-returned:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown(cancelled) = %v, want nil or context.Canceled", err)
		}
	case <-time.After(deadline):
		t.Fatalf("Shutdown with a cancelled context did not return within %v", deadline)
	}

	// A live context waits for the shutdown to complete.
	ctx, cancelWait := context.WithTimeout(context.Background(), deadline)
	defer cancelWait()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := bus.Connect(url, &bus.ConnectOptions{Logger: quietLogger(), ConnectTimeout: time.Second}); err == nil {
		t.Errorf("Connect(%s) succeeded after Shutdown", url)
	}
}

func TestConnectFailsFast(t *testing.T) {
	// Port 1 on localhost refuses connections.
	_, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), ConnectTimeout: time.Second})
	if err == nil {
		t.Fatal("Connect to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "nats://127.0.0.1:1") {
		t.Errorf("error %q does not name the URL", err)
	}
}

// TestConnectList: --nats-url takes a comma-separated list of servers (the
// nodes of a cluster), which reaches nats.Connect as is. The first
// connection skips a server that refuses, and after the loss of the
// server it is on, the connection comes back on another one of the list.
func TestConnectList(t *testing.T) {
	var servers []*bus.Embedded
	urls := []string{"nats://127.0.0.1:1"} // port 1 on localhost refuses connections
	for range 2 {
		e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1", Logger: quietLogger()})
		if err != nil {
			t.Fatalf("StartEmbedded: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_ = e.Shutdown(ctx) // one is shut down by the test already
		})
		servers = append(servers, e)
		urls = append(urls, e.ClientURL())
	}
	list := strings.Join(urls, ", ")
	nc, err := bus.Connect(list, &bus.ConnectOptions{Name: "list-client", Logger: quietLogger(), ConnectTimeout: deadline})
	if err != nil {
		t.Fatalf("Connect(%q): %v", list, err)
	}
	t.Cleanup(nc.Close)
	first := slices.Index(urls, nc.ConnectedUrl())
	if first < 1 {
		t.Fatalf("ConnectedUrl() = %q, want one of %q", nc.ConnectedUrl(), urls[1:])
	}
	other := 3 - first // the other live server: 1 or 2

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := servers[first-1].Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// A hang guard: the reconnection takes a few rounds of the list at
	// most, each ending in ReconnectWait and its jitter.
	testutil.PollFor(t, deadline, "the connection to come back on "+urls[other], func() bool {
		return nc.IsConnected() && nc.ConnectedUrl() == urls[other]
	})
}

func TestStartEmbeddedBadListen(t *testing.T) {
	for _, addr := range []string{"no-port", "127.0.0.1:abc"} {
		t.Run(addr, func(t *testing.T) {
			e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: addr, Logger: quietLogger()})
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				_ = e.Shutdown(ctx)
				t.Fatalf("StartEmbedded(Listen %q) succeeded", addr)
			}
			if !strings.Contains(err.Error(), addr) {
				t.Errorf("error %q does not name the address", err)
			}
		})
	}
}

func TestRedactURLs(t *testing.T) {
	got := bus.RedactURLs("nats://alice:s3cret@n1:4222, nats://n2:4222,nats://bob:pw@n3,nats://t0ken@n4")
	if strings.Contains(got, "s3cret") || strings.Contains(got, ":pw@") || strings.Contains(got, "t0ken") ||
		!strings.Contains(got, "redacted@n1:4222") || !strings.Contains(got, "nats://n2:4222") {
		t.Errorf("RedactURLs = %q", got)
	}
	for _, url := range []string{"nats://alice:s3cret@127.0.0.1:1", "nats://s3cret@127.0.0.1:1", "nats://alice:s3cr%zzet@127.0.0.1:1"} {
		_, err := bus.Connect(url, &bus.ConnectOptions{ConnectTimeout: time.Second})
		if err == nil || strings.Contains(err.Error(), "s3cr") {
			t.Errorf("Connect(%q): %v: want an error without the credentials", url, err)
		}
	}
}
