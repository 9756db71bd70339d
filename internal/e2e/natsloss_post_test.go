package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestPostStreamsCutOffFromNATS: legacy clients' POST streams on frontend
// A, which is then cut off NATS while the tools go on producing. A ends
// the streams at once and logs nothing more (no "worker lost" error in
// them); the worker's frames go to another frontend's log meanwhile; each
// client resumes with Last-Event-ID at frontend B and gets every progress
// and its final response, in order, each once. A heals and serves again.
func TestPostStreamsCutOffFromNATS(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1})
	rl := startRelay(t, strings.TrimPrefix(c.NATSURL, "nats://"))
	_, urlA := testenv.StartFrontend(t, rl.URL(), c.RedisURL)
	urlB := c.URLs[0]

	const clients = 2
	runs := make([]*steadyRun, clients)
	streams := make([]*testenv.Stream, clients)
	for i := range runs {
		// 40 and 60 notifications, 50 ms apart: 2 s and 3 s of work.
		r := &steadyRun{cl: testenv.NewClient(t, urlA), count: 40 + 20*i}
		r.cl.Initialize(nil)
		args := map[string]any{"count": r.count, "interval_ms": 50}
		streams[i] = r.cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "progress_steady", "arguments": args, "_meta": map[string]any{"progressToken": "t"}}), nil)
		runs[i] = r
	}
	for i, s := range streams {
		for range 3 {
			ev, m := s.NextMessage(t, testenv.HangGuard(10*time.Second))
			runs[i].take(t, []testenv.Message{m}, []string{ev.ID})
		}
	}
	rl.Cut()
	cutAt := time.Now()
	for i, s := range streams {
		msgs, ids, ended := s.Rest(testenv.HangGuard(5 * time.Second))
		if !ended {
			t.Fatalf("client %d: the stream on A stayed open after A lost NATS", i)
		}
		runs[i].take(t, msgs, ids)
		if runs[i].result != "" {
			t.Fatalf("client %d: the stream on A ended with a response after the cut: %s", i, runs[i].result)
		}
	}
	ended := time.Since(cutAt)
	// The gap is the behaviour under test: for a second no frontend holds
	// the streams while the tools go on producing.
	time.Sleep(time.Second)
	for i, r := range runs {
		last := r.ids[len(r.ids)-1]
		r.cl.URLs = []string{urlB}
		s := r.cl.OpenGet(map[string]string{"Last-Event-ID": last})
		if s.Status != 200 {
			t.Fatalf("client %d: resuming on B after %s: HTTP %d %s", i, last, s.Status, s.Body)
		}
		streams[i] = s
	}
	for i, s := range streams {
		msgs, ids, done := s.Rest(testenv.HangGuard(30 * time.Second))
		if !done {
			t.Fatalf("client %d: the resumed stream did not end", i)
		}
		runs[i].take(t, msgs, ids)
	}
	rl.Heal()
	for i, r := range runs {
		r.check(t, i)
		t.Logf("A cut off NATS: client %d produced %d progress + 1 response, delivered %d + %d (A's streams ended %s after the cut)",
			i, r.count, len(r.progress), btoi(r.result != ""), ended.Round(time.Millisecond))
	}
	// A serves again once its link is back.
	cl := testenv.NewClient(t, urlA)
	var r *testenv.Reply
	if !testutil.WaitFor(testenv.HangGuard(20*time.Second), func() bool {
		r = cl.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
		return r.Status == 200
	}) {
		t.Fatalf("A after healing: %s", r)
	}
}
