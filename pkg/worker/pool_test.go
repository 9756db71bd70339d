package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

// poolGoroutines counts the goroutines of every worker's handler pool.
func poolGoroutines() int {
	return strings.Count(allStacks(), "worker.(*handlerPool).serve(")
}

// noPoolGoroutines waits for the handler goroutines of earlier tests'
// workers (hung handlers released by their cleanups) to be gone.
func noPoolGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.Poll(tb, "the handler goroutines of earlier tests to end", func() bool { return poolGoroutines() == 0 })
}

// waitIdle waits until n of w's handler goroutines wait for a request:
// counted idle, and blocked in their select on the pool's channels (a
// goroutine is counted just before it gets there, and a request sent in
// between would start another goroutine).
func waitIdle(tb testing.TB, w *worker.Worker, n int32) {
	tb.Helper()
	testutil.Poll(tb, "idle handler goroutines", func() bool {
		return worker.PoolIdle(w) == n && poolGoroutinesWaiting() == int(n)
	})
}

// poolGoroutinesWaiting counts the goroutines of every worker's handler
// pool that are blocked in the pool's own select, waiting for a job.
func poolGoroutinesWaiting() int {
	n := 0
	for _, g := range strings.Split(allStacks(), "\n\n") {
		header, frames, _ := strings.Cut(g, "\n")
		if !strings.Contains(header, "[select") {
			continue
		}
		for _, line := range strings.Split(frames, "\n") {
			if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "runtime.") {
				continue
			}
			// The first frame outside the runtime.
			if strings.Contains(line, "worker.(*handlerPool).serve(") {
				n++
			}
			break
		}
	}
	return n
}

// allStacks returns the stacks of all goroutines.
func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestPoolReusesGoroutinePastPanics: requests one after another run on
// one goroutine, kept between them, and a handler's panic (-32603 for its
// request) does not end it: the next requests still run on it.
func TestPoolReusesGoroutinePastPanics(t *testing.T) {
	s := echoServer(t)
	addTool(t, s, "panic", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		panic("boom")
	})
	f := newFixture(t, s, nil)
	for i, tool := range []string{"echo", "panic", "echo", "panic", "panic", "echo"} {
		m := f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), tool, `{"text":"hi"}`).response(t)
		switch {
		case tool == "panic" && (m.Error == nil || m.Error.Code != protocol.CodeInternalError):
			t.Fatalf("request %d (%s): got %+v, want -32603", i, tool, m)
		case tool == "echo" && (m.Error != nil || !strings.Contains(string(m.Result), `"hi"`)):
			t.Fatalf("request %d (%s): got %+v (%s), want its result", i, tool, m, m.Result)
		}
		// The goroutine waits for the next request before it is sent.
		waitIdle(t, f.w, 1)
	}
	if n := worker.PoolStarted(f.w); n != 1 {
		t.Errorf("%d handler goroutines started for requests one after another, want 1", n)
	}
}

// labelsOfThisGoroutine returns the profiler labels of the calling
// goroutine, as the goroutine profile shows them ("" for none).
func labelsOfThisGoroutine(tb testing.TB) string {
	tb.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		tb.Errorf("goroutine profile: %v", err)
		return ""
	}
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, "worker_test.labelsOfThisGoroutine") {
			continue
		}
		for _, line := range strings.Split(rec, "\n") {
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				return l
			}
		}
		return ""
	}
	tb.Errorf("the goroutine profile does not show the caller:\n%s", b.String())
	return ""
}

// TestPoolForgetsLabels: the profiler labels a handler sets on its
// goroutine are gone when the goroutine runs the next request.
func TestPoolForgetsLabels(t *testing.T) {
	s := newServer()
	seen := make(chan string, 2)
	addTool(t, s, "label", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("left", "over")))
		seen <- labelsOfThisGoroutine(t)
		return mcp.TextResult("labelled"), nil
	})
	addTool(t, s, "look", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		seen <- labelsOfThisGoroutine(t)
		return mcp.TextResult("looked"), nil
	})
	f := newFixture(t, s, nil)
	if m := f.fe.callTool(t, nil, protocol.Int64ID(1), "label", "").response(t); m.Error != nil {
		t.Fatalf("label: %+v", m.Error)
	}
	if l := recv(t, seen, "the labelled handler"); !strings.Contains(l, `"left":"over"`) {
		t.Fatalf("the handler that set labels sees %q: the profile does not show them", l)
	}
	waitIdle(t, f.w, 1)
	if m := f.fe.callTool(t, nil, protocol.Int64ID(2), "look", "").response(t); m.Error != nil {
		t.Fatalf("look: %+v", m.Error)
	}
	if l := recv(t, seen, "the next handler"); l != "" {
		t.Errorf("the next request's handler runs with labels %s, want none", l)
	}
	if n := worker.PoolStarted(f.w); n != 1 {
		t.Fatalf("%d handler goroutines started, want 1 (the second request on the first's goroutine)", n)
	}
}

// TestPoolGoroutinesEndAtShutdown: the goroutines concurrent requests
// needed wait for more, at most the idle cap of them; Shutdown ends the
// idle ones before it returns, and one whose handler outlives Shutdown
// ends when the handler returns.
func TestPoolGoroutinesEndAtShutdown(t *testing.T) {
	noPoolGoroutines(t)
	s := newServer()
	b := newBlocker(t, s, "block")
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseLate := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseLate) // also when the test fails before it releases
	addTool(t, s, "late", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		<-release // ignores its context: outlives Shutdown
		return mcp.TextResult("late"), nil
	})
	f := newFixture(t, s, nil)
	worker.SetPoolMaxIdle(f.w, 3)

	const n = 5
	var streams []*stream
	for i := range n {
		streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "block", `{"tag":"b"}`))
	}
	for range n {
		recv(t, b.started, "a handler start")
	}
	b.releaseAll()
	for _, st := range streams {
		if m := st.response(t); m.Error != nil {
			t.Fatalf("block: %+v", m.Error)
		}
	}
	if got := worker.PoolStarted(f.w); got != n {
		t.Fatalf("%d handler goroutines started for %d concurrent requests, want %d", got, n, n)
	}
	// Beyond the cap they exit.
	waitIdle(t, f.w, 3)
	testutil.Poll(t, "the goroutines beyond the idle cap to end", func() bool { return poolGoroutines() == 3 })

	late := f.fe.callTool(t, nil, protocol.Int64ID(100), "late", "")
	testutil.Poll(t, "the late handler to start", func() bool { return worker.PoolIdle(f.w) == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the late handler is cut short at once, and not waited for
	f.shutdownOnce.Do(func() { _ = f.w.Shutdown(ctx) })
	if m := late.response(t); m.Error == nil || !strings.Contains(m.Error.Message, "shutting down") {
		t.Errorf("the request Shutdown cut short: got %+v, want the shutting-down error", m)
	}
	if got := worker.PoolIdle(f.w); got != 0 {
		t.Errorf("%d idle handler goroutines after Shutdown, want 0", got)
	}
	// The idle ones have stopped waiting; they return right after.
	testutil.Poll(t, "only the late handler's goroutine after Shutdown", func() bool { return poolGoroutines() == 1 })
	releaseLate()
	noPoolGoroutines(t)
}
