package worker

import (
	"context"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// handlerPool runs requests' handlers (Worker.run) on goroutines it keeps
// between requests. A fresh goroutine starts on a 2 KiB stack and grows
// it several times through a handler, schema validation and encoding,
// each growth a copy of the whole stack (about 8 % of the all-in-one's
// CPU under load, issue 21); a kept goroutine starts its next request on
// the stack the last one grew. The GC still halves an idle goroutine's
// stack at most once a cycle, so a kept stack regrows at most once per
// cycle, not from 2 KiB each request.
//
// A request never waits for a goroutine: it goes to an idle one if any
// is waiting, else to a new one (MaxInFlight bounds how many run). A
// goroutine whose request is done waits for the next unless maxIdle
// already do, or the pool is stopped: then it exits. Every goroutine is
// owned by the pool: stop ends the idle ones before it returns, and the
// busy ones end when their handler returns.
//
// Nothing of a request outlives it on its goroutine: run gets its
// context and values as arguments, the job is cleared once run returns,
// and the goroutine's profiler labels (runtime/pprof.SetGoroutineLabels,
// which a handler may set) are reset. A handler must not leave its
// goroutine locked to its thread (runtime.LockOSThread without
// UnlockOSThread): the next request would run locked too.
type handlerPool struct {
	w       *Worker
	jobs    chan handlerJob // unbuffered: a send succeeds only when an idle goroutine waits
	quit    chan struct{}   // closed by stop
	maxIdle int32

	started atomic.Int64 // goroutines started, for the tests (export_test.go)
	idle    atomic.Int32 // goroutines waiting for a job; incremented under mu

	mu      sync.Mutex
	stopped bool
	waiting sync.WaitGroup // idle goroutines: stop waits for them; Add under mu while not stopped
}

// handlerJob is one request for Worker.run.
type handlerJob struct {
	ctx context.Context
	f   *inflight
	req *mcp.Request
	msg *protocol.Message
}

// poolMaxIdle is how many idle goroutines a pool keeps: as many as a
// steady load of concurrent requests needs to find one waiting each
// (make bench runs 64 clients), and at least 8 per CPU for handlers that
// wait on I/O; never more than maxInFlight requests can run (when
// positive). At the cap they cost about 64 × (their stack, 8 to 32 KiB
// under load, halved by each GC cycle while idle down to 2 KiB, plus the
// goroutine's own few hundred bytes): a few MiB at most, some 200 KiB
// at rest (the runtime runs a GC cycle every two minutes at least).
func poolMaxIdle(maxInFlight int) int32 {
	n := max(64, 8*runtime.GOMAXPROCS(0))
	if maxInFlight > 0 && maxInFlight < n {
		n = maxInFlight
	}
	return int32(n)
}

func newHandlerPool(w *Worker, maxIdle int32) *handlerPool {
	return &handlerPool{w: w, jobs: make(chan handlerJob), quit: make(chan struct{}), maxIdle: maxIdle}
}

// submit runs j on an idle goroutine, or on a new one when none waits. It
// never blocks. Once the pool is stopped no goroutine waits: each job
// gets a goroutine of its own, which exits when the job is done.
func (p *handlerPool) submit(j handlerJob) {
	select {
	case p.jobs <- j:
	default:
		p.started.Add(1)
		go p.serve(j) // owned by the pool: exits at stop, at the idle cap, or after its job once stopped
	}
}

// serve runs j, then the jobs it is given while it waits.
func (p *handlerPool) serve(j handlerJob) {
	for {
		p.w.run(j.ctx, j.f, j.req, j.msg)
		j = handlerJob{} // the request's values are not kept alive while waiting
		pprof.SetGoroutineLabels(context.Background())
		if !p.park() {
			return
		}
		select {
		case j = <-p.jobs:
			p.unpark()
		case <-p.quit:
			p.unpark()
			return
		}
	}
}

// park counts the goroutine idle, unless the pool is stopped or keeps
// maxIdle already: then it reports false, and the goroutine exits.
func (p *handlerPool) park() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.idle.Load() >= p.maxIdle {
		return false
	}
	p.idle.Add(1)
	p.waiting.Add(1)
	return true
}

// unpark counts the goroutine out of the idle ones: it got a job, or
// exits.
func (p *handlerPool) unpark() {
	p.idle.Add(-1)
	p.waiting.Done()
}

// stop ends the idle goroutines and returns once they have stopped
// waiting (each returns right after); the busy ones exit when their job
// is done. It is idempotent.
func (p *handlerPool) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	close(p.quit)
	p.waiting.Wait()
}
