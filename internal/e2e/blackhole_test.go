package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// Fault tests where a peer is black-holed rather than dead: SIGSTOP keeps
// its sockets open and silent (no RST, no FIN), the way a hung host or a
// lost link behaves.

// TestWorkerStoppedMidCall: a worker SIGSTOPped while it runs a call
// stops sending heartbeats; the client gets its error at the worker
// timeout, and the late answer the worker sends after SIGCONT is ignored:
// the client sees one response for the request, and a new request with
// the same id gets its own answer.
func TestWorkerStoppedMidCall(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1, WorkerArgs: []string{"--admin-listen", "127.0.0.1:0"}})
	w := c.Workers[0]
	admin := w.AdminURL(t)
	cl := testenv.NewClient(t, c.URLs[0])
	cl.Initialize(nil)
	s := cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": 1}}), nil)
	s.NextMessage(t, testenv.HangGuard(10*time.Second)) // a progress: the call runs
	if err := w.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	msgs, _, ended := s.Rest(testenv.HangGuard(20 * time.Second))
	lost := time.Since(stopped)
	if !ended {
		t.Fatal("the stream of the stopped worker's call did not end")
	}
	resp := responseOf(msgs)
	if resp == nil || resp.Error == nil || !strings.Contains(resp.Error.Message, "stopped responding") {
		t.Fatalf("after SIGSTOP: %+v, want the worker-lost error", msgs)
	}
	t.Logf("worker SIGSTOPped mid-call: the client got its error %s later (worker timeout 4s)", lost.Round(time.Millisecond))
	if err := w.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The woken worker finishes the sleep and publishes its answer for a
	// stream nobody holds any more: its in-flight gauge drops to 0.
	testutil.PollFor(t, testenv.HangGuard(15*time.Second), "the woken worker to finish the call", func() bool {
		return sample(t, admin, "mcpfleet_worker_inflight_requests") == 0
	})
	// The same id again: answered by its own call, not by the late answer.
	r := cl.Call(1, "tools/call", callParams("echo", map[string]any{"text": "fresh"}))
	if !strings.Contains(string(r), "fresh") {
		t.Fatalf("the id reused after the lost call got %s, want the echo of \"fresh\"", r)
	}
}

// TestRedisBlackholed: redis-server SIGSTOPped (its connections open and
// silent): requests that need the store fail fast with 503, goroutines do
// not pile up in the frontends, and service comes back by itself after
// SIGCONT.
func TestRedisBlackholed(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1, Persistent: true})
	url := c.URLs[0]
	base := c.Frontends[0].AdminURL(t)
	cl := testenv.NewClient(t, url)
	cl.Initialize(nil)
	cl.Call(1, "tools/call", callParams("echo", map[string]any{"text": "before"}))
	const n = 32
	clients := make([]*testenv.Client, n) // a Client is not safe for concurrent use
	for i := range clients {
		clients[i] = testenv.NewClient(t, url)
		clients[i].Initialize(nil)
	}
	before := sample(t, base, "go_goroutines")
	if err := c.Redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		slowest time.Duration
		bad     []string
	)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			r := clients[i].Post(testenv.Request(100+i, "tools/call", callParams("echo", map[string]any{"text": "during"})), nil)
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, d)
			if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != -32603 {
				bad = append(bad, r.String())
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d requests during the black hole were not 503 with a JSON-RPC error; first: %s", len(bad), n, bad[0])
	}
	if slowest > testenv.HangGuard(15*time.Second) { // a hang guard: the store's timeouts bound it
		t.Fatalf("a request during the black hole took %s", slowest)
	}
	// The goroutines of the failed requests are gone (a pile-up would
	// keep one per stuck store call).
	var now float64
	testutil.PollFor(t, testenv.HangGuard(20*time.Second), "the frontend's goroutines to settle", func() bool {
		now = sample(t, base, "go_goroutines")
		return now <= before+16
	})
	t.Logf("redis black-holed: %d requests failed with 503, the slowest in %s; frontend goroutines %v before, %v after", n, slowest.Round(time.Millisecond), before, now)
	if err := c.Redis.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var r *testenv.Reply
	if !testutil.WaitFor(testenv.HangGuard(15*time.Second), func() bool {
		r = cl.Post(testenv.Request(200, "tools/call", callParams("echo", map[string]any{"text": "after"})), nil)
		return r.Status == http.StatusOK && r.ErrorCode() == 0
	}) {
		t.Fatalf("the session did not work again after SIGCONT: %s", r)
	}
}

// sample reads one unlabelled sample from the /metrics of the admin
// listener at base (scheme://host:port); a sample that is not there fails
// the test.
func sample(t *testing.T, base, name string) float64 {
	t.Helper()
	text := scrape(t, base)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` `).MatchString(text) {
		t.Fatalf("%s not in the metrics of %s", name, base)
	}
	return metric(t, text, name)
}
