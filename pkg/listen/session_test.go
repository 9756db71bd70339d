package listen_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func openSession(t testing.TB, r *listen.Registry, id string) *listen.SessionStream {
	t.Helper()
	g, err := r.OpenSession(context.Background(), id)
	if err != nil {
		t.Fatalf("OpenSession(%s): %v", id, err)
	}
	t.Cleanup(g.Close)
	if g.Session != id {
		t.Fatalf("Session = %q, want %q", g.Session, id)
	}
	return g
}

// liveEvent is the i-th live event of a session's GET log as the frontend
// that logged it publishes it on the log's live subject
// (bus.AppendLiveEvent): index i+1, then a notification, a
// server-to-client request or bytes that are neither valid JSON nor UTF-8
// (the registry relays the data verbatim, it does not parse it).
func liveEvent(i int) []byte {
	var msg []byte
	switch i % 3 {
	case 0:
		msg = fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i)
	case 1:
		msg = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"roots/list"}`, i)
	default:
		msg = fmt.Appendf(nil, "line\n%d\xff\x00\r\n", i)
	}
	return bus.AppendLiveEvent(nil, uint64(i+1), msg)
}

// liveItem is what a SessionStream delivers for a live event published
// with data: FrameLive, then the data as published.
func liveItem(data []byte) []byte {
	return append([]byte{listen.FrameLive}, data...)
}

// A legacy session's resources/updated come in its GET log, as live
// events like any other: the registry subscribes to no URI for a session
// (only to its live and control subjects), and an update published on a
// URI subject reaches no session stream.
func TestSessionGetsNoResourceUpdated(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	base := nc.NumSubscriptions() // list_changed
	u := "file:///one"
	g1 := openSession(t, r, "s1")
	g2 := openSession(t, r, "s2")
	if n := nc.NumSubscriptions() - base; n != 4 {
		t.Fatalf("two sessions made %d subscriptions, want 4 (each its live and control subjects)", n)
	}
	if w := r.Watchers(); len(w) != 0 {
		t.Fatalf("watchers = %v with session streams only", w)
	}
	v.noInterest(nc, v.subj.ResourceUpdated(u))

	v.resourceUpdated(u)
	// The update as a session gets it now: a live event of its log.
	ev := bus.AppendLiveEvent(nil, 1, resourceUpdatedMsg(u))
	v.publishLive("s1", ev)
	if got := recv(t, g1.C(), "s1"); !bytes.Equal(got, liveItem(ev)) {
		t.Fatalf("s1 got %q, want %q", got, liveItem(ev))
	}
	v.settle(nc)
	empty(t, g1.C(), "s1 (the update on the URI subject)")
	empty(t, g2.C(), "s2")
}

func TestSessionListChangedReachesEverySession(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	var gs []*listen.SessionStream
	for i := range 3 {
		gs = append(gs, openSession(t, r, fmt.Sprintf("s%d", i)))
	}
	// A listen stream that asked for nothing shares the registry.
	l, err := r.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, kind := range []string{"tools", "prompts", "resources"} {
		v.listChanged(kind)
		want := legacyFrame(listChangedMsg(kind))
		for i, g := range gs {
			if got := recv(t, g.C(), fmt.Sprintf("s%d %s", i, kind)); !bytes.Equal(got, want) {
				t.Fatalf("s%d: frame = %q, want %q", i, got, want)
			}
		}
	}
	r.Barrier()
	for i, g := range gs {
		empty(t, g.C(), fmt.Sprintf("s%d", i))
	}
	empty(t, l.C(), "listen stream with an empty filter")
}

// collect reads n frames from the streams (any of them) and returns what
// each received, in order.
func collect(t *testing.T, n int, gs ...*listen.SessionStream) [][][]byte {
	t.Helper()
	got := make([][][]byte, len(gs))
	timeout := time.After(deadline)
	for range n {
		switch len(gs) {
		case 2:
			select {
			case m := <-gs[0].C():
				got[0] = append(got[0], m)
			case m := <-gs[1].C():
				got[1] = append(got[1], m)
			case <-timeout:
				t.Fatalf("only %d+%d of %d frames within %v", len(got[0]), len(got[1]), n, deadline)
			}
		default:
			t.Fatalf("collect wants 2 streams")
		}
	}
	return got
}

func inMsgs(t *testing.T, ncs ...*nats.Conn) uint64 {
	t.Helper()
	var n uint64
	for _, nc := range ncs {
		if err := nc.FlushTimeout(deadline); err != nil {
			t.Fatal(err)
		}
		n += nc.Stats().InMsgs
	}
	return n
}

func checkFrames(t *testing.T, got [][][]byte, n int) {
	t.Helper()
	var all []string
	for _, fs := range got {
		for _, f := range fs {
			all = append(all, string(f))
		}
	}
	var want []string
	for i := range n {
		want = append(want, string(liveItem(liveEvent(i))))
	}
	sort.Strings(all)
	sort.Strings(want)
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("frames received:\n%q\nwant each once:\n%q", all, want)
	}
}

// Each live event of a session reaches one of its streams on the
// registry, round robin, as FrameLive and the data verbatim; other
// sessions' streams get nothing of it.
func TestSessionLiveReachesOneStream(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	g1 := openSession(t, r, "s")
	g2 := openSession(t, r, "s")
	other := openSession(t, r, "other")
	if n := r.SessionStreams("s"); n != 2 {
		t.Fatalf("SessionStreams = %d", n)
	}
	// The live subject of the session's GET log only: not that of another
	// stream of the session (a detached POST stream's, say).
	v.noInterest(nc, v.subj.Live("s", "st1"))

	before := inMsgs(t, nc)
	const n = 10
	for i := range n {
		v.publishLive("s", liveEvent(i))
	}
	got := collect(t, n, g1, g2)
	r.Barrier()
	empty(t, g1.C(), "g1")
	empty(t, g2.C(), "g2")
	empty(t, other.C(), "another session")
	checkFrames(t, got, n)
	// Round robin: each stream got half, each in publication order.
	index := map[string]int{}
	for i := range n {
		index[string(liveItem(liveEvent(i)))] = i
	}
	for k, fs := range got {
		if len(fs) != n/2 {
			t.Fatalf("stream %d got %d frames, want %d (round robin)", k, len(fs), n/2)
		}
		for i := 1; i < len(fs); i++ {
			if index[string(fs[i-1])] >= index[string(fs[i])] {
				t.Fatalf("stream %d: frames out of order: %q then %q", k, fs[i-1], fs[i])
			}
		}
	}
	// The frontend got each message once: one subscription for the
	// session, whatever its number of streams.
	if d := inMsgs(t, nc) - before; d != n {
		t.Fatalf("the frontend connection received %d messages for %d published", d, n)
	}
}

// The live subject is a plain subscription, not a queue group: every
// frontend with streams of the session gets every live event and hands it
// to one of its own streams. (That a session has one GET stream is the
// supersede rule's doing: TestSessionSupersedeOrder.)
func TestSessionLiveAcrossFrontends(t *testing.T) {
	v := newEnv(t)
	nc1, nc2 := v.conn("fe1"), v.conn("fe2")
	r1 := v.registry(nc1, listen.Options{})
	r2 := v.registry(nc2, listen.Options{})
	g1a := openSession(t, r1, "s")
	g1b := openSession(t, r1, "s")
	g2 := openSession(t, r2, "s")

	before1, before2 := inMsgs(t, nc1), inMsgs(t, nc2)
	const n = 20
	for i := range n {
		v.publishLive("s", liveEvent(i))
	}
	for i := range n {
		if got, want := recv(t, g2.C(), fmt.Sprintf("fe2: event %d", i)), liveItem(liveEvent(i)); !bytes.Equal(got, want) {
			t.Fatalf("fe2: event %d = %q, want %q", i, got, want)
		}
	}
	got := collect(t, n, g1a, g1b)
	checkFrames(t, got, n)
	if len(got[0]) != n/2 || len(got[1]) != n/2 {
		t.Fatalf("fe1's streams got %d and %d events, want %d each (round robin)", len(got[0]), len(got[1]), n/2)
	}
	d1, d2 := inMsgs(t, nc1)-before1, inMsgs(t, nc2)-before2
	if d1 != n || d2 != n {
		t.Fatalf("the frontends received %d and %d messages for %d published, want %d each", d1, d2, n, n)
	}
	r1.Barrier()
	r2.Barrier()
	empty(t, g1a.C(), "fe1 a")
	empty(t, g1b.C(), "fe1 b")
	empty(t, g2.C(), "fe2")
}

func TestSessionCtlDeleted(t *testing.T) {
	v := newEnv(t)
	nc1 := v.conn("fe1")
	r1 := v.registry(nc1, listen.Options{})
	r2 := v.registry(v.conn("fe2"), listen.Options{})
	doomed := []*listen.SessionStream{openSession(t, r1, "s"), openSession(t, r1, "s"), openSession(t, r2, "s")}
	survivor := openSession(t, r1, "other")

	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlDeleted))
	for i, g := range doomed {
		waitDone(t, g.Done(), fmt.Sprintf("stream %d", i))
		if g.Reason() != listen.ReasonDeleted {
			t.Fatalf("stream %d: Reason = %q, want %q", i, g.Reason(), listen.ReasonDeleted)
		}
	}
	notDone(t, survivor.Done(), "another session")
	v.listChanged("tools")
	recv(t, survivor.C(), "another session")
	r1.Barrier()
	for i, g := range doomed {
		empty(t, g.C(), fmt.Sprintf("deleted stream %d", i))
	}
	// Unknown control messages change nothing: "subs" too, which asked
	// the holders to reload the session's URIs (they hold none now).
	v.publish(v.subj.SessionControl("other"), []byte("bogus"))
	v.publish(v.subj.SessionControl("other"), []byte("subs"))
	v.settle(nc1)
	notDone(t, survivor.Done(), "another session after a bogus control message")
	v.listChanged("prompts")
	recv(t, survivor.C(), "another session after a bogus control message")
}

func TestSessionLastCloseUnsubscribes(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	base := nc.NumSubscriptions() // list_changed
	g1 := openSession(t, r, "s")
	g2 := openSession(t, r, "s")
	if n := nc.NumSubscriptions() - base; n != 2 {
		t.Fatalf("%d subscriptions for a session with two streams, want 2 (its live and control subjects, made once)", n)
	}

	g1.Close()
	g1.Close()
	waitDone(t, g1.Done(), "closed stream")
	if g1.Reason() != listen.ReasonClosed {
		t.Fatalf("Reason = %q", g1.Reason())
	}
	if n := r.SessionStreams("s"); n != 1 {
		t.Fatalf("SessionStreams = %d", n)
	}
	// The remaining stream gets everything.
	for i := range 3 {
		v.publishLive("s", liveEvent(i))
		if got, want := recv(t, g2.C(), "remaining stream"), liveItem(liveEvent(i)); !bytes.Equal(got, want) {
			t.Fatalf("frame = %q, want %q", got, want)
		}
	}
	r.Barrier()
	empty(t, g1.C(), "closed stream")

	g2.Close()
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d after the last Close", n)
	}
	if n := nc.NumSubscriptions(); n != base {
		t.Fatalf("%d subscriptions after the last Close, want %d", n, base)
	}
	for _, subj := range []string{v.subj.Live("s", bus.SessionLog), v.subj.SessionControl("s")} {
		v.noInterest(nc, subj)
	}
	g2.Close()

	// The session can come back.
	g3 := openSession(t, r, "s")
	v.publishLive("s", liveEvent(3))
	if got, want := recv(t, g3.C(), "reopened session"), liveItem(liveEvent(3)); !bytes.Equal(got, want) {
		t.Fatalf("frame = %q, want %q", got, want)
	}
}

// A listen stream's URI subscription is its own: a legacy session's
// stream on the same registry gets none of its updates, and the session
// neither holds the subscription nor keeps it alive.
func TestSessionAndListenShareURI(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	u := "file:///shared"
	r := v.registry(nc, listen.Options{})
	g := openSession(t, r, "s")
	l, err := r.OpenListen("c", protocol.Int64ID(5), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if w := r.Watchers(); len(w) != 1 || w[u] != 1 {
		t.Fatalf("watchers = %v", w)
	}
	v.resourceUpdated(u)
	checkTagged(t, recv(t, l.C(), "listen"), protocol.NotificationResourceUpdated, u, l.ID)
	r.Barrier() // the update's deliveries are over
	empty(t, g.C(), "session stream")

	g.Close()
	if w := r.Watchers(); len(w) != 1 || w[u] != 1 {
		t.Fatalf("watchers after the session closed = %v", w)
	}
	v.resourceUpdated(u)
	checkTagged(t, recv(t, l.C(), "listen after session closed"), protocol.NotificationResourceUpdated, u, l.ID)

	g2 := openSession(t, r, "s")
	l.Close()
	if w := r.Watchers(); len(w) != 0 {
		t.Fatalf("watchers after the listen stream closed = %v", w)
	}
	v.noInterest(nc, v.subj.ResourceUpdated(u))
	notDone(t, g2.Done(), "session stream")
}

// OpenSession on a closed connection fails cleanly: ErrBusLost (the
// client retries on another frontend) and nothing registered, so the next
// open fails the same way instead of joining a half-opened session.
func TestSessionOpenOnClosedConnection(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	nc.Close()
	for i := range 2 {
		g, err := r.OpenSession(t.Context(), "s")
		if !errors.Is(err, listen.ErrBusLost) || g != nil {
			t.Fatalf("OpenSession %d on a closed connection = %v, %v; want nil, ErrBusLost", i, g, err)
		}
		if n := r.SessionStreams("s"); n != -1 {
			t.Fatalf("SessionStreams = %d after a failed open, want -1 (not registered)", n)
		}
	}
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d", n)
	}
}

func TestSessionSlowReader(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{Buffer: 1})
	g := openSession(t, r, "s")
	v.publishLive("s", liveEvent(0))
	v.publishLive("s", liveEvent(1))
	waitDone(t, g.Done(), "slow session stream")
	if g.Reason() != listen.ReasonSlow {
		t.Fatalf("Reason = %q, want %q", g.Reason(), listen.ReasonSlow)
	}
	if got := recv(t, g.C(), "buffered"); !bytes.Equal(got, liveItem(liveEvent(0))) {
		t.Fatalf("buffered frame = %q", got)
	}
}

// heldOpen starts OpenSession(s) on r while gate holds the registry's
// writes, and returns once the open has made the session's subscriptions
// and waits for the server to confirm them (its SUBs and PING are held
// back): the window in which a second stream of the session can join.
func heldOpen(t *testing.T, v *env, r *listen.Registry, gate *gatedConn, s string) <-chan opened {
	t.Helper()
	gate.hold()
	ch := make(chan opened, 1)
	go func() {
		g, err := r.OpenSession(context.Background(), s)
		ch <- opened{g, err}
	}()
	waitFor(t, "the first open's subscriptions and flush, held back", func() bool {
		return gate.keeps("SUB "+v.subj.Live(s, bus.SessionLog)+" ", "SUB "+v.subj.SessionControl(s)+" ", "PING\r\n")
	})
	return ch
}

type opened struct {
	g   *listen.SessionStream
	err error
}

// TestSessionSecondOpenWaitsForSubscriptions opens a second stream of a
// session while the first is still making the session's subscriptions
// (the server has not got them yet: the registry's connection is held):
// the second OpenSession must not return before they are in place, or a
// live event published right after it returns is lost.
func TestSessionSecondOpenWaitsForSubscriptions(t *testing.T) {
	v := newTCPEnv(t)
	nc, gate := v.gatedConnect("fe")
	r := v.registry(nc, listen.Options{})
	first := heldOpen(t, v, r, gate, "s")

	// The second open, like a handler, has an event raised at once.
	ev := liveEvent(0)
	second := make(chan opened, 1)
	go func() {
		g, err := r.OpenSession(context.Background(), "s")
		if err == nil {
			_ = v.pub.Publish(v.subj.Live("s", bus.SessionLog), ev)
			_ = v.pub.Flush()
		}
		second <- opened{g, err}
	}()
	waitFor(t, "the second stream to register", func() bool { return r.SessionStreams("s") == 2 })
	select {
	case o := <-first:
		t.Fatalf("the first OpenSession returned (err %v) before the server confirmed its subscriptions", o.err)
	case o := <-second:
		t.Fatalf("the second OpenSession returned (err %v) before the server had the session's subscriptions", o.err)
	default:
	}
	if err := gate.release(); err != nil {
		t.Fatalf("release: %v", err)
	}

	var o1, o2 opened
	for range 2 {
		select {
		case o1 = <-first:
		case o2 = <-second:
		case <-time.After(deadline):
			t.Fatal("OpenSession did not return")
		}
	}
	if o1.err != nil || o2.err != nil {
		t.Fatalf("OpenSession: %v, %v", o1.err, o2.err)
	}
	defer o1.g.Close()
	defer o2.g.Close()
	want := liveItem(ev)
	select {
	case got := <-o1.g.C():
		if !bytes.Equal(got, want) {
			t.Fatalf("frame = %q, want %q", got, want)
		}
	case got := <-o2.g.C():
		if !bytes.Equal(got, want) {
			t.Fatalf("frame = %q, want %q", got, want)
		}
	case <-time.After(deadline):
		t.Fatal("a live event published right after the second OpenSession returned was lost")
	}
}

// TestSessionSecondOpenFailsWithTheFirst: when the session's first stream
// cannot make its subscriptions (here the connection closes while the
// server's confirmation is awaited), a stream that joined meanwhile fails
// with the same error instead of being left on a session that receives
// nothing, and nothing of the session is left.
func TestSessionSecondOpenFailsWithTheFirst(t *testing.T) {
	v := newTCPEnv(t)
	nc, gate := v.gatedConnect("fe")
	r := v.registry(nc, listen.Options{})
	first := heldOpen(t, v, r, gate, "s")
	second := make(chan opened, 1)
	go func() {
		g, err := r.OpenSession(context.Background(), "s")
		second <- opened{g, err}
	}()
	waitFor(t, "the second stream to register", func() bool { return r.SessionStreams("s") == 2 })
	nc.Close()
	for i, ch := range []<-chan opened{first, second} {
		select {
		case o := <-ch:
			if o.g != nil || !errors.Is(o.err, nats.ErrConnectionClosed) {
				if o.g != nil {
					o.g.Close()
				}
				t.Fatalf("OpenSession %d = %v, %v; want nil, %v", i+1, o.g, o.err, nats.ErrConnectionClosed)
			}
		case <-time.After(deadline):
			t.Fatalf("OpenSession %d did not return", i+1)
		}
	}
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d", n)
	}
	if n := r.SessionStreams("s"); n != -1 {
		t.Fatalf("SessionStreams = %d, want -1 (not registered)", n)
	}
}

// waitFor polls cond (registry state with no channel to wait on) until it
// holds, within the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	timeout := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("waiting for %s: not within %v", what, deadline)
		}
	}
}

// A GET stream is superseded only by an announcement that arrives after
// its own: announcements published in the order a, b leave b alone while
// a's is handled (even though b already has its tag), then end a.
func TestSessionSupersedeOrder(t *testing.T) {
	v := newEnv(t)
	nc1, nc2 := v.conn("fe1"), v.conn("fe2")
	r1 := v.registry(nc1, listen.Options{})
	r2 := v.registry(nc2, listen.Options{})
	a := openSession(t, r1, "s")
	a.SetTag("a")
	b := openSession(t, r1, "s")
	b.SetTag("b")
	untagged := openSession(t, r1, "s")

	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"a"))
	v.settle(nc1)
	notDone(t, a.Done(), "stream a after its own announcement")
	notDone(t, b.Done(), "stream b after an older announcement")

	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"b"))
	waitDone(t, a.Done(), "stream a after b's announcement")
	if a.Reason() != listen.ReasonSuperseded {
		t.Fatalf("a: Reason = %q, want %q", a.Reason(), listen.ReasonSuperseded)
	}
	v.settle(nc1)
	notDone(t, b.Done(), "stream b after its own announcement")
	notDone(t, untagged.Done(), "an untagged stream")

	// A newer stream on another frontend supersedes b.
	c := openSession(t, r2, "s")
	c.SetTag("c")
	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"c"))
	waitDone(t, b.Done(), "stream b after c's announcement")
	v.settle(nc2)
	notDone(t, c.Done(), "stream c")
}
