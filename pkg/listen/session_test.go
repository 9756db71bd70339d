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

// sessionFrame is a session-scoped message as workers publish it.
func sessionFrame(i int) []byte {
	if i%2 == 0 {
		return bus.AppendFrame(nil, bus.FrameNotification,
			fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`, i))
	}
	return bus.AppendFrame(nil, bus.FrameServerRequest,
		fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"roots/list"}`, i))
}

func TestSessionResourceUpdated(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	u1, u2, other := "file:///one", "mem://two ü", "file:///not-subscribed"
	src.set("s1", u1, u2)
	src.set("s2", u2)
	r := v.registry(nc, listen.Options{Subscriptions: src})

	g1, err := r.OpenSession(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer g1.Close()
	// Published from another connection as soon as OpenSession returns.
	if err := v.pub.Publish(v.subj.ResourceUpdated(u1), resourceUpdatedMsg(u1)); err != nil {
		t.Fatal(err)
	}
	if got, want := recv(t, g1.C(), "s1: u1"), legacyFrame(resourceUpdatedMsg(u1)); !bytes.Equal(got, want) {
		t.Fatalf("frame = %q, want %q", got, want)
	}
	if n := src.callCount("s1"); n != 1 {
		t.Fatalf("source asked %d times for s1, want 1", n)
	}

	g2 := openSession(t, r, "s2")
	if w := r.Watchers(); len(w) != 2 || w[u1] != [2]int{1, 0} || w[u2] != [2]int{2, 0} {
		t.Fatalf("watchers = %v", w)
	}
	v.noInterest(nc, v.subj.ResourceUpdated(other))

	v.resourceUpdated(u2)
	want := legacyFrame(resourceUpdatedMsg(u2))
	if got := recv(t, g1.C(), "s1: u2"); !bytes.Equal(got, want) {
		t.Fatalf("s1 frame = %q", got)
	}
	if got := recv(t, g2.C(), "s2: u2"); !bytes.Equal(got, want) {
		t.Fatalf("s2 frame = %q", got)
	}
	v.resourceUpdated(u1)
	recv(t, g1.C(), "s1: second u1")
	r.Barrier()
	empty(t, g2.C(), "s2 (not subscribed to u1)")
	empty(t, g1.C(), "s1")
}

func TestSessionListChangedReachesEverySession(t *testing.T) {
	v := newEnv(t)
	src := newSource()
	r := v.registry(v.conn("fe"), listen.Options{Subscriptions: src})
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
		want = append(want, string(sessionFrame(i)))
	}
	sort.Strings(all)
	sort.Strings(want)
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("frames received:\n%q\nwant each once:\n%q", all, want)
	}
}

func TestSessionFrameReachesOneStream(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{Subscriptions: newSource()})
	g1 := openSession(t, r, "s")
	g2 := openSession(t, r, "s")
	other := openSession(t, r, "other")
	if n := r.SessionStreams("s"); n != 2 {
		t.Fatalf("SessionStreams = %d", n)
	}

	before := inMsgs(t, nc)
	// Frames that are not for a GET stream go first: they are dropped, and
	// since one subscription handles the subject in order, they have been
	// handled once the real frames arrived.
	junk := [][]byte{nil, []byte("Xgarbage"), bus.AppendFrame(nil, bus.FrameResponse, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)),
		bus.AppendFrame(nil, bus.FrameHeartbeat, []byte("w1")), bus.AppendFrame(nil, bus.FrameEnd, nil)}
	for _, j := range junk {
		v.publish(v.subj.Session("s"), j)
	}
	const n = 10
	for i := range n {
		v.publish(v.subj.Session("s"), sessionFrame(i))
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
		index[string(sessionFrame(i))] = i
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
	// The frontend got each message once: a single (queue) subscription.
	if d := inMsgs(t, nc) - before; d != uint64(n+len(junk)) {
		t.Fatalf("the frontend connection received %d messages for %d published", d, n+len(junk))
	}
}

func TestSessionFrameAcrossFrontends(t *testing.T) {
	v := newEnv(t)
	src := newSource()
	nc1, nc2 := v.conn("fe1"), v.conn("fe2")
	r1 := v.registry(nc1, listen.Options{Subscriptions: src})
	r2 := v.registry(nc2, listen.Options{Subscriptions: src})
	g1 := openSession(t, r1, "s")
	g2 := openSession(t, r2, "s")

	before := inMsgs(t, nc1, nc2)
	const n = 40
	for i := range n {
		v.publish(v.subj.Session("s"), sessionFrame(i))
	}
	got := collect(t, n, g1, g2)
	// Each message went to exactly one of the frontends (queue group): the
	// two connections together received n messages, not 2n.
	if d := inMsgs(t, nc1, nc2) - before; d != n {
		t.Fatalf("the frontends received %d messages for %d published", d, n)
	}
	r1.Barrier()
	r2.Barrier()
	empty(t, g1.C(), "fe1")
	empty(t, g2.C(), "fe2")
	checkFrames(t, got, n)
}

func TestSessionCtlDeleted(t *testing.T) {
	v := newEnv(t)
	src := newSource()
	r1 := v.registry(v.conn("fe1"), listen.Options{Subscriptions: src})
	r2 := v.registry(v.conn("fe2"), listen.Options{Subscriptions: src})
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
	// An unknown control message changes nothing. The control subject is
	// handled in order: once CtlSubs is answered, "bogus" was handled.
	v.publish(v.subj.SessionControl("other"), []byte("bogus"))
	if _, err := v.pub.Request(v.subj.SessionControl("other"), []byte(listen.CtlSubs), deadline); err != nil {
		t.Fatalf("CtlSubs: %v", err)
	}
	notDone(t, survivor.Done(), "another session after a bogus control message")
	v.listChanged("prompts")
	recv(t, survivor.C(), "another session after a bogus control message")
}

func TestSessionCtlSubsReloads(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	removed, kept, added := "file:///removed", "file:///kept", "file:///added"
	src.set("s", removed, kept)
	r := v.registry(nc, listen.Options{Subscriptions: src})
	g := openSession(t, r, "s")
	if w := r.Watchers(); len(w) != 2 || w[removed] != [2]int{1, 0} || w[kept] != [2]int{1, 0} {
		t.Fatalf("watchers = %v", w)
	}

	src.set("s", kept, added)
	reply, err := v.pub.Request(v.subj.SessionControl("s"), []byte(listen.CtlSubs), deadline)
	if err != nil {
		t.Fatalf("CtlSubs request: %v", err)
	}
	if len(reply.Data) == 0 {
		t.Fatal("empty reply")
	}
	if n := src.callCount("s"); n != 2 {
		t.Fatalf("source asked %d times, want 2 (open, reload)", n)
	}
	if w := r.Watchers(); len(w) != 2 || w[added] != [2]int{1, 0} || w[kept] != [2]int{1, 0} {
		t.Fatalf("watchers after reload = %v", w)
	}
	// The reply comes once the new subscription is in place: no wait.
	if err := v.pub.Publish(v.subj.ResourceUpdated(added), resourceUpdatedMsg(added)); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, g.C(), "added"); !bytes.Equal(got, legacyFrame(resourceUpdatedMsg(added))) {
		t.Fatalf("frame = %q", got)
	}
	// The removed URI is no longer routed to this frontend at all.
	v.noInterest(nc, v.subj.ResourceUpdated(removed))
	v.resourceUpdated(removed)
	v.resourceUpdated(kept)
	if got := recv(t, g.C(), "kept"); !bytes.Equal(got, legacyFrame(resourceUpdatedMsg(kept))) {
		t.Fatalf("frame = %q, want the kept URI's update only", got)
	}
	r.Barrier()
	empty(t, g.C(), "session")

	// A reload that fails leaves the subscriptions as they were, and
	// still answers.
	src.setErr(errors.New("store down"))
	if _, err := v.pub.Request(v.subj.SessionControl("s"), []byte(listen.CtlSubs), deadline); err != nil {
		t.Fatalf("CtlSubs request with the store down: %v", err)
	}
	if w := r.Watchers(); len(w) != 2 || w[added] != [2]int{1, 0} || w[kept] != [2]int{1, 0} {
		t.Fatalf("watchers after a failed reload = %v", w)
	}
}

func TestSessionLastCloseUnsubscribes(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	u := "file:///u"
	src.set("s", u)
	r := v.registry(nc, listen.Options{Subscriptions: src})
	g1 := openSession(t, r, "s")
	g2 := openSession(t, r, "s")
	if n := src.callCount("s"); n != 1 {
		t.Fatalf("source asked %d times, want once for the session's first stream", n)
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
	v.resourceUpdated(u)
	recv(t, g2.C(), "remaining stream: resource")
	for i := range 3 {
		v.publish(v.subj.Session("s"), sessionFrame(i))
		if got := recv(t, g2.C(), "remaining stream: frame"); !bytes.Equal(got, sessionFrame(i)) {
			t.Fatalf("frame = %q", got)
		}
	}
	r.Barrier()
	empty(t, g1.C(), "closed stream")

	g2.Close()
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d after the last Close", n)
	}
	if w := r.Watchers(); len(w) != 0 {
		t.Fatalf("watchers = %v after the last Close", w)
	}
	for _, subj := range []string{v.subj.Session("s"), v.subj.SessionControl("s"), v.subj.ResourceUpdated(u)} {
		v.noInterest(nc, subj)
	}
	g2.Close()

	// The session can come back.
	g3 := openSession(t, r, "s")
	v.resourceUpdated(u)
	recv(t, g3.C(), "reopened session")
}

func TestSessionAndListenShareURI(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	u := "file:///shared"
	src.set("s", u)
	r := v.registry(nc, listen.Options{Subscriptions: src})
	g, err := r.OpenSession(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.OpenListen("c", protocol.Int64ID(5), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u}})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Watchers(); w[u] != [2]int{1, 1} {
		t.Fatalf("watchers = %v", w)
	}
	v.resourceUpdated(u)
	recv(t, g.C(), "session")
	checkTagged(t, recv(t, l.C(), "listen"), protocol.NotificationResourceUpdated, u, l.ID)

	g.Close()
	if w := r.Watchers(); w[u] != [2]int{0, 1} {
		t.Fatalf("watchers after the session closed = %v", w)
	}
	v.resourceUpdated(u)
	checkTagged(t, recv(t, l.C(), "listen after session closed"), protocol.NotificationResourceUpdated, u, l.ID)
	l.Close()
	v.noInterest(nc, v.subj.ResourceUpdated(u))
}

func TestSessionSourceError(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	src.set("s", "file:///u")
	boom := errors.New("store down")
	src.setErr(boom)
	r := v.registry(nc, listen.Options{Subscriptions: src})
	if _, err := r.OpenSession(context.Background(), "s"); !errors.Is(err, boom) {
		t.Fatalf("OpenSession: err = %v, want %v", err, boom)
	}
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d after a failed open", n)
	}
	for _, subj := range []string{v.subj.Session("s"), v.subj.SessionControl("s"), v.subj.ResourceUpdated("file:///u")} {
		v.noInterest(nc, subj)
	}
	src.setErr(nil)
	g := openSession(t, r, "s")
	v.resourceUpdated("file:///u")
	recv(t, g.C(), "after the store came back")
}

func TestSessionSlowReader(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{Subscriptions: newSource(), Buffer: 1})
	g := openSession(t, r, "s")
	v.publish(v.subj.Session("s"), sessionFrame(0))
	v.publish(v.subj.Session("s"), sessionFrame(1))
	waitDone(t, g.Done(), "slow session stream")
	if g.Reason() != listen.ReasonSlow {
		t.Fatalf("Reason = %q, want %q", g.Reason(), listen.ReasonSlow)
	}
	if got := recv(t, g.C(), "buffered"); !bytes.Equal(got, sessionFrame(0)) {
		t.Fatalf("buffered frame = %q", got)
	}
}

// TestSessionSecondOpenWaitsForSubscriptions opens a second stream of a
// session while the first is still loading the session's URIs: the
// second OpenSession must not return before the subscriptions are in
// place, or an event raised right after it returns is lost.
func TestSessionSecondOpenWaitsForSubscriptions(t *testing.T) {
	v := newEnv(t)
	src := newSource()
	u := "file:///u"
	src.set("s", u)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	src.setHook(func(ctx context.Context, _ string) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	r := v.registry(v.conn("fe"), listen.Options{Subscriptions: src})

	type opened struct {
		g   *listen.SessionStream
		err error
	}
	first := make(chan opened, 1)
	go func() {
		g, err := r.OpenSession(context.Background(), "s")
		first <- opened{g, err}
	}()
	select {
	case <-entered:
	case <-time.After(deadline):
		t.Fatal("the first OpenSession never asked the source")
	}
	// The second open, like a handler, raises an event at once.
	second := make(chan opened, 1)
	go func() {
		g, err := r.OpenSession(context.Background(), "s")
		if err == nil {
			_ = v.pub.Publish(v.subj.ResourceUpdated(u), resourceUpdatedMsg(u))
			_ = v.pub.Flush()
		}
		second <- opened{g, err}
	}()
	waitFor(t, "the second stream to register", func() bool { return r.SessionStreams("s") == 2 })
	close(release)

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
	want := legacyFrame(resourceUpdatedMsg(u))
	select {
	case got := <-o1.g.C():
		if !bytes.Equal(got, want) {
			t.Fatalf("frame = %q", got)
		}
	case got := <-o2.g.C():
		if !bytes.Equal(got, want) {
			t.Fatalf("frame = %q", got)
		}
	case <-time.After(deadline):
		t.Fatal("an event raised right after the second OpenSession returned was lost")
	}
}

// TestSessionSecondOpenFailsWithTheFirst: when the session's first stream
// cannot subscribe, a stream that joined meanwhile fails too instead of
// being left on a session that receives nothing.
func TestSessionSecondOpenFailsWithTheFirst(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	src := newSource()
	boom := errors.New("store down")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	src.setHook(func(ctx context.Context, _ string) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return boom
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	r := v.registry(nc, listen.Options{Subscriptions: src})
	errs := make(chan error, 2)
	go func() {
		_, err := r.OpenSession(context.Background(), "s")
		errs <- err
	}()
	select {
	case <-entered:
	case <-time.After(deadline):
		t.Fatal("the first OpenSession never asked the source")
	}
	go func() {
		g, err := r.OpenSession(context.Background(), "s")
		if err == nil {
			g.Close()
		}
		errs <- err
	}()
	waitFor(t, "the second stream to register", func() bool { return r.SessionStreams("s") == 2 })
	close(release)
	for i := range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, boom) {
				t.Fatalf("OpenSession %d: err = %v, want %v", i, err, boom)
			}
		case <-time.After(deadline):
			t.Fatal("OpenSession did not return")
		}
	}
	if n := r.SessionCount(); n != 0 {
		t.Fatalf("SessionCount = %d", n)
	}
	for _, subj := range []string{v.subj.Session("s"), v.subj.SessionControl("s")} {
		v.noInterest(nc, subj)
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

// ctlBarrier returns once every control message of session id published
// before it has been handled by the registries (the control subject is
// handled in order, and CtlSubs is answered by every registry's handler).
func ctlBarrier(t *testing.T, v *env, id string) {
	t.Helper()
	if _, err := v.pub.Request(v.subj.SessionControl(id), []byte(listen.CtlSubs), deadline); err != nil {
		t.Fatalf("CtlSubs: %v", err)
	}
}

// A GET stream is superseded only by an announcement that arrives after
// its own: announcements published in the order a, b leave b alone while
// a's is handled (even though b already has its tag), then end a.
func TestSessionSupersedeOrder(t *testing.T) {
	v := newEnv(t)
	src := newSource()
	r1 := v.registry(v.conn("fe1"), listen.Options{Subscriptions: src})
	r2 := v.registry(v.conn("fe2"), listen.Options{Subscriptions: src})
	a := openSession(t, r1, "s")
	a.SetTag("a")
	b := openSession(t, r1, "s")
	b.SetTag("b")
	untagged := openSession(t, r1, "s")

	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"a"))
	ctlBarrier(t, v, "s")
	notDone(t, a.Done(), "stream a after its own announcement")
	notDone(t, b.Done(), "stream b after an older announcement")

	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"b"))
	waitDone(t, a.Done(), "stream a after b's announcement")
	if a.Reason() != listen.ReasonSuperseded {
		t.Fatalf("a: Reason = %q, want %q", a.Reason(), listen.ReasonSuperseded)
	}
	ctlBarrier(t, v, "s")
	notDone(t, b.Done(), "stream b after its own announcement")
	notDone(t, untagged.Done(), "an untagged stream")

	// A newer stream on another frontend supersedes b.
	c := openSession(t, r2, "s")
	c.SetTag("c")
	v.publish(v.subj.SessionControl("s"), []byte(listen.CtlGetOpened+"c"))
	waitDone(t, b.Done(), "stream b after c's announcement")
	ctlBarrier(t, v, "s")
	notDone(t, c.Done(), "stream c")
}
