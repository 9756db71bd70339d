package listen_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// BusLost ends every stream at once and drops their subscriptions, so
// that once the connection is back (here a real reconnection, which
// resends the connection's subscriptions) nothing of them is fed again;
// opens are refused until BusBack, and work again afterwards.
func TestBusLost(t *testing.T) {
	v := newTCPEnv(t) // the registry's connection reached over TCP
	nc, err := bus.Connect(v.e.ClientURL(), &bus.ConnectOptions{Name: "fe", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const sess, u1, u2, task = "s1", "file:///a", "file:///b", "t1"
	r := v.registry(nc, listen.Options{})
	base := nc.NumSubscriptions() // list_changed

	g, err := r.OpenSession(t.Context(), sess)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{u1, u2}, TaskIDs: []string{task}})
	if err != nil {
		t.Fatal(err)
	}
	if gets, listens := r.BusLost(); gets != 1 || listens != 1 {
		t.Fatalf("BusLost ended %d GET and %d listen streams, want 1 and 1", gets, listens)
	}
	waitDone(t, g.Done(), "GET stream")
	waitDone(t, l.Done(), "listen stream")
	if g.Reason() != listen.ReasonBusLost || l.Reason() != listen.ReasonBusLost {
		t.Fatalf("reasons %q and %q, want %q", g.Reason(), l.Reason(), listen.ReasonBusLost)
	}
	if n := nc.NumSubscriptions(); n != base || r.SessionCount() != 0 || r.ListenCount() != 0 || len(r.Watchers()) != 0 {
		t.Fatalf("after BusLost: %d subscriptions (want %d), %d sessions, %d listen streams, watchers %v",
			n, base, r.SessionCount(), r.ListenCount(), r.Watchers())
	}
	if !r.BusIsLost() {
		t.Fatal("BusIsLost is false after BusLost")
	}
	if _, err := r.OpenSession(t.Context(), sess); !errors.Is(err, listen.ErrBusLost) {
		t.Fatalf("OpenSession while lost: %v, want ErrBusLost", err)
	}
	if _, err := r.OpenListen("c", protocol.Int64ID(2), protocol.SubscriptionFilter{ToolsListChanged: true}); !errors.Is(err, listen.ErrBusLost) {
		t.Fatalf("OpenListen while lost: %v, want ErrBusLost", err)
	}
	g.Close() // the handlers close their streams afterwards: no-ops now
	l.Close()

	// A real reconnection: nats.go resends what is still subscribed.
	before := nc.Stats().Reconnects
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	testutil.Poll(t, "the registry's connection to reconnect", func() bool {
		return nc.Stats().Reconnects > before && nc.IsConnected()
	})
	for _, subj := range []string{v.subj.Live(sess, bus.SessionLog), v.subj.SessionControl(sess),
		v.subj.ResourceUpdated(u1), v.subj.ResourceUpdated(u2), v.subj.TaskEvent(task)} {
		v.noInterest(nc, subj)
	}

	r.BusBack()
	g2, err := r.OpenSession(t.Context(), sess)
	if err != nil {
		t.Fatalf("OpenSession after BusBack: %v", err)
	}
	defer g2.Close()
	ev := liveEvent(7)
	v.publishLive(sess, ev)
	if got := recv(t, g2.C(), "new GET stream"); !bytes.Equal(got, liveItem(ev)) {
		t.Fatalf("new GET stream got %q, want %q", got, liveItem(ev))
	}
	r.Barrier()
	empty(t, g2.C(), "new GET stream (one delivery)")
	empty(t, g.C(), "ended GET stream")
}

// Shutdown after BusLost, and BusLost after Shutdown, are harmless.
func TestBusLostAndShutdown(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	l, err := r.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	r.BusLost()
	r.Shutdown()
	if gets, listens := r.BusLost(); gets != 0 || listens != 0 {
		t.Fatalf("BusLost after Shutdown ended %d and %d streams", gets, listens)
	}
	if l.Reason() != listen.ReasonBusLost {
		t.Fatalf("reason %q", l.Reason())
	}
}
