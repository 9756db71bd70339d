package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/nats-io/nats.go"
)

// steadyRun is one client calling progress_steady on its POST stream.
type steadyRun struct {
	cl       *testenv.Client
	count    int // progress notifications the tool sends (its own count)
	progress []int
	ids      []string
	result   string
}

// take records the messages of one part of the stream (before the kill,
// or resumed).
func (r *steadyRun) take(t *testing.T, msgs []testenv.Message, ids []string) {
	t.Helper()
	for i, m := range msgs {
		switch {
		case m.Method == "notifications/progress":
			var p struct{ Progress float64 }
			_ = json.Unmarshal(m.Params, &p)
			r.progress = append(r.progress, int(p.Progress))
		case m.Result != nil || m.Error != nil:
			if r.result != "" {
				t.Errorf("client %d: a second response: %s", r.count, m.Result)
			}
			r.result = string(m.Result)
			if m.Error != nil {
				r.result = "error: " + m.Error.Message
			}
		default:
			t.Errorf("client %d: unexpected message %+v", r.count, m)
		}
		r.ids = append(r.ids, ids[i])
	}
}

// check asserts what client i got: the final response, every progress
// the tool sent in order, each once, and strictly increasing event ids.
func (r *steadyRun) check(t *testing.T, i int) {
	t.Helper()
	if want := `"sent ` + strconv.Itoa(r.count) + `"`; !strings.Contains(r.result, want) {
		t.Errorf("client %d: final response %q, want %s", i, r.result, want)
	}
	for j, p := range r.progress {
		if p != j+1 {
			t.Errorf("client %d: progress %v, want 1..%d in order, each once", i, r.progress, r.count)
			break
		}
	}
	if len(r.progress) != r.count {
		t.Errorf("client %d: %d progress notifications delivered, the tool sent %d", i, len(r.progress), r.count)
	}
	prev := uint64(0)
	for _, id := range r.ids {
		n, _ := strconv.ParseUint(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
		if n <= prev {
			t.Errorf("client %d: event ids not increasing: %v", i, r.ids)
			break
		}
		prev = n
	}
}

// TestFrontendKilledPostStreamsDurable: legacy clients call a tool that
// sends progress steadily, their POST streams on frontend A. A is
// SIGKILLed while the tools run; for a few seconds no frontend holds the
// streams, and the tools go on (one finishes in that gap). Each client
// then resumes with Last-Event-ID at frontend B and gets every progress
// it missed and the final response, in order, each once: what the tool
// sent is what the client got.
func TestFrontendKilledPostStreamsDurable(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	// Final responses logged while no frontend holds their stream reach
	// the stream's live subject through another frontend's appender.
	nc, err := nats.Connect(c.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var orphanResponses atomic.Int32
	sub, err := nc.Subscribe("mcp.live.>", func(m *nats.Msg) {
		if strings.Contains(string(m.Data), `"sent `) {
			orphanResponses.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	const clients = 4
	runs := make([]*steadyRun, clients)
	streams := make([]*testenv.Stream, clients)
	for i := range runs {
		// 40 to 100 notifications, 50 ms apart: 2 s to 5 s of work.
		r := &steadyRun{cl: testenv.NewClient(t, c.URLs[0]), count: 40 + 20*i}
		r.cl.Initialize(nil)
		args := map[string]any{"count": r.count, "interval_ms": 50}
		streams[i] = r.cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "progress_steady", "arguments": args, "_meta": map[string]any{"progressToken": "t"}}), nil)
		runs[i] = r
	}
	// Each stream is under way on A: its SSE started, events logged.
	for i, s := range streams {
		for range 3 {
			ev, m := s.NextMessage(t, testenv.HangGuard(10*time.Second))
			runs[i].take(t, []testenv.Message{m}, []string{ev.ID})
		}
	}
	c.Frontends[0].Kill()
	killed := time.Now()
	for i, s := range streams {
		msgs, ids, ended := s.Rest(testenv.HangGuard(10 * time.Second))
		if !ended {
			t.Fatalf("client %d: the stream did not end with its frontend", i)
		}
		runs[i].take(t, msgs, ids)
		if runs[i].result != "" {
			t.Fatalf("client %d: the tool ended before the kill; make it longer", i)
		}
	}
	// The gap is the behaviour under test: for these seconds no frontend
	// holds the streams while the tools go on producing.
	time.Sleep(3 * time.Second)
	// The shortest tool (2 s) has finished in the gap: its response was
	// logged while no frontend held its stream.
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "a final response logged while no frontend held its stream", func() bool { return orphanResponses.Load() > 0 })
	gap := time.Since(killed)
	orphaned := orphanResponses.Load()

	for i, r := range runs {
		last := r.ids[len(r.ids)-1]
		r.cl.URLs = c.URLs[1:]
		s := r.cl.OpenGet(map[string]string{"Last-Event-ID": last})
		if s.Status != 200 {
			t.Fatalf("client %d: resuming after %s: HTTP %d %s", i, last, s.Status, s.Body)
		}
		streams[i] = s
	}
	for i, s := range streams {
		r := runs[i]
		msgs, ids, ended := s.Rest(testenv.HangGuard(30 * time.Second))
		if !ended {
			t.Fatalf("client %d: the resumed stream did not end", i)
		}
		r.take(t, msgs, ids)
	}
	for i, r := range runs {
		r.check(t, i)
		t.Logf("client %d: produced %d progress + 1 response, delivered %d + %d (no frontend held the stream for %s)",
			i, r.count, len(r.progress), btoi(r.result != ""), gap.Round(100*time.Millisecond))
	}
	t.Logf("final responses logged through another frontend while no frontend held their stream: %d of %d", orphaned, clients)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
