//go:build ha

package hatest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The load of every test: 4 legacy and 4 modern echo clients, a call
// every 100 ms each, a toucher raising an update every 100 ms, and the
// follower's GET stream.
var steadyLoad = loadOptions{legacy: 4, modern: 4, pace: 100 * time.Millisecond, maxCalls: 1200, updates: 600}

// haBound bounds how long after a NATS node's or a worker's cut service
// is back: nats-server drops a silent connection (a route, a client) at
// the third of its 10 s ping ticks without an answer (deploy/nats.conf),
// the first tick after the cut skipped when traffic came just before:
// 40 s at most; then the worker timeout (4 s) of a call sent just
// before; and slack.
const haBound = 50 * time.Second

// runFor lets the load run for d: it waits (polling) until the clients
// made the calls that many seconds of their pace amount to, bounded by a
// hang guard.
func runFor(t *testing.T, l *load, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	testutil.PollFor(t, d+testenv.HangGuard(30*time.Second), fmt.Sprintf("%s of load", d), func() bool {
		return !time.Now().Before(deadline)
	})
}

// TestFrontendHostCut: fe1's host is cut off (its clients, NATS and
// Redis alike) while the load runs. Its clients' calls fail within their
// own deadline (a connection that is not up within a second, an answer
// that does not come within callTimeout), each client then calls fe2 and
// succeeds; the follower, whose GET stream was on fe1, takes the silent
// stream for dead, resumes on fe2 with Last-Event-ID and gets every
// update once. After the heal fe1 serves again, and every session made
// before the cut still works through both frontends.
func TestFrontendHostCut(t *testing.T) {
	f := startFleet(t, fleetOptions{})
	o := steadyLoad
	o.followOn = 0
	l := startLoad(t, f, o)
	begin := time.Now()
	pinned := newSession(t, f.feURL[0])
	runFor(t, l, 2*time.Second)

	cutAt := time.Now()
	f.topo.Cut(f.fe[0])
	testutil.PollFor(t, testenv.HangGuard(30*time.Second), "the follower to resume on fe2", func() bool {
		l.fol.mu.Lock()
		defer l.fol.mu.Unlock()
		return l.fol.cur == 1 && l.fol.opened >= 2
	})
	resumedAfter := time.Since(cutAt)
	runFor(t, l, 8*time.Second)
	healAt := time.Now()
	f.topo.Heal(f.fe[0])
	back, probeFailed := probe(t, f, 0, pinned, testenv.HangGuard(60*time.Second))
	runFor(t, l, time.Second)
	l.finish(t)
	end := time.Now()

	during := l.summarize(cutAt, healAt)
	all := l.summarize(begin, end)
	backAfterCut := l.backAfter(cutAt, healAt)
	t.Logf("fe1 host cut: during the cut %d ok / %d failed (%s), slowest failure %s; service back (every client on fe2, succeeding) %s after the cut; follower resumed %s after the cut; fe1 served again %s after the heal (probe failures: %s); whole test %d ok / %d failed, slowest ok %s; updates produced %d, delivered %d (%d once), unsure %d (%d delivered); GET stream opened %d times: %s",
		during.ok, during.failed, during.kinds(), during.slowestFail.Round(time.Millisecond), fmtBack(backAfterCut), resumedAfter.Round(time.Millisecond),
		back.Round(time.Millisecond), probeFailed, all.ok, all.failed, all.slowestOK.Round(time.Millisecond), all.produced, all.delivered, all.once, all.unsure, all.unsureGot, all.streamsOpened, all.resumes)
	all.check(t)
	if during.slowestFail > callTimeout+time.Second {
		t.Errorf("a call to the cut frontend failed only after %s, past the client's deadline", during.slowestFail)
	}
	// Each client fails at most its call in flight and the next one (a
	// kept-alive connection gone silent, then the switch).
	if max := 2 * (o.legacy + o.modern + 1); during.failed > max {
		t.Errorf("%d calls failed during the cut, want at most %d (each client moves after a failure)", during.failed, max)
	}
	if backAfterCut < 0 || backAfterCut > callTimeout+2*time.Second {
		t.Errorf("service was back %s after the cut, want within %s", fmtBack(backAfterCut), callTimeout+2*time.Second)
	}
	checkSessions(t, f, append(l.sessions(), pinned))
}

func fmtBack(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// TestNATSNodeCut: the host of the NATS node fe1 is connected to is cut
// off. Calls succeed or fail, none waits past its deadline (the
// frontends answer 502 at their worker timeout, a client then moves to
// the other frontend); fe1 notices the silent connection by its pings
// (--nats-ping-interval), ends its GET streams (the follower resumes on
// fe2) and reconnects to another node, where it serves again within a
// bound while the node is still cut off; the other nodes drop their
// routes to it. After the heal the node rejoins the cluster, fe1 serves
// and every session still works.
func TestNATSNodeCut(t *testing.T) {
	f := startFleet(t, fleetOptions{})
	node := f.nodeOf("fe1")
	if node < 0 {
		t.Fatalf("fe1 is on no NATS node: %s", f.placement())
	}
	placement := f.placement()
	o := steadyLoad
	o.followOn = 0
	l := startLoad(t, f, o)
	begin := time.Now()
	pinned := newSession(t, f.feURL[0])
	runFor(t, l, 2*time.Second)

	cutAt := time.Now()
	f.topo.Cut(f.nats[node])
	// fe1 itself serves again (on another node), the cut node still cut.
	feBack, feFailed := probe(t, f, 0, pinned, testenv.HangGuard(60*time.Second))
	var others []int
	for i := range f.nats {
		if i != node {
			others = append(others, i)
		}
	}
	testutil.PollFor(t, testenv.HangGuard(60*time.Second), "the other nodes to drop their routes to the cut one", func() bool {
		for _, i := range others {
			if f.routedPeers(i) != len(others)-1 {
				return false
			}
		}
		return true
	})
	routesDropped := time.Since(cutAt)
	// Service back: no failure for longer than any call can take.
	var back time.Duration = -1
	testutil.PollFor(t, testenv.HangGuard(60*time.Second), "service to be back after the NATS node's cut", func() bool {
		back = l.backAfter(cutAt, time.Now())
		return back >= 0 && time.Since(cutAt.Add(back)) > callTimeout+time.Second
	})
	feNode := f.nodeOf("fe1")
	healAt := time.Now()
	f.topo.Heal(f.nats[node])
	f.waitRouted()
	routedAfter := time.Since(healAt)
	backHeal, probeFailed := probe(t, f, 0, pinned, testenv.HangGuard(60*time.Second))
	runFor(t, l, 2*time.Second)
	l.finish(t)
	end := time.Now()

	during := l.summarize(cutAt, healAt)
	all := l.summarize(begin, end)
	t.Logf("%s host cut (placement: %s): fe1 served again %s after the cut, on %s (probe failures: %s); the other nodes dropped their routes to it %s after the cut; calls during the cut %d ok / %d failed (%s), slowest failure %s, slowest ok %s; service back %s after the cut; after the heal: cluster routed again in %s, fe1 served %s after (probe failures: %s), service back %s after the heal; whole test %d ok / %d failed; updates produced %d, delivered %d (%d once), unsure %d (%d delivered); GET stream: %s",
		f.nats[node].Name, placement, feBack.Round(time.Millisecond), nodeName(f, feNode), feFailed, routesDropped.Round(time.Millisecond),
		during.ok, during.failed, during.kinds(), during.slowestFail.Round(time.Millisecond), during.slowestOK.Round(time.Millisecond), fmtBack(back),
		routedAfter.Round(time.Millisecond), backHeal.Round(time.Millisecond), probeFailed, fmtBack(l.backAfter(healAt, end)), all.ok, all.failed, all.produced, all.delivered, all.once, all.unsure, all.unsureGot, all.resumes)
	all.check(t)
	if during.slowestFail > callTimeout {
		t.Errorf("a call failed only after %s: the client's deadline (%s) passed", during.slowestFail, callTimeout)
	}
	if feNode == node || feNode < 0 {
		t.Errorf("fe1 served again, but on %s (the cut node is %s)", nodeName(f, feNode), f.nats[node].Name)
	}
	// fe1 notices within 2 to 3 of its 5 s pings and reconnects to another
	// node at once; but until the other nodes drop their routes to the cut
	// one, they route part of the requests to the stale subscriptions of
	// the workers that were on it (502 at the worker timeout, 4 s). A node
	// drops a silent route at the third of deploy/nats.conf's 10 s ping
	// ticks without an answer, the first tick after the cut skipped when
	// traffic came just before it: 40 s at most, 4 s, slack: 50 s.
	if feBack > haBound {
		t.Errorf("fe1 served again only %s after its NATS node was cut off, want within %s", feBack, haBound)
	}
	if back < 0 || back > haBound {
		t.Errorf("service was back %s after the cut, want within %s", fmtBack(back), haBound)
	}
	if l.fol.opened < 2 {
		t.Errorf("the follower's GET stream on fe1 was not ended when fe1 lost its NATS node (resumptions: %s)", all.resumes)
	}
	checkSessions(t, f, append(l.sessions(), pinned))
}

func nodeName(f *fleet, i int) string {
	if i < 0 {
		return "no node"
	}
	return f.nats[i].Name
}

// TestWorkerHostCut: a worker's host is cut off while it runs a call
// (sleep, with progress): the client gets its error at the worker timeout
// (4 s without a frame), and the echo calls go to the other worker.
func TestWorkerHostCut(t *testing.T) {
	f := startFleet(t, fleetOptions{})
	placement := f.placement()
	// The call in flight, on whichever worker takes it.
	cl := testenv.NewClient(t, f.feURL[0])
	cl.Initialize(nil)
	s := cl.PostStream(testenv.Request("long", "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60000}, "_meta": map[string]any{"progressToken": 1}}), nil)
	s.NextMessage(t, testenv.HangGuard(10*time.Second)) // a progress: the call runs
	victim := -1
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "a worker to run the sleep", func() bool {
		for i := range f.wk {
			if metric(f.wkAdmin(i), "mcpfleet_worker_inflight_requests") >= 1 {
				victim = i
				return true
			}
		}
		return false
	})
	o := steadyLoad
	o.followOn = 0
	l := startLoad(t, f, o)
	begin := time.Now()
	runFor(t, l, 2*time.Second)

	cutAt := time.Now()
	f.topo.Cut(f.wk[victim])
	msgs, _, ended := s.Rest(testenv.HangGuard(30 * time.Second))
	lostAfter := time.Since(cutAt)
	var lostErr string
	for _, m := range msgs {
		if m.Error != nil {
			lostErr = m.Error.Message
		}
	}
	var back time.Duration = -1
	guard := time.Now().Add(testenv.HangGuard(90 * time.Second))
	testutil.PollFor(t, testenv.HangGuard(100*time.Second), "service to be back after the worker's cut", func() bool {
		if time.Now().After(guard) {
			return true
		}
		back = l.backAfter(cutAt, time.Now())
		// No failure for longer than any call can take.
		return back >= 0 && time.Since(cutAt.Add(back)) > callTimeout+time.Second
	})
	runFor(t, l, 2*time.Second)
	healAt := time.Now()
	f.topo.Heal(f.wk[victim])
	// The worker is back on a node (it reconnects by itself).
	testutil.PollFor(t, testenv.HangGuard(30*time.Second), f.wk[victim].Name+" to be on a NATS node again", func() bool {
		return f.nodeOf(f.wk[victim].Name) >= 0
	})
	rejoined := time.Since(healAt)
	runFor(t, l, 3*time.Second)
	l.finish(t)
	end := time.Now()

	during := l.summarize(cutAt, healAt)
	all := l.summarize(begin, end)
	t.Logf("%s host cut mid-call (placement: %s): the call's client got %q %s after the cut (stream ended: %v); during the cut %d ok / %d failed (%s), slowest failure %s; service back %s after the cut; after the heal %s was on a NATS node again %s later, service back %s; whole test %d ok / %d failed; updates produced %d, delivered %d (%d once), unsure %d (%d delivered); GET stream: %s",
		f.wk[victim].Name, placement, lostErr, lostAfter.Round(time.Millisecond), ended, during.ok, during.failed, during.kinds(), during.slowestFail.Round(time.Millisecond), fmtBack(back),
		f.wk[victim].Name, rejoined.Round(time.Millisecond), fmtBack(l.backAfter(healAt, end)), all.ok, all.failed, all.produced, all.delivered, all.once, all.unsure, all.unsureGot, all.resumes)
	all.check(t)
	if !ended || !strings.Contains(lostErr, "stopped responding") {
		t.Errorf("the call on the cut worker: stream ended %v, error %q; want the worker-lost error", ended, lostErr)
	}
	if lostAfter > 4*time.Second+2*time.Second {
		t.Errorf("the call on the cut worker failed %s after the cut, want at the worker timeout (4s)", lostAfter)
	}
	// Until nats-server drops the cut worker's connection (as for a route
	// in TestNATSNodeCut: 40 s at most with deploy/nats.conf's 10 s pings),
	// the requests it routes there fail at the worker timeout.
	if back < 0 || back > haBound {
		t.Errorf("service was back %s after the cut, want within %s", fmtBack(back), haBound)
	}
	if during.slowestFail > callTimeout {
		t.Errorf("a call failed only after %s: the client's deadline (%s) passed", during.slowestFail, callTimeout)
	}
	checkSessions(t, f, l.sessions())
}

// TestFrontendNATSLossy: fe1's links to the three NATS nodes lose 30% of
// their packets and are 100 ms slower each way while the load runs (the
// echo clients stay on their frontend): calls succeed or fail within
// their deadline, none hangs, fe1's goroutines do not pile up, and once
// the links are clean service is back at once.
func TestFrontendNATSLossy(t *testing.T) {
	f := startFleet(t, fleetOptions{})
	o := steadyLoad
	o.followOn = 0
	o.stay = true // fe1's clients stay on it: it is under load all along
	l := startLoad(t, f, o)
	begin := time.Now()
	runFor(t, l, 2*time.Second)
	goroutinesBefore := metric(f.feAdmin(0), "go_goroutines")

	impairAt := time.Now()
	f.topo.Netem(f.fe[0], "loss 30% delay 100ms", f.nats...)
	peak := goroutinesBefore
	ticker := time.NewTicker(500 * time.Millisecond)
	for range 30 { // 15 s of impairment, sampling fe1's goroutines
		<-ticker.C
		peak = max(peak, metric(f.feAdmin(0), "go_goroutines"))
	}
	ticker.Stop()
	clearAt := time.Now()
	st := f.topo.ClearNetem(f.fe[0])
	runFor(t, l, 3*time.Second)
	l.finish(t)
	end := time.Now()
	var goroutinesAfter float64
	testutil.PollFor(t, testenv.HangGuard(30*time.Second), "fe1's goroutines to settle", func() bool {
		goroutinesAfter = metric(f.feAdmin(0), "go_goroutines")
		return goroutinesAfter <= goroutinesBefore+20
	})

	during := l.summarize(impairAt, clearAt)
	all := l.summarize(begin, end)
	t.Logf("fe1<->NATS loss 30%% delay 100ms for %s (%d of %d packets dropped): %d ok / %d failed (%s), slowest ok %s, slowest failure %s; service back %s after the clear; fe1 goroutines %.0f before, %.0f at most during, %.0f after; whole test %d ok / %d failed; updates produced %d, delivered %d (%d once), unsure %d (%d delivered); GET stream: %s",
		clearAt.Sub(impairAt).Round(time.Millisecond), st.Dropped, st.Packets, during.ok, during.failed, during.kinds(), during.slowestOK.Round(time.Millisecond), during.slowestFail.Round(time.Millisecond),
		fmtBack(l.backAfter(clearAt, end)), goroutinesBefore, peak, goroutinesAfter, all.ok, all.failed, all.produced, all.delivered, all.once, all.unsure, all.unsureGot, all.resumes)
	all.check(t)
	if peak > goroutinesBefore+200 {
		t.Errorf("fe1's goroutines piled up: %.0f before, %.0f during the impairment", goroutinesBefore, peak)
	}
	if during.slowestFail > callTimeout || during.slowestOK > callTimeout {
		t.Errorf("a call took %s (failed) / %s (ok): past the client's deadline", during.slowestFail, during.slowestOK)
	}
	checkSessions(t, f, l.sessions())
}
