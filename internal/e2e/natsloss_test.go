package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// relay is a TCP relay on loopback that the test runs between a frontend
// and nats-server: Cut closes every relayed connection and refuses new
// ones (the frontend sees its NATS connection drop and fail to come back),
// Heal lets connections through again.
type relay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept() // owned by the relay: ends when Close closes the listener
	t.Cleanup(r.Close)
	return r
}

// URL is the nats:// URL of the relay.
func (r *relay) URL() string { return "nats://" + r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		cut := r.cut
		r.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", r.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns[c], r.conns[up] = struct{}{}, struct{}{}
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(c, up) // each ends when either side is closed
		go r.pipe(up, c)
	}
}

func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// Cut closes the relayed connections and refuses new ones until Heal.
func (r *relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for c := range r.conns {
		_ = c.Close()
	}
}

// Heal lets connections through again.
func (r *relay) Heal() {
	r.mu.Lock()
	r.cut = false
	r.mu.Unlock()
}

// Close stops the relay and waits for its goroutines.
func (r *relay) Close() {
	_ = r.ln.Close()
	r.Cut()
	r.wg.Wait()
}

// readyStatus is the HTTP status of a frontend's /readyz (on its admin
// listener).
func readyStatus(t *testing.T, fe *testenv.Proc) int {
	t.Helper()
	resp, err := http.Get(fe.AdminURL(t) + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// updatedURI returns the uri of a notifications/resources/updated ("" for
// another message).
func updatedURI(m testenv.Message) string {
	if m.Method != "notifications/resources/updated" {
		return ""
	}
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.URI
}

// TestNATSLossOnFrontend cuts frontend A off NATS (a relay the test owns
// between A and nats-server) while a legacy client holds a GET stream on A
// and a modern client a listen stream: both streams end at once (the
// listen stream with its result), A is not ready and answers 503 at once;
// the legacy client resumes on frontend B with Last-Event-ID, the modern
// one listens again on B. The worker raises N updates, A's link heals, M
// more: each client gets every one of the N+M updates exactly once, on
// B's stream only; A feeds nothing of its old streams after the cut, is
// ready again by itself and serves a new GET stream.
func TestNATSLossOnFrontend(t *testing.T) {
	const n, m = 20, 20
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1})
	rl := startRelay(t, strings.TrimPrefix(c.NATSURL, "nats://"))
	feA, urlA := testenv.StartFrontend(t, rl.URL(), c.RedisURL)
	urlB := c.URLs[0]
	uri := func(i int) string { return fmt.Sprintf("test://natsloss/%d", i) }
	const sentinel = "test://natsloss/sentinel"
	uris := []string{sentinel}
	for i := range n + m {
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
	// One update before the cut, so the stream has an event to resume after.
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

	// The modern client's listen stream on A.
	mc := testenv.NewModernClient(t, urlA)
	listenA, _ := openListen(t, mc, "l1", map[string]any{"resourceSubscriptions": uris})

	// Cut A off NATS: both streams end promptly (a hang guard, not a
	// latency target).
	rl.Cut()
	cutAt := time.Now()
	gotA, _, ended := getA.Rest(testenv.HangGuard(5 * time.Second))
	if !ended {
		t.Fatal("A's GET stream stayed open after A lost NATS")
	}
	gotL, _, ended := listenA.Rest(testenv.HangGuard(5 * time.Second))
	if !ended {
		t.Fatal("A's listen stream stayed open after A lost NATS")
	}
	if len(gotL) == 0 || string(gotL[len(gotL)-1].ID) != `"l1"` || !strings.Contains(string(gotL[len(gotL)-1].Result), `"resultType":"complete"`) {
		t.Fatalf("A's listen stream ended without its result: %+v", gotL)
	}
	streamsEnded := time.Since(cutAt)
	if s := readyStatus(t, feA); s != http.StatusServiceUnavailable {
		t.Fatalf("A's /readyz after the cut: %d, want 503", s)
	}
	start := time.Now()
	r := testenv.NewClient(t, urlA)
	r.SessionID, r.ProtocolVersion = cl.SessionID, cl.ProtocolVersion
	rep := r.Post(testenv.Request(1, "tools/call", callParams("echo", map[string]any{"text": "cut"})), nil)
	if d := time.Since(start); d > testenv.HangGuard(2*time.Second) {
		t.Fatalf("a POST to A without NATS took %s", d)
	}
	if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" {
		t.Fatalf("a POST to A without NATS: %s (Retry-After %q), want 503 with Retry-After", rep, rep.Header.Get("Retry-After"))
	}
	if g := r.OpenGet(nil); g.Status != http.StatusServiceUnavailable {
		t.Fatalf("a GET on A without NATS: HTTP %d, want 503", g.Status)
	}

	// The clients go to B: the legacy one resumes its stream, the modern
	// one listens again.
	clB := testenv.NewClient(t, urlB)
	clB.SessionID, clB.ProtocolVersion = cl.SessionID, cl.ProtocolVersion
	getB := clB.OpenGet(map[string]string{"Last-Event-ID": lastID})
	if getB.Status != http.StatusOK {
		t.Fatalf("resume on B: HTTP %d %s", getB.Status, getB.Body)
	}
	mcB := testenv.NewModernClient(t, urlB)
	listenB, _ := openListen(t, mcB, "l1", map[string]any{"resourceSubscriptions": uris})

	for i := range n {
		touch(toucher, i, uri(i))
	}
	rl.Heal()
	testutil.PollFor(t, testenv.HangGuard(20*time.Second), "A to be ready again", func() bool {
		return readyStatus(t, feA) == http.StatusOK
	})
	for i := n; i < n+m; i++ {
		touch(toucher, i, uri(i))
	}
	// The sentinel last: once it arrives, everything raised before it has.
	touch(toucher, "after", sentinel)

	count := func(s *testenv.Stream) map[string]int {
		t.Helper()
		got := map[string]int{}
		for got[sentinel] == 0 {
			_, msg := s.NextMessage(t, testenv.HangGuard(15*time.Second))
			if u := updatedURI(msg); u != "" {
				got[u]++
			}
		}
		return got
	}
	delivered := func(got map[string]int) (total int) {
		for i := range n + m {
			total += got[uri(i)]
		}
		return total
	}
	legacy, modern := count(getB), count(listenB)
	var onA int
	for _, msg := range gotA {
		if u := updatedURI(msg); u != "" && u != sentinel {
			onA++
		}
	}
	t.Logf("nats loss: streams on A ended %s after the cut; produced %d updates (%d during the cut, %d after healing); legacy client got %d on B, %d on A after the cut; modern client got %d on B",
		streamsEnded.Round(time.Millisecond), n+m, n, m, delivered(legacy), onA, delivered(modern))
	for i := range n + m {
		if legacy[uri(i)] != 1 || modern[uri(i)] != 1 {
			t.Errorf("update %d: the legacy client got it %d times on B, the modern client %d times; want once each", i, legacy[uri(i)], modern[uri(i)])
		}
	}
	if onA != 0 {
		t.Errorf("A delivered %d updates after the cut", onA)
	}

	// A serves again: a new GET stream there gets the next update, and the
	// session's stream on B ends (superseded), so each message still goes
	// to one stream.
	getA2 := cl.OpenGet(nil)
	if getA2.Status != http.StatusOK {
		t.Fatalf("a new GET stream on A after healing: HTTP %d %s", getA2.Status, getA2.Body)
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
}
