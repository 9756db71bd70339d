package worker_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

// The pool's leaders (NATS, pool_lead.go): they run the requests they
// read, and neither a handler that runs long, nor a burst of them, nor a
// steady backlog holds up the requests behind.

// TestPoolLeaderEscape: a request that arrives while the leader runs a
// handler that does not return is taken and answered: the escape starts
// another leader.
func TestPoolLeaderEscape(t *testing.T) {
	s := echoServer(t)
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	worker.SetPoolEscape(f.w, time.Millisecond)
	blocked := f.fe.callTool(t, nil, protocol.Int64ID(1), "block", `{"tag":"b"}`)
	recv(t, b.started, "the blocking handler's start")
	m := f.fe.callTool(t, nil, protocol.Int64ID(2), "echo", `{"text":"behind"}`).response(t)
	if m.Error != nil || !strings.Contains(string(m.Result), "behind") {
		t.Fatalf("the request behind the blocked one: got %+v (%s), want its result", m, m.Result)
	}
	b.releaseAll()
	if m := blocked.response(t); m.Error != nil {
		t.Fatalf("block: %+v", m.Error)
	}
}

// holdLeader has the leader run a "hold" call, which returns once hold is
// released, with the escape off (an hour), then queues the requests of
// send behind it and waits until all of them are in the pool's queue.
func holdLeader(t *testing.T, f *fixture, hold *blocker, send func(), queued int) {
	t.Helper()
	holdLeaderOn(t, f, hold, "hold", send, queued)
}

// holdLeaderOn is holdLeader with the hold call's tool named.
func holdLeaderOn(t *testing.T, f *fixture, hold *blocker, tool string, send func(), queued int) {
	t.Helper()
	worker.SetPoolEscape(f.w, time.Hour)
	waitLeading(t)
	f.fe.callTool(t, nil, protocol.Int64ID(1000), tool, `{"tag":"h"}`)
	recv(t, hold.started, "the held handler's start")
	send()
	testutil.Poll(t, "the requests to wait in the pool's queue", func() bool { return worker.PoolQueued(f.w) == queued })
}

// TestPoolBurstOfSlowCalls: a burst of calls that all wait starts at
// once, not one per escape: the escape of the leader starts as many
// leaders as requests wait.
func TestPoolBurstOfSlowCalls(t *testing.T) {
	s := newServer()
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	// Long enough for the whole burst to be queued when the first
	// call's escape fires, on a slow machine too.
	worker.SetPoolEscape(f.w, 200*time.Millisecond)
	const n = 20
	var streams []*stream
	for i := range n {
		streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "block", `{"tag":"q"}`))
	}
	for range n {
		recv(t, b.started, "a call of the burst starting")
	}
	// One escape per call would be n (each new leader running one call
	// and escaping in turn, the last adding a leader to read on); here
	// the first adds a leader for each call queued, the last one to read
	// on.
	if e := worker.PoolEscapes(f.w); e > 3 {
		t.Errorf("%d escapes added leaders to start a burst of %d waiting calls, want at most 3", e, n)
	}
	b.releaseAll()
	for _, st := range streams {
		if m := st.response(t); m.Error != nil {
			t.Fatalf("block: %+v", m.Error)
		}
	}
}

// TestPoolBacklogAddsLeaders: a steady backlog of short calls (each
// shorter than the escape) is taken by more than one leader: the streak
// rule adds them, up to one per CPU.
func TestPoolBacklogAddsLeaders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	s := newServer()
	var mu sync.Mutex
	running, most := 0, 0
	addTool(t, s, "short", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Millisecond) // the work: a fifth of the escape
		mu.Lock()
		running--
		mu.Unlock()
		return mcp.TextResult("done"), nil
	})
	f := newFixture(t, s, nil)
	worker.SetPoolEscape(f.w, 5*time.Millisecond)
	// 60 calls of 1 ms, sent far faster than one leader runs them: it
	// would take 60 ms alone, while its streak fires every 5 ms.
	const n = 60
	var streams []*stream
	for i := range n {
		streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "short", ""))
	}
	for _, st := range streams {
		if m := st.response(t); m.Error != nil {
			t.Fatalf("short: %+v", m.Error)
		}
	}
	// On a loaded machine a leader may be descheduled in a call and
	// escape instead: either rule adds the leader.
	if st, e := worker.PoolStreaks(f.w), worker.PoolEscapes(f.w); st+e == 0 {
		t.Error("no leader was added behind a backlog")
	}
	if most < 2 {
		t.Errorf("at most %d short calls ran at once behind a backlog of %d, want 2 (one leader per CPU)", most, n)
	}
}

// TestShutdownServesQueuedRequests: requests waiting in the pool's queue
// when Shutdown begins are served, not refused, while the leader still
// runs its own.
func TestShutdownServesQueuedRequests(t *testing.T) {
	s := echoServer(t)
	hold := newBlocker(t, s, "hold")
	f := newFixture(t, s, nil)
	const n = 3
	var streams []*stream
	holdLeader(t, f, hold, func() {
		for i := range n {
			streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "echo", `{"text":"queued"}`))
		}
	}, n)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		done <- f.w.Shutdown(ctx)
	}()
	for i, st := range streams {
		if m := st.response(t); m.Error != nil || !strings.Contains(string(m.Result), "queued") {
			t.Errorf("queued request %d: got %+v (%s), want its result", i, m, m.Result)
		}
	}
	hold.releaseAll()
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	f.shutdownOnce.Do(func() {}) // done already
}

// TestPoolCancelWhileQueued: a cancellation that comes while its request
// waits in the pool's queue ends the request when it is taken (the end
// of its stream, no response), and its handler never runs.
func TestPoolCancelWhileQueued(t *testing.T) {
	s := echoServer(t)
	hold := newBlocker(t, s, "hold")
	ran := make(chan struct{}, 1)
	addTool(t, s, "mark", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		ran <- struct{}{}
		return mcp.TextResult("ran"), nil
	})
	f := newFixture(t, s, nil)
	id := protocol.Int64ID(7)
	var st *stream
	holdLeader(t, f, hold, func() {
		st = f.fe.callTool(t, nil, id, "mark", "")
	}, 1)
	f.fe.cancel(t, bus.CancelKeyLegacy("s1", id))
	testutil.Poll(t, "the worker to keep the cancellation", func() bool { return worker.EarlyCancels(f.w) == 1 })
	hold.releaseAll()
	if fr := st.expect(t, bus.FrameEnd); len(fr.payload) != 0 {
		t.Errorf("the cancelled request's end carries %q", fr.payload)
	}
	select {
	case <-ran:
		t.Error("the handler of a request cancelled while queued ran")
	default:
	}
}

// TestPoolShedsRequestsQueuedTooLong: a request that waited in the pool's
// queue for the bound or more (pool_wait.go) is answered "worker busy"
// when taken, and its handler never runs (it gets no heartbeat while
// queued: its frontend may have given up on it); a request that comes
// after runs.
func TestPoolShedsRequestsQueuedTooLong(t *testing.T) {
	s := echoServer(t)
	hold := newBlocker(t, s, "hold")
	ran := make(chan struct{}, 8)
	addTool(t, s, "mark", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		ran <- struct{}{}
		return mcp.TextResult("ran"), nil
	})
	f := newFixture(t, s, nil)
	const n = 3
	// Under the bound: marked while queued, and run.
	worker.SetPoolQueueWait(f.w, time.Hour)
	var streams []*stream
	holdLeader(t, f, hold, func() {
		for i := range n {
			streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(50+i)), "mark", ""))
		}
	}, n)
	testutil.Poll(t, "the queued requests to be marked", func() bool { return worker.PoolQueueSeen(f.w) })
	hold.releaseAll()
	for i, st := range streams {
		if m := st.response(t); m.Error != nil {
			t.Errorf("request %d queued under the bound: %+v, want its result", i, m.Error)
		}
		recv(t, ran, "the handler of a request queued under the bound")
	}
	// Past it: answered busy, not run.
	hold = newBlocker(t, s, "hold2")
	streams = nil
	holdLeaderOn(t, f, hold, "hold2", func() {
		worker.SetPoolQueueWait(f.w, 20*time.Millisecond) // once the hold call runs
		for i := range n {
			streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "mark", ""))
		}
	}, n)
	testutil.Poll(t, "the queued requests to be marked as waited too long", func() bool { return worker.PoolQueueMarked(f.w) })
	hold.releaseAll()
	for i, st := range streams {
		m := st.response(t)
		if m.Error == nil || m.Error.Code != protocol.CodeInternalError || !strings.Contains(m.Error.Message, "worker busy") {
			t.Errorf("request %d queued too long: got %+v (%s), want a worker busy error", i, m.Error, m.Result)
		}
	}
	select {
	case <-ran:
		t.Error("the handler of a request queued too long ran")
	default:
	}
	worker.SetPoolQueueWait(f.w, time.Hour)
	if m := f.fe.callTool(t, nil, protocol.Int64ID(100), "mark", "").response(t); m.Error != nil {
		t.Errorf("a request after the shed ones: %+v, want its result", m.Error)
	}
	recv(t, ran, "the later request's handler")
}

// TestShutdownWaitsForATakenRequest: a request a leader has taken from
// the queue but not yet put in the worker's books when Shutdown begins is
// served: Shutdown's end of reading waits for it (without that, the
// worker would close first and refuse it, or lose it).
func TestShutdownWaitsForATakenRequest(t *testing.T) {
	s := echoServer(t)
	f := newFixture(t, s, nil)
	waitLeading(t)
	took, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	worker.SetPoolAfterTake(f.w, func() {
		once.Do(func() {
			took <- struct{}{}
			<-release
		})
	})
	st := f.fe.callTool(t, nil, protocol.Int64ID(1), "echo", `{"text":"taken"}`)
	recv(t, took, "the leader to take the request")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		done <- f.w.Shutdown(ctx)
	}()
	testutil.Poll(t, "Shutdown to end the reading", func() bool { return worker.PoolReadingEnded(f.w) })
	// A negative check, so a window: Shutdown cannot be over while the
	// request is in a leader's hands (a wrong Shutdown ends in
	// microseconds here).
	select {
	case err := <-done:
		t.Errorf("Shutdown returned (%v) while a taken request was not yet accepted", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if m := st.response(t); m.Error != nil || !strings.Contains(string(m.Result), "taken") {
		t.Errorf("the taken request: got %+v (%s), want its result", m.Error, m.Result)
	}
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	f.shutdownOnce.Do(func() {}) // done already
}

// TestShutdownShedsStaleQueuedRequests: Shutdown answers "worker busy"
// the requests it finds in the pool's queue that waited there too long,
// as a leader would have, rather than run them.
func TestShutdownShedsStaleQueuedRequests(t *testing.T) {
	s := echoServer(t)
	hold := newBlocker(t, s, "hold")
	f := newFixture(t, s, nil)
	const n = 2
	var streams []*stream
	holdLeader(t, f, hold, func() {
		worker.SetPoolQueueWait(f.w, 20*time.Millisecond)
		for i := range n {
			streams = append(streams, f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), "echo", `{"text":"stale"}`))
		}
	}, n)
	testutil.Poll(t, "the queued requests to be marked as waited too long", func() bool { return worker.PoolQueueMarked(f.w) })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		done <- f.w.Shutdown(ctx)
	}()
	for i, st := range streams {
		if m := st.response(t); m.Error == nil || !strings.Contains(m.Error.Message, "worker busy") {
			t.Errorf("stale request %d at Shutdown: got %+v (%s), want a worker busy error", i, m.Error, m.Result)
		}
	}
	hold.releaseAll()
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	f.shutdownOnce.Do(func() {}) // done already
}

// TestPoolCancelSparesALaterRequest: a cancellation of a request that is
// over (harmless, and kept while requests are queued) does not end a
// request with the same id that comes after it: a legacy id may be used
// again once its request is over.
func TestPoolCancelSparesALaterRequest(t *testing.T) {
	s := echoServer(t)
	hold := newBlocker(t, s, "hold")
	f := newFixture(t, s, nil)
	if m := f.fe.callTool(t, nil, protocol.Int64ID(77), "echo", `{"text":"first"}`).response(t); m.Error != nil {
		t.Fatalf("first: %+v", m.Error)
	}
	var queuedSt, again *stream
	holdLeader(t, f, hold, func() {
		queuedSt = f.fe.callTool(t, nil, protocol.Int64ID(5), "echo", `{"text":"queued"}`)
	}, 1)
	f.fe.cancel(t, bus.CancelKeyLegacy("s1", protocol.Int64ID(77))) // of the request that is over
	testutil.Poll(t, "the worker to keep the cancellation", func() bool { return worker.EarlyCancels(f.w) == 1 })
	again = f.fe.callTool(t, nil, protocol.Int64ID(77), "echo", `{"text":"again"}`)
	testutil.Poll(t, "the id used again to be queued", func() bool { return worker.PoolQueued(f.w) == 2 })
	hold.releaseAll()
	for name, st := range map[string]*stream{"queued": queuedSt, "again": again} {
		if m := st.response(t); m.Error != nil || !strings.Contains(string(m.Result), name) {
			t.Errorf("request %s: got %+v (%s), want its result", name, m.Error, m.Result)
		}
	}
}
