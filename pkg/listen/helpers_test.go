package listen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// deadline bounds every wait.
const deadline = 5 * time.Second

var prefixSeq atomic.Int64

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// env is one test's bus: a real embedded NATS server, a subject prefix of
// its own and a publisher connection distinct from every registry's.
type env struct {
	t    testing.TB
	e    *bus.Embedded
	subj bus.Subjects
	pub  *nats.Conn
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("embedded Shutdown: %v", err)
		}
	})
	v := &env{t: t, e: e, subj: bus.Subjects{Prefix: fmt.Sprintf("lt%d", prefixSeq.Add(1))}}
	v.pub = v.conn("publisher")
	return v
}

func (v *env) conn(name string) *nats.Conn {
	v.t.Helper()
	nc, err := v.e.Connect(name)
	if err != nil {
		v.t.Fatalf("Connect(%s): %v", name, err)
	}
	v.t.Cleanup(nc.Close)
	return nc
}

// registry starts a registry on nc with the env's subjects; it is shut down
// when the test ends.
func (v *env) registry(nc *nats.Conn, opts listen.Options) *listen.Registry {
	v.t.Helper()
	opts.Subjects = v.subj
	opts.Logger = quietLogger()
	r := listen.New(bus.NATS(nc), opts)
	if err := r.Start(v.t.Context()); err != nil {
		v.t.Fatalf("Start: %v", err)
	}
	v.t.Cleanup(r.Shutdown)
	return r
}

// publish sends data on subject from the publisher connection.
func (v *env) publish(subject string, data []byte) {
	v.t.Helper()
	if err := v.pub.Publish(subject, data); err != nil {
		v.t.Fatalf("Publish(%s): %v", subject, err)
	}
	if err := v.pub.FlushTimeout(deadline); err != nil {
		v.t.Fatalf("flush: %v", err)
	}
}

func (v *env) listChanged(kind string) {
	v.t.Helper()
	v.publish(v.subj.ListChanged(kind), listChangedMsg(kind))
}

func (v *env) resourceUpdated(uri string) {
	v.t.Helper()
	v.publish(v.subj.ResourceUpdated(uri), resourceUpdatedMsg(uri))
}

// noInterest asserts that the server routes subject to nobody: after the
// registry's connection is flushed (its UNSUBs processed), a request on
// subject fails with no responders at once. A leftover subscription
// swallows the request and makes it time out instead.
func (v *env) noInterest(regConn *nats.Conn, subject string) {
	v.t.Helper()
	if err := regConn.FlushTimeout(deadline); err != nil {
		v.t.Fatalf("flush: %v", err)
	}
	_, err := v.pub.Request(subject, []byte("probe"), 2*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) {
		v.t.Fatalf("request on %s: err = %v, want no responders (a subscription is left)", subject, err)
	}
}

// publishLive publishes data on the live subject of session's GET log, as
// the frontend that logged an event for the session does.
func (v *env) publishLive(session string, data []byte) {
	v.t.Helper()
	v.publish(v.subj.Live(session, bus.SessionLog), data)
}

// settle returns once every message published so far (by the publisher)
// that the server routed to one of ncs has been handled by its
// subscription's handler: the flushes put each such message on its
// subscription's queue (the server sends a connection its messages in
// order, the PONG after them), and nats.go runs a Barrier function only
// once every async subscription of the connection has handled what was
// queued before it. A message the server did not route to ncs (no
// interest) is not waited for: there is nothing to wait for.
func (v *env) settle(ncs ...*nats.Conn) {
	v.t.Helper()
	if err := v.pub.FlushTimeout(deadline); err != nil {
		v.t.Fatalf("flush: %v", err)
	}
	for _, nc := range ncs {
		if err := nc.FlushTimeout(deadline); err != nil {
			v.t.Fatalf("flush: %v", err)
		}
		done := make(chan struct{})
		if err := nc.Barrier(func() { close(done) }); err != nil {
			v.t.Fatalf("Barrier: %v", err)
		}
		waitDone(v.t, done, "the subscriptions' handlers")
	}
}

func listChangedMsg(kind string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/` + kind + `/list_changed"}`)
}

func resourceUpdatedMsg(uri string) []byte {
	u, _ := json.Marshal(uri)
	return []byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":` + string(u) + `}}`)
}

// legacyFrame is what a SessionStream delivers for a bus notification.
func legacyFrame(msg []byte) []byte { return bus.AppendFrame(nil, bus.FrameNotification, msg) }

// recv reads one message from c within the deadline.
func recv(t testing.TB, c <-chan []byte, what string) []byte {
	t.Helper()
	select {
	case m := <-c:
		return m
	case <-time.After(deadline):
		t.Fatalf("%s: nothing received within %v", what, deadline)
		return nil
	}
}

// empty asserts that nothing is buffered on c. Callers make sure first
// that every delivery that could reach c is over (Barrier after a later
// message of the same subscription arrived, or settle).
func empty(t testing.TB, c <-chan []byte, what string) {
	t.Helper()
	select {
	case m := <-c:
		t.Fatalf("%s: unexpected message %s", what, m)
	default:
	}
}

func waitDone(t testing.TB, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatalf("%s: not ended within %v", what, deadline)
	}
}

func notDone(t testing.TB, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s: ended unexpectedly", what)
	default:
	}
}

// note is a decoded JSON-RPC notification.
type note struct {
	JSONRPC string                     `json:"jsonrpc"`
	Method  string                     `json:"method"`
	ID      json.RawMessage            `json:"id"`
	Params  map[string]json.RawMessage `json:"params"`
}

func decodeNote(t testing.TB, b []byte) note {
	t.Helper()
	var n note
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	if n.JSONRPC != "2.0" {
		t.Fatalf("jsonrpc = %q in %s", n.JSONRPC, b)
	}
	if n.ID != nil {
		t.Fatalf("a notification carries an id: %s", b)
	}
	return n
}

// subID returns params._meta's subscription id, raw.
func subID(t testing.TB, n note, raw []byte) json.RawMessage {
	t.Helper()
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(n.Params["_meta"], &meta); err != nil || meta == nil {
		t.Fatalf("no params._meta in %s", raw)
	}
	id, ok := meta[protocol.MetaSubscriptionID]
	if !ok {
		t.Fatalf("no %s in %s", protocol.MetaSubscriptionID, raw)
	}
	if len(meta) != 1 {
		t.Fatalf("_meta has extra keys: %s", raw)
	}
	return id
}

// checkTagged checks a listen stream notification: method, the uri (empty:
// none), the subscription id, and no other params.
func checkTagged(t testing.TB, raw []byte, method, uri string, id protocol.ID) {
	t.Helper()
	n := decodeNote(t, raw)
	if n.Method != method {
		t.Fatalf("method = %q, want %q in %s", n.Method, method, raw)
	}
	if got, want := subID(t, n, raw), id.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("subscription id = %s, want %s in %s", got, want, raw)
	}
	wantKeys := 1
	if uri != "" {
		wantKeys = 2
		var got string
		if err := json.Unmarshal(n.Params["uri"], &got); err != nil || got != uri {
			t.Fatalf("params.uri = %s, want %q in %s", n.Params["uri"], uri, raw)
		}
	} else if _, ok := n.Params["uri"]; ok {
		t.Fatalf("unexpected params.uri in %s", raw)
	}
	if len(n.Params) != wantKeys {
		t.Fatalf("params has %d keys, want %d: %s", len(n.Params), wantKeys, raw)
	}
}

// newTCPEnv is newEnv with a server reached over TCP, for a registry
// connection that must be a real network connection (reconnections, a
// gated dialer). The publisher still connects in-process.
func newTCPEnv(t testing.TB) *env {
	t.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1", Logger: quietLogger()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("embedded Shutdown: %v", err)
		}
	})
	v := &env{t: t, e: e, subj: bus.Subjects{Prefix: fmt.Sprintf("lt%d", prefixSeq.Add(1))}}
	v.pub = v.conn("publisher")
	return v
}

// gatedConn is a client's network connection whose writes can be held:
// while held, what the client writes is kept back (Write still returns at
// once, so nats.go never blocks holding its lock) and the server sees
// none of it until release sends it, in order.
type gatedConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	kept []byte
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		c.kept = append(c.kept, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = true
}

// keeps reports whether every one of the protocol lines starts is among
// what is kept back.
func (c *gatedConn) keeps(starts ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range starts {
		if !bytes.Contains(c.kept, []byte(s)) {
			return false
		}
	}
	return true
}

func (c *gatedConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	kept := c.kept
	c.kept = nil
	_, err := c.Conn.Write(kept)
	return err
}

// gatedConnect connects to the env's TCP server through a gatedConn (no
// reconnection: the gate is for one connection).
func (v *env) gatedConnect(name string) (*nats.Conn, *gatedConn) {
	v.t.Helper()
	d := &gatedDialer{}
	nc, err := nats.Connect(v.e.ClientURL(), nats.Name(name), nats.NoReconnect(), nats.SetCustomDialer(d))
	if err != nil {
		v.t.Fatalf("Connect(%s): %v", name, err)
	}
	v.t.Cleanup(nc.Close)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.conns) != 1 {
		v.t.Fatalf("%d connections dialed, want 1", len(d.conns))
	}
	return nc, d.conns[0]
}

type gatedDialer struct {
	mu    sync.Mutex
	conns []*gatedConn
}

func (d *gatedDialer) Dial(network, address string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: deadline}).Dial(network, address)
	if err != nil {
		return nil, err
	}
	g := &gatedConn{Conn: c}
	d.mu.Lock()
	d.conns = append(d.conns, g)
	d.mu.Unlock()
	return g, nil
}
