package worker

import (
	"context"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// On NATS the worker's request subjects deliver into one channel, msgs,
// read by the pool's leaders: goroutines that run each request they take
// themselves, one after another. A request then costs no hand-off from
// goroutine to goroutine, and a burst of requests is taken by one
// goroutine without a wake-up per request (a NATS subscription's own
// goroutine handing each request to a pool goroutine cost the worker
// about 3 µs more per request: docs/scaling.md).
//
// There is one leader while requests come no faster than it runs them.
// Each leader has a timer, armed while it is busy (from the request it
// takes after waiting until it finds msgs empty); each time it fires, the
// pool starts another leader:
//
//   - escape: the leader is still running the same request as at the
//     last firing (a handler that runs long or waits): it no longer
//     counts as a leader, and as many leaders are added as requests
//     wait in msgs beyond the leaders left (up to maxLeaders counted;
//     one when none is left), so the requests behind a slow one wait
//     about escapeAfter, and a burst of slow calls starts within a few
//     escapes. Escaped leaders are not capped: every running handler
//     holds a goroutine, as in any pool (MaxInFlight bounds them).
//   - streak: it has run request after request for escapeAfter without
//     finding msgs empty: a backlog. Another leader takes requests side
//     by side, up to one leader per CPU (GOMAXPROCS) counted without the
//     escaped ones.
//
// A leader that finds msgs empty while other leaders remain retires (it
// waits for jobs as an idle goroutine); the last one waits for the next
// request. So from startReading to endReading there is always one leader
// at least.

// escapeAfter is how long a leader is busy before the pool starts another
// leader. Starting one costs a goroutine's wake-up, some 5 to 10 µs of
// CPU; a request queued behind a leader waits this long at most.
const escapeAfter = 100 * time.Microsecond

// requestQueue is the capacity of msgs: 512 KiB of pointers at most,
// touched only as far as a burst fills it. Leaders take requests as fast
// as they come (a request past MaxInFlight is answered at once, and a
// backlog adds leaders), so it fills only while the worker gets no CPU;
// past it, nats.go drops requests (a slow consumer, logged).
const requestQueue = 1 << 16

// reader is a pool's reading of msgs. Its zero value reads nothing (a
// bus that runs handlers inline).
type reader struct {
	// msgs is where the request subjects deliver (ChanQueueSubscribe).
	// The pool never closes it.
	msgs chan *nats.Msg
	// endMsgs is closed by endReading: the leaders stop reading.
	endMsgs chan struct{}
	endOnce sync.Once
	// gate is held for reading by a leader from before it takes a
	// request until the request is accepted (Worker.accept), so
	// endReading, which takes it for writing, knows no request is between
	// msgs and the worker's books.
	gate sync.RWMutex
	// running counts the leaders that are not escaped: those that take
	// requests (the streak rule caps it; a leader retires only while
	// another of them remains).
	running atomic.Int32
	// escape is escapeAfter in nanoseconds (the tests set it).
	escape atomic.Int64
	// escapes and streaks count the firings that added leaders, by
	// rule, for the tests.
	escapes, streaks atomic.Int64

	// The bound on a request's wait in msgs (pool_wait.go): taken counts
	// the requests taken from msgs by the leaders; those of rank up to
	// stale have waited maxWait (nanoseconds; maxQueueWait, the tests
	// set it) at least; marked is the watcher's last mark (for the
	// tests). watchDone is closed when the watcher ends.
	taken, stale, marked atomic.Uint64
	maxWait              atomic.Int64
	watchDone            chan struct{}
	// afterTake, when set (by a test), runs in a leader between taking
	// a request from msgs and accepting it.
	afterTake atomic.Pointer[func()]
}

// tookHook runs afterTake, if a test set it.
func (r *reader) tookHook() {
	if h := r.afterTake.Load(); h != nil {
		(*h)()
	}
}

// maxLeaders caps the leaders an escape brings the count to: under CPU
// saturation most handlers run past escapeAfter of wall time, and
// without a cap each escape would add leaders for the whole queue. The
// goroutines are then at most the handlers running (MaxInFlight) and
// this many leaders reading.
const maxLeaders = 64

// start makes r read (on NATS).
func (r *reader) start() {
	r.msgs, r.endMsgs = make(chan *nats.Msg, requestQueue), make(chan struct{})
	r.escape.Store(int64(escapeAfter))
	r.maxWait.Store(int64(maxQueueWait))
}

// startReading makes a goroutine a leader (no-op on an inline bus).
func (p *handlerPool) startReading() {
	if p.msgs != nil {
		p.startWatch()
		p.addLeader()
	}
}

// addLeader makes an idle goroutine, or a new one, a leader.
func (p *handlerPool) addLeader() {
	p.running.Add(1)
	p.submit(handlerJob{lead: true})
}

// leaderTimer is a leader's timer and what its firing looks at.
type leaderTimer struct {
	p       *handlerPool
	t       *time.Timer
	seq     atomic.Uint64 // requests the leader has taken (counted before arm)
	mu      sync.Mutex
	busy    bool          // armed: the leader is busy
	escaped bool          // the leader counts no longer in running
	seen    uint64        // seq at the last firing, or when armed
	due     time.Time     // when the armed timer fires
	wait    time.Duration // the timer's period: escapeAfter, doubled while the CPU is saturated
}

// arm starts a busy stretch; rest ends it.
func (lt *leaderTimer) arm() {
	lt.mu.Lock()
	lt.busy, lt.seen = true, lt.seq.Load()
	lt.resetLocked()
	lt.mu.Unlock()
}

// resetLocked arms the timer for escapeAfter from now, and its wait
// under a saturated CPU back to that. lt.mu is held.
func (lt *leaderTimer) resetLocked() {
	d := time.Duration(lt.p.escape.Load())
	lt.wait = d
	lt.resetLockedAfter(d)
}

// resetLockedAfter arms the timer for d from now. lt.mu is held.
func (lt *leaderTimer) resetLockedAfter(d time.Duration) {
	lt.due = time.Now().Add(d)
	lt.t.Reset(d)
}

// maxEscapeWait bounds how long an escape waits for a saturated CPU.
const maxEscapeWait = 10 * time.Millisecond

// cpuSaturated reports whether goroutines wait for a CPU: at least as
// many runnable (not running) as there are CPUs (runtime/metrics, some
// 70 ns).
func cpuSaturated() bool {
	s := [1]metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	metrics.Read(s[:])
	return s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() >= uint64(runtime.GOMAXPROCS(0))
}

// unescape ends the busy stretch of a leader whose handler escaped,
// counting it again, and reports whether it had escaped.
func (lt *leaderTimer) unescape() bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.escaped {
		return false
	}
	lt.escaped, lt.busy = false, false
	lt.p.running.Add(1)
	return true
}

func (lt *leaderTimer) rest() {
	lt.mu.Lock()
	lt.busy = false
	lt.t.Stop()
	if lt.escaped {
		lt.escaped = false
		lt.p.running.Add(1)
	}
	lt.mu.Unlock()
}

// fire is the timer's: the leader has been busy for escapeAfter.
func (lt *leaderTimer) fire() {
	p := lt.p
	lt.mu.Lock()
	if !lt.busy || lt.escaped || time.Now().Before(lt.due) {
		// Resting, or a firing of an earlier stretch that ran while
		// this one was armed (Stop came too late for it): the timer
		// fires again at due.
		lt.mu.Unlock()
		return
	}
	select {
	case <-p.endMsgs:
		lt.mu.Unlock()
		return // reading is over: no more leaders
	default:
	}
	seq := lt.seq.Load()
	stuck := seq == lt.seen
	lt.seen = seq
	if stuck && lt.wait < maxEscapeWait && cpuSaturated() {
		// The handler may only be waiting for a CPU, which more leaders
		// would not give it: look again later (doubling up to
		// maxEscapeWait, then escape whatever the load).
		lt.wait = min(2*lt.wait, maxEscapeWait)
		lt.resetLockedAfter(lt.wait)
		lt.mu.Unlock()
		return
	}
	add := 0
	if stuck {
		// An escape: as many leaders as requests wait beyond the leaders
		// left to take them (a burst of slow calls starts at once, not
		// one per escapeAfter), up to maxLeaders counted, and one to read
		// on when no other leader is left. The timer is not armed again before the
		// next busy stretch: the leaders added watch the requests behind.
		lt.escaped = true
		left := int(p.running.Add(-1))
		add = min(max(len(p.msgs)-left, 0), maxLeaders-left)
		if add <= 0 && left == 0 {
			add = 1
		}
		if add > 0 {
			p.escapes.Add(1)
		}
	} else {
		if p.running.Load() < int32(runtime.GOMAXPROCS(0)) {
			add = 1
			p.streaks.Add(1)
		}
		lt.resetLocked()
	}
	lt.mu.Unlock()
	for range add {
		p.addLeader()
	}
}

// lead reads and runs requests as one of the pool's leaders. It returns
// when the leader retires or reading ends; the goroutine then waits for
// jobs as an idle one.
func (p *handlerPool) lead() {
	lt := &leaderTimer{p: p}
	lt.t = time.AfterFunc(time.Hour, lt.fire)
	lt.t.Stop()
	busy := false
	for {
		j, ok := p.take(lt, &busy)
		if !ok {
			lt.t.Stop()
			return
		}
		if j.f == nil {
			continue // answered (or a notification)
		}
		p.w.run(j.ctx, j.f, j.req, j.msg)
		pprof.SetGoroutineLabels(context.Background())
		if lt.unescape() {
			// Back from a handler that escaped: a leader again, and
			// the timer starts with the next request. Others took the
			// requests meanwhile: one of them is enough.
			busy = false
			if p.retire() {
				lt.t.Stop()
				return
			}
		}
	}
}

// retire takes a leader out of the count when another remains, and
// reports whether it did.
func (p *handlerPool) retire() bool {
	for {
		n := p.running.Load()
		if n <= 1 {
			return false
		}
		if p.running.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// take returns the next request of msgs, accepted: at once when one
// waits; else the busy stretch ends and the leader retires (false) when
// another leader takes requests, or waits for one. false also once
// reading has ended. A leader that returns false is no longer counted.
func (p *handlerPool) take(lt *leaderTimer, busy *bool) (handlerJob, bool) {
	p.gate.RLock()
	defer p.gate.RUnlock()
	select {
	case m := <-p.msgs:
		q := p.took()
		p.tookHook()
		lt.seq.Add(1)
		if !*busy {
			*busy = true
			lt.arm()
		}
		return p.w.accept(m, q), true
	default:
	}
	if *busy {
		*busy = false
		lt.rest()
	}
	if p.retire() {
		return handlerJob{}, false // another takes requests
	}
	select {
	case m := <-p.msgs:
		q := p.took()
		p.tookHook()
		lt.seq.Add(1)
		*busy = true
		lt.arm()
		return p.w.accept(m, q), true
	case <-p.endMsgs:
		p.running.Add(-1)
		return handlerJob{}, false
	}
}

// endReading ends the reading of msgs, once nothing more is delivered
// to it (the request subscriptions are drained or unsubscribed): the
// leaders stop (after their handler, when they run one), and the
// requests left in msgs are accepted now, each run on a goroutine of its
// own. When it returns, every request delivered to msgs is in the
// worker's books (or answered); those that waited in msgs too long
// (pool_wait.go) are answered "worker busy", as a leader would. It waits
// only for leaders accepting a request (a publish at most: no handler
// runs meanwhile), which ctx does not bound. It is idempotent; no-op on
// an inline bus.
func (p *handlerPool) endReading() {
	if p.msgs == nil {
		return
	}
	p.endOnce.Do(func() { close(p.endMsgs) })
	if p.watchDone != nil {
		<-p.watchDone // it ends at once
	}
	p.gate.Lock()
	defer p.gate.Unlock()
	for {
		select {
		case m := <-p.msgs:
			if j := p.w.accept(m, p.took()); j.f != nil {
				p.submit(j)
			}
		default:
			return
		}
	}
}
