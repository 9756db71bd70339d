package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The load of TestNATSNodeKilledUnderLoad.
const (
	// loadTick paces every load loop: one request per tick and loop.
	loadTick = 50 * time.Millisecond
	// loadDeadline is each load request's own deadline (its HTTP client's
	// timeout): a request still unanswered then hangs.
	loadDeadline = 30 * time.Second
	// steadyCount and steadyInterval shape each progress_steady run of a
	// POST-stream client: 60 notifications 50 ms apart, 3 s of work.
	steadyCount    = 60
	steadyInterval = 50
	// touchURIs bounds the toucher: one URI per touch, each touched once.
	touchURIs = 400
	// workerTimeout is the frontends' default WorkerTimeout: how long a
	// request may go without a frame from its worker before it fails.
	workerTimeout = 4 * time.Second
	// sleepMs is how long each call of the slower callers takes.
	sleepMs = 250
)

// TestNATSNodeKilledUnderLoad (issue 19 point 1): a node of a 3-node NATS
// cluster is SIGKILLed under a steady load. Every process is given the
// full node list (--nats-url a,b,c); frontend A and worker W1 are
// connected to node 1, frontend B and worker W2 to the others (nats.go
// picks a node at random: a process that lands elsewhere is stopped and
// started again). Through both frontends, for the whole test: legacy and
// modern clients call echo in loops (and sleep, 250 ms, so that calls are
// in flight through A at the kill); legacy clients run progress_steady
// on POST streams, one after the other, resuming each stream that ends
// early with Last-Event-ID at either frontend; a legacy client holds a GET
// stream subscribed to URIs a toucher touches one by one, resuming it the
// same way. Node 1 is killed mid-run: A and W1 reconnect to node 2 or 3
// by themselves.
//
// Asserted: every request in flight at the kill or sent during the
// outage completes or fails fast with a clear error (HTTP 502 or 503, or
// a JSON-RPC error) within the worker timeout and a margin, never hangs;
// new requests succeed again within a bound (the time to the first
// success and to a full second of only successes are measured), and none
// fails after that second; every progress notification and final
// response of every durable POST stream, and every update touched, is
// delivered once (an update whose touch was refused with 503 never, one
// whose touch failed otherwise at most once); every legacy session still
// works on both frontends. Then node 1 is restarted: a frontend connected
// to it alone serves the sessions, a call and a new GET stream.
func TestNATSNodeKilledUnderLoad(t *testing.T) {
	cluster := testenv.StartNATSCluster(t, 3)
	redisURL := testutil.StartRedis(t)
	natsURL := cluster.URL()
	pl := &placer{t: t, cluster: cluster}
	w1 := pl.start("W1", "mcpfleet-worker", true, func() *testenv.Proc {
		return testenv.StartWorker(t, natsURL, "--fixture", "conformance")
	})
	pl.start("W2", "mcpfleet-worker", false, func() *testenv.Proc {
		return testenv.StartWorker(t, natsURL, "--fixture", "conformance")
	})
	var urls [2]string
	feA := pl.start("A", "mcpfleet-frontend", true, func() *testenv.Proc {
		p, u := testenv.StartFrontend(t, natsURL, redisURL)
		urls[0] = u
		return p
	})
	feB := pl.start("B", "mcpfleet-frontend", false, func() *testenv.Proc {
		p, u := testenv.StartFrontend(t, natsURL, redisURL)
		urls[1] = u
		return p
	})
	t.Logf("placement: %s", strings.Join(pl.placed, ", "))

	tr := &http.Transport{ResponseHeaderTimeout: loadDeadline, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: loadDeadline}
	streams := &http.Client{Transport: tr} // no timeout: the readers bound them
	led := &ledger{}
	var sessions []legacySession
	newSession := func() legacySession {
		cl := testenv.NewClient(t, urls[:]...)
		cl.Initialize(nil)
		s := legacySession{id: cl.SessionID, version: cl.ProtocolVersion}
		sessions = append(sessions, s)
		return s
	}

	// The GET client, subscribed to every URI the toucher will touch.
	uri := func(k int) string { return "test://natsnode/" + strconv.Itoa(k) }
	const sentinel, afterRestart = "test://natsnode/sentinel", "test://natsnode/after-restart"
	getSess := newSession()
	{
		cl := testenv.NewClient(t, urls[:]...)
		cl.SessionID, cl.ProtocolVersion = getSess.id, getSess.version
		for k := range touchURIs {
			cl.Call(1000+k, "resources/subscribe", map[string]any{"uri": uri(k)})
		}
		cl.Call("s1", "resources/subscribe", map[string]any{"uri": sentinel})
		cl.Call("s2", "resources/subscribe", map[string]any{"uri": afterRestart})
	}
	gc := &getClient{sess: getSess, got: map[string]int{}, lists: map[string]int{}}
	th := &toucher{sess: newSession(), state: make([]touchState, touchURIs)}
	var steadies []*steadyClient
	for i := range 4 {
		steadies = append(steadies, &steadyClient{sess: newSession(), home: i % 2})
	}
	var echoes []legacySession
	for range 3 {
		echoes = append(echoes, newSession())
	}
	sleepers := []legacySession{newSession(), newSession()}

	stop := make(chan struct{})    // ends the request loops and the steady clients
	getStop := make(chan struct{}) // ends the GET client
	var wg, getWG sync.WaitGroup
	var callers []loadCaller
	for _, s := range echoes {
		echo := func(i int) (map[string]any, string) {
			text := fmt.Sprintf("echo %d", i)
			return map[string]any{"text": text}, `"` + text + `"`
		}
		callers = append(callers, loadCaller{kind: "legacy echo", sess: s, tool: "echo", args: echo},
			loadCaller{kind: "modern echo", modern: true, tool: "echo", args: echo})
	}
	// Slower calls, so that some are in flight through A at the kill.
	sleep := func(int) (map[string]any, string) { return map[string]any{"ms": sleepMs}, "slept" }
	for _, s := range sleepers {
		callers = append(callers, loadCaller{kind: "legacy sleep", sess: s, tool: "sleep", args: sleep},
			loadCaller{kind: "modern sleep", modern: true, tool: "sleep", args: sleep})
	}
	for i, c := range callers {
		wg.Add(1)
		go c.loop(&wg, hc, led, urls, i, stop)
	}
	wg.Add(1)
	go th.loop(&wg, hc, led, urls, uri, stop)
	for _, sc := range steadies {
		wg.Add(1)
		go sc.loop(t, &wg, streams, urls, stop)
	}
	getWG.Add(1)
	go gc.loop(t, &getWG, streams, urls, getStop)
	var stopOnce, getStopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { close(stop) }) }
	stopGet := func() { getStopOnce.Do(func() { close(getStop) }) }
	defer stopGet() // on a failure too: the loops end by themselves
	defer stopLoad()

	// The load is under way: requests succeed through both frontends,
	// every steady client is in the middle of a run, the GET stream gets
	// updates.
	testutil.PollFor(t, testenv.HangGuard(30*time.Second), "the load to be under way", func() bool {
		for _, sc := range steadies {
			if sc.progress.Load() < 5 {
				return false
			}
		}
		return led.okCount() >= 100 && gc.count() >= 10
	})

	// The kill, while slower calls are under way through A.
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "sleep calls in flight through A", func() bool {
		return led.inFlight("legacy sleep", 0)+led.inFlight("modern sleep", 0) > 0
	})
	kill := time.Now()
	cluster.Nodes[0].Kill()
	reA := feA.WaitLog(t, reconnectedRE, 20*time.Second)
	reW := w1.WaitLog(t, reconnectedRE, 20*time.Second)
	testutil.PollFor(t, testenv.HangGuard(20*time.Second), "A to be ready again", func() bool {
		return readyStatus(t, feA) == http.StatusOK
	})
	readyA := time.Since(kill)
	reconnA, reconnW := reconnectedAfter(feA, kill), reconnectedAfter(w1, kill)
	for what, u := range map[string]string{"A": reA, "W1": reW} {
		if u == cluster.URLs[0] || !slices.Contains(cluster.URLs, u) {
			t.Errorf("%s reconnected to %s, want node 2 or 3 (%q)", what, u, cluster.URLs[1:])
		}
	}

	// Recovery: a full second of only successes through both frontends.
	// Then the load goes on until each steady client has completed a run
	// started after the kill and 200 more requests have succeeded.
	recoverGuard := testenv.HangGuard(15 * time.Second)
	var rec recovery
	testutil.PollFor(t, recoverGuard+testenv.HangGuard(5*time.Second), "a full second of only successes after the kill", func() bool {
		rec = computeRecovery(led.snapshot(), kill)
		return rec.found
	})
	okAtRecovery := led.okCount()
	testutil.PollFor(t, testenv.HangGuard(60*time.Second), "every steady client to complete a run started after the kill", func() bool {
		for _, sc := range steadies {
			if sc.completedAfter(kill) == 0 {
				return false
			}
		}
		return led.okCount() >= okAtRecovery+200
	})
	stopLoad()
	loopsDone := make(chan struct{})
	go func() { wg.Wait(); close(loopsDone) }()
	select {
	case <-loopsDone:
	case <-time.After(testenv.HangGuard(30 * time.Second)):
		t.Fatal("the load loops did not end")
	}

	// The sentinel, touched last: the GET client then has every update.
	sessCl := func(s legacySession, u string) *testenv.Client {
		cl := testenv.NewClient(t, u)
		cl.SessionID, cl.ProtocolVersion = s.id, s.version
		return cl
	}
	if r := sessCl(th.sess, urls[1]).Post(testenv.Request("sentinel", "tools/call", callParams("touch_resource", map[string]any{"uri": sentinel})), nil); r.Status != http.StatusOK || r.ErrorCode() != 0 {
		t.Fatalf("touching the sentinel: %s", r)
	}
	if !testutil.WaitFor(testenv.HangGuard(30*time.Second), func() bool {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if gc.got[sentinel] == 0 {
			return false
		}
		for k, st := range th.state {
			if st == touchOK && gc.got[uri(k)] == 0 {
				return false
			}
		}
		return true
	}) {
		t.Errorf("the GET client did not get every update touched within the hang guard")
	}
	stopGet()
	getDone := make(chan struct{})
	go func() { getWG.Wait(); close(getDone) }()
	select {
	case <-getDone:
	case <-time.After(testenv.HangGuard(10 * time.Second)):
		t.Fatal("the GET client did not end")
	}

	// The requests.
	all := led.snapshot()
	rec = computeRecovery(all, kill)
	failBound := workerTimeout + testenv.HangGuard(2*time.Second)
	var inFlight, failed int
	var slowest outcome
	reasons, kinds, atKill := map[string]int{}, map[string]int{}, map[string]int{}
	for _, o := range all {
		kinds[o.kind]++
		if o.start.Before(kill) && o.end.After(kill) {
			inFlight++
			res := "ok"
			if !o.ok {
				res = o.what
			}
			atKill[o.kind+" via "+feName(o.fe)+": "+res]++
		}
		if o.ok {
			continue
		}
		failed++
		reasons[o.what]++
		if o.dur() > slowest.dur() {
			slowest = o
		}
		switch {
		case o.end.Before(kill):
			t.Errorf("%s through %s failed before the kill: %s", o.kind, feName(o.fe), o.what)
		case !o.clear:
			t.Errorf("%s through %s, sent at kill%s, failed without a clear error after %s: %s", o.kind, feName(o.fe), rel(o.start, kill), o.dur().Round(time.Millisecond), o.what)
		case o.dur() > failBound:
			t.Errorf("%s through %s, sent at kill%s, failed only after %s (bound %s): %s", o.kind, feName(o.fe), rel(o.start, kill), o.dur().Round(time.Millisecond), failBound, o.what)
		}
	}
	if !rec.found {
		t.Errorf("no full second of only successes after the kill")
	} else {
		if rec.fullFrom > recoverGuard {
			t.Errorf("a full second of only successes began only %s after the kill (guard %s)", rec.fullFrom.Round(time.Millisecond), recoverGuard)
		}
		for _, o := range all {
			if !o.ok && o.start.After(kill.Add(rec.fullFrom+time.Second)) {
				t.Errorf("%s through %s, sent at kill%s, after the recovery, failed: %s", o.kind, feName(o.fe), rel(o.start, kill), o.what)
			}
		}
	}

	// The POST streams.
	var runs, produced, delivered, resumes, notDurable, refused int
	for i, sc := range steadies {
		sc.mu.Lock()
		for j, r := range sc.runs {
			runs++
			produced += r.count + 1
			delivered += len(r.progress) + btoi(r.result != "")
			r.check(t, 100*i+j)
		}
		resumes += sc.resumes
		notDurable += sc.notDurable
		refused += sc.refused
		for _, p := range sc.problems {
			t.Errorf("steady client %d: %s", i, p)
		}
		sc.mu.Unlock()
	}

	// The GET stream.
	gc.mu.Lock()
	var nOK, nRefused, nUnsure, updates int
	for k, st := range th.state {
		n := gc.got[uri(k)]
		updates += n
		switch st {
		case touchOK:
			nOK++
			if n != 1 {
				t.Errorf("update %d (touched): delivered %d times, want once", k, n)
			}
		case touchRefused:
			nRefused++
			if n != 0 {
				t.Errorf("update %d (its touch refused with 503): delivered %d times, want never", k, n)
			}
		case touchUnsure:
			nUnsure++
			if n > 1 {
				t.Errorf("update %d (its touch failed): delivered %d times, want at most once", k, n)
			}
		case touchNone:
			if n != 0 {
				t.Errorf("update %d (never touched): delivered %d times", k, n)
			}
		}
	}
	if gc.got[sentinel] != 1 {
		t.Errorf("the sentinel: delivered %d times, want once", gc.got[sentinel])
	}
	checkIncreasing(t, "the GET stream", gc.ids)
	for _, p := range gc.problems {
		t.Errorf("GET client: %s", p)
	}
	getOpens, lists := slices.Clone(gc.opens), fmt.Sprint(gc.lists)
	gc.mu.Unlock()
	if th.exhausted.Load() {
		t.Logf("the toucher touched all %d URIs before the end of the load", touchURIs)
	}

	t.Logf("nats node killed under load: requests %d (%s), %d in flight at the kill (%s); failed during the outage %d (%s), slowest %s; A reconnected %s after the kill (ready %s after), W1 %s after; first success %s after the kill, a full second of only successes from %s (last failure ended %s after the kill); POST streams: %d runs, produced %d messages, delivered %d, %d resumptions, %d lost before their first event, %d POSTs refused; GET stream: %d touches (%d refused, %d failed otherwise), produced %d updates, delivered %d, list_changed %s, opened %s",
		len(all), fmtCounts(kinds), inFlight, fmtCounts(atKill), failed, fmtCounts(reasons), slowest.dur().Round(time.Millisecond),
		reconnA, readyA.Round(time.Millisecond), reconnW,
		rec.firstOK.Round(time.Millisecond), rec.fullFrom.Round(time.Millisecond), rec.lastFail.Round(time.Millisecond),
		runs, produced, delivered, resumes, notDurable, refused,
		nOK+nRefused+nUnsure, nRefused, nUnsure, nOK, updates, lists, strings.Join(getOpens, " "))

	if slowest.dur() > time.Second {
		// What the frontend said about it (a request its worker lost).
		fe := []*testenv.Proc{feA, feB}[slowest.fe]
		var warns []string
		for _, l := range strings.Split(fe.Log(), "\n") {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				warns = append(warns, l)
			}
		}
		said := feName(slowest.fe) + " logged no warning or error"
		if len(warns) > 0 {
			said = fmt.Sprintf("%s's warnings and errors (the last 10 of %d):\n%s", feName(slowest.fe), len(warns), strings.Join(warns[max(0, len(warns)-10):], "\n"))
		}
		t.Logf("the slowest failure: %s through %s, sent at kill%s, %s after %s; %s",
			slowest.kind, feName(slowest.fe), rel(slowest.start, kill), slowest.what, slowest.dur().Round(time.Millisecond), said)
	}

	// No session lost: each works on both frontends.
	echoOK := func(s legacySession, u string, id any) {
		t.Helper()
		r := sessCl(s, u).Post(testenv.Request(id, "tools/call", callParams("echo", map[string]any{"text": "still here"})), nil)
		if r.Status != http.StatusOK || r.ErrorCode() != 0 || !strings.Contains(string(r.Body), "still here") {
			t.Errorf("session %.8s on %s: %s", s.id, u, r)
		}
	}
	for i, s := range sessions {
		for j, u := range urls {
			echoOK(s, u, fmt.Sprintf("after-%d-%d", i, j))
		}
	}

	// Node 1 again: a frontend connected to it alone serves the sessions,
	// a call and a new GET stream.
	cluster.Restart(t, 0)
	_, urlC := testenv.StartFrontend(t, cluster.URLs[0], redisURL)
	if got := cluster.Clients(t, 0); !slices.Contains(got, "mcpfleet-frontend") {
		t.Fatalf("node 1's clients after the restart: %q, want frontend C", got)
	}
	for i, s := range sessions {
		echoOK(s, urlC, fmt.Sprintf("restart-%d", i))
	}
	if r := testenv.NewModernClient(t, urlC).Post(testenv.ModernRequest("m", "tools/call", callParams("echo", map[string]any{"text": "modern on C"}), nil)); r.Status != http.StatusOK || r.ErrorCode() != 0 || !strings.Contains(string(r.Body), "modern on C") {
		t.Errorf("a modern call on C: %s", r)
	}
	getC := sessCl(getSess, urlC).OpenGet(nil)
	if getC.Status != http.StatusOK {
		t.Fatalf("a new GET stream on C: HTTP %d %s", getC.Status, getC.Body)
	}
	if r := sessCl(th.sess, urls[0]).Post(testenv.Request("restart", "tools/call", callParams("touch_resource", map[string]any{"uri": afterRestart})), nil); r.Status != http.StatusOK || r.ErrorCode() != 0 {
		t.Fatalf("touching %s through A: %s", afterRestart, r)
	}
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatalf("the new GET stream on C: 100 messages, none the update of %s", afterRestart)
		}
		_, m := getC.NextMessage(t, testenv.HangGuard(10*time.Second))
		if u := updatedURI(m); u == afterRestart {
			break
		} else if u != "" {
			t.Errorf("the new GET stream on C got %s", u)
		}
	}
}

// reconnectedAtRE is the log line of a NATS connection that came back,
// with its time.
var reconnectedAtRE = regexp.MustCompile(`(?m)^time=(\S+) level=\S+ msg="nats reconnected"`)

// reconnectedAfter is how long after at p's NATS connection came back,
// from its log (to the millisecond; -1 when not found).
func reconnectedAfter(p *testenv.Proc, at time.Time) time.Duration {
	m := reconnectedAtRE.FindStringSubmatch(p.Log())
	if m == nil {
		return -1
	}
	when, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		return -1
	}
	return when.Sub(at).Round(time.Millisecond)
}

// rel is when t was relative to at: "+12ms", "-3ms".
func rel(t, at time.Time) string {
	d := t.Sub(at).Round(time.Millisecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func feName(i int) string { return string(rune('A' + i)) }

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// checkIncreasing fails the test unless the numbers ending event ids
// (after their last ':') strictly increase.
func checkIncreasing(t *testing.T, what string, ids []string) {
	t.Helper()
	prev := uint64(0)
	for _, id := range ids {
		n, _ := strconv.ParseUint(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
		if n <= prev {
			t.Errorf("%s: event ids not strictly increasing: %v", what, ids)
			return
		}
		prev = n
	}
}

// placer starts processes until each is connected to the NATS node it is
// meant to be on: node 1, or one of the others. nats.go tries a URL list
// in random order, so a process given the whole list lands on any node; one
// that landed elsewhere is stopped and started again.
type placer struct {
	t       *testing.T
	cluster *testenv.NATSCluster
	placed  []string
}

// counts is how many connections named name each node has.
func (p *placer) counts(name string) []int {
	n := make([]int, len(p.cluster.URLs))
	for i := range n {
		for _, c := range p.cluster.Clients(p.t, i) {
			if c == name {
				n[i]++
			}
		}
	}
	return n
}

func (p *placer) start(what, name string, onNode1 bool, start func() *testenv.Proc) *testenv.Proc {
	p.t.Helper()
	const attempts = 30 // (2/3)^30: landing on node 1 fails that often
	for attempt := 1; attempt <= attempts; attempt++ {
		before := p.counts(name)
		proc := start()
		var now []int
		testutil.PollFor(p.t, testenv.HangGuard(10*time.Second), what+" to show on a node's /connz", func() bool {
			now = p.counts(name)
			sum := 0
			for i := range now {
				sum += now[i] - before[i]
			}
			return sum == 1
		})
		node := 0
		for i := range now {
			if now[i] > before[i] {
				node = i
			}
		}
		if (node == 0) == onNode1 {
			p.placed = append(p.placed, fmt.Sprintf("%s on node %d (attempt %d)", what, node+1, attempt))
			return proc
		}
		proc.Stop(10 * time.Second)
		testutil.PollFor(p.t, testenv.HangGuard(10*time.Second), what+" to leave node "+strconv.Itoa(node+1), func() bool {
			return slices.Equal(p.counts(name), before)
		})
	}
	p.t.Fatalf("%s: not placed as wanted after %d attempts", what, attempts)
	return nil
}

// outcome is what one load request got.
type outcome struct {
	kind       string // legacy echo, modern echo, touch
	fe         int    // 0: A, 1: B
	start, end time.Time
	status     int // the HTTP status (0 when none came)
	ok         bool
	// clear: a failure the client is told about plainly: HTTP 502 or
	// 503, or a JSON-RPC error.
	clear bool
	what  string // the failure, in a few words
}

func (o outcome) dur() time.Duration { return o.end.Sub(o.start) }

// ledger collects the outcomes of every load request.
type ledger struct {
	mu       sync.Mutex
	all      []outcome
	ok       int
	inflight map[string]int // requests under way, by kind and frontend
}

// post sends one load request (loadPost) and records its outcome.
func (l *ledger) post(hc *http.Client, kind string, fe int, url string, hdr map[string]string, msg any, want string) outcome {
	key := kind + "@" + feName(fe)
	l.mu.Lock()
	if l.inflight == nil {
		l.inflight = map[string]int{}
	}
	l.inflight[key]++
	l.mu.Unlock()
	o := loadPost(hc, url, hdr, msg, want)
	o.kind, o.fe = kind, fe
	l.mu.Lock()
	l.inflight[key]--
	l.all = append(l.all, o)
	if o.ok {
		l.ok++
	}
	l.mu.Unlock()
	return o
}

// inFlight is how many requests of kind are under way through frontend fe.
func (l *ledger) inFlight(kind string, fe int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inflight[kind+"@"+feName(fe)]
}

func (l *ledger) okCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok
}

func (l *ledger) snapshot() []outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// recovery is how long new requests took to succeed again after the kill.
type recovery struct {
	found    bool
	firstOK  time.Duration // until the end of the first success of a request sent after the kill
	fullFrom time.Duration // until the start of the first full second in which every request sent succeeded
	lastFail time.Duration // until the end of the last failure
}

// computeRecovery finds, in the outcomes, the first full second after
// kill in which every request sent succeeded (at least 10 of them, through
// both frontends, and the load observed past its end).
func computeRecovery(all []outcome, kill time.Time) recovery {
	var rec recovery
	cands := []time.Time{kill}
	var last time.Time
	for _, o := range all {
		if o.start.After(last) {
			last = o.start
		}
		if o.ok && !o.start.Before(kill) && (rec.firstOK == 0 || o.end.Sub(kill) < rec.firstOK) {
			rec.firstOK = o.end.Sub(kill)
		}
		if !o.ok {
			if o.end.Sub(kill) > rec.lastFail {
				rec.lastFail = o.end.Sub(kill)
			}
			if o.start.After(kill) {
				cands = append(cands, o.start)
			}
		}
	}
	slices.SortFunc(cands, func(a, b time.Time) int { return a.Compare(b) })
	for _, c := range cands {
		end := c.Add(time.Second)
		if !last.After(end) {
			break
		}
		clean, n := true, 0
		var fes [2]bool
		for _, o := range all {
			if !o.start.After(c) || o.start.After(end) {
				continue
			}
			if !o.ok {
				clean = false
				break
			}
			n++
			fes[o.fe] = true
		}
		if clean && n >= 10 && fes[0] && fes[1] {
			rec.found, rec.fullFrom = true, c.Sub(kill)
			return rec
		}
	}
	return rec
}

// legacySession is a legacy (2025-11-25) session's id and version.
type legacySession struct{ id, version string }

func (s legacySession) header() map[string]string {
	return map[string]string{"Mcp-Session-Id": s.id, "Mcp-Protocol-Version": s.version}
}

// loadPost sends one request and tells what came back: a success is an
// HTTP 200 whose JSON-RPC response is a result containing want.
func loadPost(hc *http.Client, url string, hdr map[string]string, msg any, want string) (o outcome) {
	o.start = time.Now()
	defer func() { o.end = time.Now() }()
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		o.what = "transport: " + err.Error()
		return o
	}
	o.status = resp.StatusCode
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		o.what = "reading the body: " + err.Error()
		return o
	}
	var msgs [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		testenv.ParseSSE(bytes.NewReader(b), func(ev testenv.Event) bool {
			if ev.Data != "" {
				msgs = append(msgs, []byte(ev.Data))
			}
			return true
		})
	} else {
		msgs = [][]byte{b}
	}
	var res *testenv.Message
	for _, raw := range msgs {
		var m testenv.Message
		if json.Unmarshal(raw, &m) == nil && m.Method == "" && (m.Result != nil || m.Error != nil) {
			res = &m
		}
	}
	switch {
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable:
		o.clear, o.what = true, "HTTP "+strconv.Itoa(resp.StatusCode)
		if res != nil && res.Error != nil {
			msg := res.Error.Message
			if len(msg) > 48 {
				msg = msg[:48] + "…"
			}
			o.what += " " + strconv.FormatInt(res.Error.Code, 10) + " " + strconv.Quote(msg)
		}
	case resp.StatusCode != http.StatusOK:
		o.what = fmt.Sprintf("HTTP %d %.100s", resp.StatusCode, b)
	case res == nil:
		o.what = fmt.Sprintf("no response in %.100s", b)
	case res.Error != nil:
		o.clear, o.what = true, fmt.Sprintf("JSON-RPC %d %s", res.Error.Code, res.Error.Message)
	case !strings.Contains(string(res.Result), want):
		o.what = fmt.Sprintf("result %.100s", res.Result)
	default:
		o.ok = true
	}
	return o
}

// loadCaller is one load client: it calls tool in a loop, alternating
// frontends, one call a tick, until stop (at most 2000 calls): on a legacy
// session, or as 2026-07-28 requests (no session) when modern.
type loadCaller struct {
	kind   string
	modern bool
	sess   legacySession
	tool   string
	// args returns the arguments of call i and the text its result has.
	args func(i int) (map[string]any, string)
}

func (c loadCaller) loop(wg *sync.WaitGroup, hc *http.Client, led *ledger, urls [2]string, n int, stop <-chan struct{}) {
	defer wg.Done()
	tick := time.NewTicker(loadTick)
	defer tick.Stop()
	for i := range 2000 {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		fe := (i + n) % 2
		args, want := c.args(i)
		if c.modern {
			msg, hdr := testenv.ModernRequest(i, "tools/call", callParams(c.tool, args), nil)
			led.post(hc, c.kind, fe, urls[fe], hdr, msg, want)
		} else {
			led.post(hc, c.kind, fe, urls[fe], c.sess.header(), testenv.Request(i+1, "tools/call", callParams(c.tool, args)), want)
		}
	}
}

// touchState is what the toucher knows of one URI's update.
type touchState int

const (
	touchNone    touchState = iota // not touched
	touchOK                        // touched: the update was raised
	touchRefused                   // refused with 503: it reached no worker
	touchUnsure                    // failed otherwise: it may have run
)

// toucher touches the URIs one by one, a tick apart, alternating
// frontends, on its own legacy session.
type toucher struct {
	sess      legacySession
	state     []touchState // written by the loop only, read after it ended
	exhausted atomic.Bool
}

func (th *toucher) loop(wg *sync.WaitGroup, hc *http.Client, led *ledger, urls [2]string, uri func(int) string, stop <-chan struct{}) {
	defer wg.Done()
	tick := time.NewTicker(loadTick)
	defer tick.Stop()
	for k := range th.state {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		fe := k % 2
		o := led.post(hc, "touch", fe, urls[fe], th.sess.header(), testenv.Request(k+1, "tools/call", callParams("touch_resource", map[string]any{"uri": uri(k)})), "touched")
		switch {
		case o.ok:
			th.state[k] = touchOK
		case o.status == http.StatusServiceUnavailable:
			th.state[k] = touchRefused
		default:
			th.state[k] = touchUnsure
		}
	}
	th.exhausted.Store(true)
}

// sseStream is an SSE response read in the background (for the load's
// goroutines: nothing here fails the test).
type sseStream struct {
	status int
	body   []byte // a non-SSE response's body
	events chan testenv.Event
	done   chan struct{}
	once   sync.Once
	resp   *http.Response
}

func openSSE(hc *http.Client, method, url string, hdr map[string]string, msg any) (*sseStream, error) {
	var rd io.Reader
	if msg != nil {
		b, _ := json.Marshal(msg)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if msg != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	s := &sseStream{status: resp.StatusCode, events: make(chan testenv.Event, 256), done: make(chan struct{}), resp: resp}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.body, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		close(s.events)
		return s, nil
	}
	go func() { // ends with the body: at its end, or when close closes it
		defer close(s.events)
		defer resp.Body.Close()
		testenv.ParseSSE(resp.Body, func(ev testenv.Event) bool {
			select {
			case s.events <- ev:
				return true
			case <-s.done:
				return false
			}
		})
	}()
	return s, nil
}

func (s *sseStream) close() {
	s.once.Do(func() {
		close(s.done)
		_ = s.resp.Body.Close()
	})
}

// steadyClient runs progress_steady on POST streams of its legacy
// session, one run after the other, each POSTed to its home frontend;
// a stream that ends before its final response is resumed with
// Last-Event-ID at the other frontend, then alternately.
type steadyClient struct {
	sess     legacySession
	home     int
	progress atomic.Int32 // progress notifications of the current run

	mu         sync.Mutex
	runs       []*steadyRun // the durable runs (their stream had an event id)
	started    []time.Time  // when each run was POSTed
	done       []bool       // each run got its final response
	resumes    int
	notDurable int // runs lost before their first event id (not resumable)
	refused    int // POSTs answered 503
	problems   []string
}

func (sc *steadyClient) problem(format string, args ...any) {
	sc.mu.Lock()
	sc.problems = append(sc.problems, fmt.Sprintf(format, args...))
	sc.mu.Unlock()
}

// completedAfter is how many runs POSTed after at got their response.
func (sc *steadyClient) completedAfter(at time.Time) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	n := 0
	for i, s := range sc.started {
		if s.After(at) && sc.done[i] {
			n++
		}
	}
	return n
}

func (sc *steadyClient) loop(t *testing.T, wg *sync.WaitGroup, hc *http.Client, urls [2]string, stop <-chan struct{}) {
	defer wg.Done()
	tick := time.NewTicker(2 * loadTick) // paces the retries of a refused POST or resumption
	defer tick.Stop()
	for n := range 100 {
		select {
		case <-stop:
			return
		default:
		}
		sc.run(t, hc, urls, n, tick)
	}
}

// read takes the stream's events into r until it ends (true) or no event
// has come for a while (false: a stalled stream); lastID follows the
// event ids.
func (sc *steadyClient) read(t *testing.T, s *sseStream, r *steadyRun, lastID *string) bool {
	stall := time.NewTimer(testenv.HangGuard(5 * time.Second))
	defer stall.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return true
			}
			if ev.ID != "" {
				*lastID = ev.ID
			}
			if ev.Comment || ev.Data == "" {
				continue
			}
			var m testenv.Message
			if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
				sc.problem("event data is not JSON: %q", ev.Data)
				continue
			}
			r.take(t, []testenv.Message{m}, []string{ev.ID})
			if m.Method != "" {
				sc.progress.Add(1)
			}
			stall.Reset(testenv.HangGuard(5 * time.Second))
		case <-stall.C:
			s.close()
			return false
		}
	}
}

func (sc *steadyClient) run(t *testing.T, hc *http.Client, urls [2]string, n int, tick *time.Ticker) {
	sc.progress.Store(0)
	msg := testenv.Request(n+1, "tools/call", map[string]any{"name": "progress_steady",
		"arguments": map[string]any{"count": steadyCount, "interval_ms": steadyInterval},
		"_meta":     map[string]any{"progressToken": "p" + strconv.Itoa(n)}})
	started := time.Now()
	s, err := openSSE(hc, http.MethodPost, urls[sc.home], sc.sess.header(), msg)
	if err != nil {
		sc.problem("run %d: POST on %s: %v", n, feName(sc.home), err)
		<-tick.C
		return
	}
	switch {
	case s.status == http.StatusServiceUnavailable:
		sc.mu.Lock()
		sc.refused++
		sc.mu.Unlock()
		<-tick.C
		return
	case s.status == http.StatusBadGateway:
		// The frontend lost NATS before the answer started: nothing to
		// resume (it may still run).
		sc.mu.Lock()
		sc.notDurable++
		sc.mu.Unlock()
		return
	case s.status != http.StatusOK:
		sc.problem("run %d: POST on %s: HTTP %d %.200s", n, feName(sc.home), s.status, s.body)
		<-tick.C
		return
	}
	r := &steadyRun{count: steadyCount}
	var lastID string
	if !sc.read(t, s, r, &lastID) {
		sc.problem("run %d: the POST stream on %s stalled (no event for %s)", n, feName(sc.home), testenv.HangGuard(5*time.Second))
	}
	if r.result == "" && lastID == "" {
		sc.mu.Lock()
		sc.notDurable++
		sc.mu.Unlock()
		return
	}
	fe := 1 - sc.home
	for attempt := 0; r.result == "" && attempt < 40; attempt++ {
		s, err := openSSE(hc, http.MethodGet, urls[fe], mergeHeader(sc.sess.header(), "Last-Event-ID", lastID), nil)
		switch {
		case err != nil:
			sc.problem("run %d: resuming after %s on %s: %v", n, lastID, feName(fe), err)
			<-tick.C
		case s.status == http.StatusServiceUnavailable:
			<-tick.C
		case s.status != http.StatusOK:
			sc.problem("run %d: resuming after %s on %s: HTTP %d %.200s", n, lastID, feName(fe), s.status, s.body)
			<-tick.C
		default:
			sc.mu.Lock()
			sc.resumes++
			sc.mu.Unlock()
			if !sc.read(t, s, r, &lastID) {
				sc.problem("run %d: the stream resumed on %s stalled", n, feName(fe))
			}
		}
		fe = 1 - fe
	}
	if r.result == "" {
		sc.problem("run %d: no final response after resuming (last event %s)", n, lastID)
	}
	sc.mu.Lock()
	sc.runs = append(sc.runs, r)
	sc.started = append(sc.started, started)
	sc.done = append(sc.done, r.result != "")
	sc.mu.Unlock()
}

func mergeHeader(h map[string]string, k, v string) map[string]string {
	h[k] = v
	return h
}

// getClient holds its session's GET stream, opened on A first; when the
// stream ends it resumes it with Last-Event-ID at the other frontend
// (and alternately, on 503), until stopped.
type getClient struct {
	sess legacySession

	mu       sync.Mutex
	got      map[string]int // updates, by URI
	lists    map[string]int // list_changed notifications, by method
	ids      []string       // the event ids of the updates
	last     string
	opens    []string // where the stream was opened, in turn
	problems []string
}

func (g *getClient) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.ids)
}

func (g *getClient) loop(t *testing.T, wg *sync.WaitGroup, hc *http.Client, urls [2]string, stop <-chan struct{}) {
	defer wg.Done()
	tick := time.NewTicker(2 * loadTick) // paces the retries after a 503
	defer tick.Stop()
	fe := 0
	for attempt := 0; attempt < 60; attempt++ {
		select {
		case <-stop:
			return
		default:
		}
		g.mu.Lock()
		hdr := g.sess.header()
		if g.last != "" {
			hdr["Last-Event-ID"] = g.last
		}
		g.mu.Unlock()
		s, err := openSSE(hc, http.MethodGet, urls[fe], hdr, nil)
		if err != nil || s.status != http.StatusOK {
			g.mu.Lock()
			if err != nil {
				g.problems = append(g.problems, fmt.Sprintf("GET on %s: %v", feName(fe), err))
			} else if s.status != http.StatusServiceUnavailable {
				g.problems = append(g.problems, fmt.Sprintf("GET on %s after %q: HTTP %d %.200s", feName(fe), hdr["Last-Event-ID"], s.status, s.body))
			} else {
				g.opens = append(g.opens, feName(fe)+":503")
			}
			g.mu.Unlock()
			fe = 1 - fe
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			continue
		}
		g.mu.Lock()
		g.opens = append(g.opens, feName(fe))
		g.mu.Unlock()
		if !g.read(s, stop) {
			return
		}
		fe = 1 - fe
	}
	g.mu.Lock()
	g.problems = append(g.problems, "the GET stream was opened 60 times")
	g.mu.Unlock()
}

// read takes the stream's events until it ends (true) or stop (false).
func (g *getClient) read(s *sseStream, stop <-chan struct{}) bool {
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return true
			}
			g.mu.Lock()
			if ev.ID != "" {
				g.last = ev.ID
			}
			if !ev.Comment && ev.Data != "" {
				var m testenv.Message
				_ = json.Unmarshal([]byte(ev.Data), &m)
				switch u := updatedURI(m); {
				case strings.HasSuffix(m.Method, "/list_changed"):
					g.lists[m.Method]++
				case u == "":
					g.problems = append(g.problems, "unexpected message: "+ev.Data)
				default:
					g.got[u]++
					g.ids = append(g.ids, ev.ID)
				}
			}
			g.mu.Unlock()
		case <-stop:
			s.close()
			return false
		}
	}
}
