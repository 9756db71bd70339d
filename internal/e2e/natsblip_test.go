package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// reconnectedRE is the log line of a NATS connection that came back (on
// the server of that URL).
var reconnectedRE = regexp.MustCompile(`msg="nats reconnected" url=(\S+)`)

// blipCase is how frontend A loses its NATS node in TestNATSBlipAfterResume.
type blipCase struct {
	name string
	// kill SIGKILLs A's node (node 1); otherwise A's relay to it is cut
	// (node 1 lives on, out of A's reach).
	kill bool
	// hold keeps A's relays to nodes 2 and 3 shut while the first
	// updates are raised, so A is off NATS all that time; otherwise they
	// are open from the start and A reconnects at once, while the
	// updates are being raised.
	hold bool
}

// TestNATSBlipAfterResume (issue 18): a frontend whose NATS connection
// blips, reconnecting to another node of a NATS cluster, after its
// client resumed its GET stream elsewhere. Three nats-server nodes;
// frontend A reaches them through relays the test owns, and starts on
// node 1 (the only relay open when it connects); frontend B is on node 2,
// the worker on node 3. A legacy client subscribed to K+N+M URIs has its
// GET stream on A and an event id; it resumes the stream on B with
// Last-Event-ID while A still holds it and is healthy: A's stream ends
// (superseded). K updates are raised; then A loses node 1 (its relay
// cut, or the node SIGKILLed) and reconnects to node 2 or 3 by itself. N
// updates are raised during the blip, M once A is ready again, then a
// sentinel: each update reaches B's stream exactly once, A's old stream
// carries none after the resume, A serves again (a new GET stream there
// gets the next update and supersedes B's), and the resumed stream's log
// holds each update once (a second resumption replays each once).
func TestNATSBlipAfterResume(t *testing.T) {
	for _, bc := range []blipCase{
		{name: "relay cut", hold: true},
		{name: "node killed", kill: true, hold: true},
		{name: "relay cut, instant reconnect"},
		{name: "node killed, instant reconnect", kill: true},
	} {
		t.Run(bc.name, func(t *testing.T) { testNATSBlip(t, bc) })
	}
}

func testNATSBlip(t *testing.T, bc blipCase) {
	const k, n, m = 5, 20, 20
	cluster := testenv.StartNATSCluster(t, 3)
	redisURL := testutil.StartRedis(t)
	testenv.StartWorker(t, cluster.URLs[2], "--fixture", "conformance")
	_, urlB := testenv.StartFrontend(t, cluster.URLs[1], redisURL)
	// A's way to each node is a relay. Only the one to node 1 lets A in
	// when A connects (nats.go tries the list in random order), so A is
	// on node 1; the nodes advertise no other URL to A.
	relays := make([]*relay, len(cluster.URLs))
	aURLs := make([]string, len(cluster.URLs))
	for i, u := range cluster.URLs {
		relays[i] = startRelay(t, strings.TrimPrefix(u, "nats://"))
		aURLs[i] = relays[i].URL()
		if i > 0 {
			relays[i].Cut()
		}
	}
	procA, urlA := testenv.StartFrontend(t, strings.Join(aURLs, ","), redisURL)
	if got := cluster.Clients(t, 0); !slices.Equal(got, []string{"mcpfleet-frontend"}) {
		t.Fatalf("node 1's clients: %q, want frontend A alone", got)
	}
	if !bc.hold {
		relays[1].Heal()
		relays[2].Heal()
	}

	uri := func(i int) string { return fmt.Sprintf("test://natsblip/%d", i) }
	const sentinel = "test://natsblip/sentinel"
	uris := []string{sentinel}
	for i := range k + n + m {
		uris = append(uris, uri(i))
	}
	// The legacy client: subscribed to every URI, its GET stream on A.
	cl := testenv.NewClient(t, urlA)
	cl.Initialize(nil)
	for i, u := range uris {
		cl.Call(100+i, "resources/subscribe", map[string]any{"uri": u})
	}
	touch := func(via *testenv.Client, id any, u string) {
		t.Helper()
		r := via.Post(testenv.Request(id, "tools/call", callParams("touch_resource", map[string]any{"uri": u})), nil)
		if r.Status != http.StatusOK || r.ErrorCode() != 0 || !strings.Contains(string(r.Body), "touched") {
			t.Fatalf("touch_resource %s: %s", u, r)
		}
	}
	getA := cl.OpenGet(nil)
	if getA.Status != http.StatusOK {
		t.Fatalf("GET on A: HTTP %d %s", getA.Status, getA.Body)
	}
	// A third client, on B, raises the updates. One before the resume, so
	// the stream has an event to resume after.
	toucher := testenv.NewClient(t, urlB)
	toucher.Initialize(nil)
	touch(toucher, "before", sentinel)
	var lastID string
	for lastID == "" {
		ev, msg := getA.NextMessage(t, testenv.HangGuard(10*time.Second))
		if updatedURI(msg) == sentinel {
			lastID = ev.ID
		}
	}

	// The client resumes its stream on B while A, healthy, still holds it:
	// A's stream ends, superseded (a hang guard, not a latency target).
	clB := testenv.NewClient(t, urlB)
	clB.SessionID, clB.ProtocolVersion = cl.SessionID, cl.ProtocolVersion
	resumed := time.Now()
	getB := clB.OpenGet(map[string]string{"Last-Event-ID": lastID})
	if getB.Status != http.StatusOK {
		t.Fatalf("resume on B: HTTP %d %s", getB.Status, getB.Body)
	}
	oldA, _, endedA := getA.Rest(testenv.HangGuard(5 * time.Second))
	supersededAfter := time.Since(resumed)
	if !endedA {
		t.Errorf("A's GET stream was still open %s after the client resumed it on B: not superseded", supersededAfter.Round(time.Millisecond))
	}
	// K updates while A is healthy: they go to B's stream only.
	for i := range k {
		touch(toucher, i, uri(i))
	}

	// The blip: A loses node 1.
	faultAt := time.Now()
	if bc.kill {
		cluster.Nodes[0].Kill()
	} else {
		relays[0].Cut()
	}
	var healed time.Time
	if bc.hold {
		testutil.PollFor(t, testenv.HangGuard(10*time.Second), "A to be not ready after losing node 1", func() bool {
			return readyStatus(t, procA) == http.StatusServiceUnavailable
		})
	}
	for i := k; i < k+n; i++ {
		touch(toucher, i, uri(i))
	}
	if bc.hold {
		healed = time.Now()
		relays[1].Heal()
		relays[2].Heal()
	}
	// A reconnects by itself, to node 2 or 3, and is ready again.
	at := procA.WaitLog(t, reconnectedRE, 20*time.Second)
	node := slices.Index(aURLs, at) + 1
	if node < 2 {
		t.Fatalf("A reconnected to %s, want the relay to node 2 or 3 (%q)", at, aURLs[1:])
	}
	testutil.PollFor(t, testenv.HangGuard(20*time.Second), "A to be ready again", func() bool {
		return readyStatus(t, procA) == http.StatusOK
	})
	readyAt := time.Now()
	for i := k + n; i < k+n+m; i++ {
		touch(toucher, i, uri(i))
	}
	// The sentinel last: once it arrives, everything raised before it has.
	touch(toucher, "after", sentinel)

	onB := map[string]int{}
	for onB[sentinel] == 0 {
		_, msg := getB.NextMessage(t, testenv.HangGuard(15*time.Second))
		if u := updatedURI(msg); u != "" {
			onB[u]++
		}
	}
	if !endedA {
		// Not superseded: the blip (BusLost) must have ended it.
		more, _, ended := getA.Rest(testenv.HangGuard(5 * time.Second))
		oldA = append(oldA, more...)
		if !ended {
			t.Errorf("A's old GET stream was still open after the blip")
		}
	}
	onA := 0
	for _, msg := range oldA {
		if updatedURI(msg) != "" {
			onA++
		}
	}
	delivered, once := 0, 0
	for i := range k + n + m {
		delivered += onB[uri(i)]
		if onB[uri(i)] == 1 {
			once++
		}
	}
	what := "during the blip"
	if !bc.hold {
		what = "right after the fault, while A reconnected"
	}
	offNATS := ""
	if bc.hold {
		offNATS = fmt.Sprintf(" (%s after its relays to nodes 2 and 3 reopened)", readyAt.Sub(healed).Round(time.Millisecond))
	}
	t.Logf("nats blip (%s): produced %d updates (%d after the resume, %d %s, %d after A was ready again); delivered on B %d (%d exactly once), on A's old stream after the resume %d; A's stream ended %s after the resume; A ready again %s after the fault%s, on node %d",
		bc.name, k+n+m, k, n, what, m, delivered, once, onA, supersededAfter.Round(time.Millisecond), readyAt.Sub(faultAt).Round(time.Millisecond), offNATS, node)
	for i := range k + n + m {
		if onB[uri(i)] != 1 {
			t.Errorf("update %d: B's stream got it %d times, want once", i, onB[uri(i)])
		}
	}
	if onA != 0 {
		t.Errorf("A's old stream carried %d updates after the client resumed on B", onA)
	}

	// A serves again: a new GET stream there gets the next update, and the
	// session's stream on B ends (superseded), so each message still goes
	// to one stream.
	getA2 := cl.OpenGet(nil)
	if getA2.Status != http.StatusOK {
		t.Fatalf("a new GET stream on A after the blip: HTTP %d %s", getA2.Status, getA2.Body)
	}
	rest, _, ended := getB.Rest(testenv.HangGuard(5 * time.Second))
	if !ended {
		t.Fatal("B's GET stream was not superseded by the new one on A")
	}
	for _, msg := range rest {
		if u := updatedURI(msg); u != "" {
			t.Errorf("B's stream got %s after the counts", u)
		}
	}
	touch(toucher, "again", uri(0))
	for {
		_, msg := getA2.NextMessage(t, testenv.HangGuard(10*time.Second))
		if updatedURI(msg) == uri(0) {
			break
		}
	}

	// The resumed stream's log holds each update once: a client that
	// resumes it again after the same event gets each once more, up to
	// the sentinel.
	replay := cl.OpenGet(map[string]string{"Last-Event-ID": lastID})
	if replay.Status != http.StatusOK {
		t.Fatalf("resuming the stream again on A: HTTP %d %s", replay.Status, replay.Body)
	}
	logged := map[string]int{}
	for logged[sentinel] == 0 {
		_, msg := replay.NextMessage(t, testenv.HangGuard(10*time.Second))
		if u := updatedURI(msg); u != "" {
			logged[u]++
		}
	}
	for i := range k + n + m {
		if logged[uri(i)] != 1 {
			t.Errorf("update %d: logged %d times in the resumed stream's log, want once", i, logged[uri(i)])
		}
	}
}
