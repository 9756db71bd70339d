// Package gctune spends a bounded amount of memory to run the garbage
// collector less often in a process whose live heap is small.
//
// With GOGC=100 (Go's default) a collection starts each time the heap
// has grown by as much as was live after the last one. A frontend or a
// worker keeps a few MiB live and allocates tens of MiB a second under
// load, so it collects many times a second, and the marking, the sweeping
// and the assists cost a tenth of its CPU. The tuner raises GOGC after
// each collection so that the next starts no sooner than Headroom bytes
// above the live heap: percent = max(base, Headroom*100/live), capped at
// MaxPercent. Once the live heap reaches Headroom, GOGC is the base again
// and the process behaves as without the tuner. The memory it costs is at
// most Headroom (plus what the runtime keeps of freed pages), and only
// while the process is busy or was lately: once it has allocated less
// than Headroom/64 bytes in each check (IdleCheck apart) for IdleRelease
// (a minute by default), the tuner puts the base GOGC back and returns the
// garbage's pages to the system (debug.FreeOSMemory), so an idle process
// holds its live heap, as without the tuner. That forced collection runs
// only while the live heap is under Headroom, so it is short.
//
// Why wait a minute: pages handed back are faulted in again, one by one,
// when the heap grows once more, and a heap that grows by Headroom touches
// Headroom/4096 pages. With a release after a second of quiet, a process
// whose load comes in bursts a few seconds or tens of seconds apart paid
// those faults (and the zeroing of cold memory) at every burst: measured,
// a cluster of 2 frontends and 2 workers idle for 30 s between runs of
// load cost 20 to 52 % more CPU per request in the next run than one that
// kept its pages (docs/scaling.md). A release needs every check of the
// minute quiet: work that allocates Headroom/64 within one check more
// often than once a minute keeps the pages (a Prometheus scrape of the
// all-in-one's admin listener allocated 150 to 250 KB, measured, under the
// default's 1 MiB).
//
// A GOGC or GOMEMLIMIT the operator set wins: with GOGC in the
// environment the tuner does not start (that GOGC stays), and a memory
// limit still makes the runtime collect as the heap nears it, whatever
// GOGC says.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a tuner. The zero value is a tuner of
// DefaultHeadroom, base 100 and MaxPercent DefaultMaxPercent.
type Options struct {
	// Headroom is the least growth of the heap, in bytes, before the next
	// collection. 0 means DefaultHeadroom; negative disables the tuner.
	Headroom int64
	// MaxPercent caps the GOGC the tuner sets; 0 means
	// DefaultMaxPercent.
	MaxPercent int
	// IdleCheck is the interval of the idleness checks; 0 means
	// DefaultIdleCheck.
	IdleCheck time.Duration
	// IdleRelease is how long the process must stay idle (less than
	// Headroom/64 bytes allocated in each check) before the tuner gives
	// the garbage back; 0 means DefaultIdleRelease. It counts in whole
	// checks, at least two.
	IdleRelease time.Duration
}

const (
	// DefaultHeadroom is Options.Headroom's default: 64 MiB.
	DefaultHeadroom = 64 << 20
	// DefaultMaxPercent is Options.MaxPercent's default.
	DefaultMaxPercent = 1600
	// DefaultIdleCheck is Options.IdleCheck's default.
	DefaultIdleCheck = 500 * time.Millisecond
	// DefaultIdleRelease is Options.IdleRelease's default.
	DefaultIdleRelease = time.Minute
)

// Tuner adjusts GOGC after each collection until Stop.
type Tuner struct {
	headroom int64
	max      int
	base     int
	stopped  atomic.Bool
	mu       sync.Mutex // held by tune and Stop
	percent  int        // what the tuner last set; guarded by mu
	released int        // how many times the idle process gave its garbage back; guarded by mu
	idle     bool       // released, and no allocation since: tune keeps the base; guarded by mu
	cycles   int        // collections tune saw; guarded by mu (for tests)
	checks   int        // idleness checks made; guarded by mu (for tests)
	sample   []metrics.Sample
	stop     chan struct{}
	done     chan struct{}
}

// running is set while a tuner of the process runs: there is one at most.
var running atomic.Bool

// Start starts a tuner, or returns nil (and changes nothing) when
// o.Headroom is negative, GOGC is set in the environment or another
// tuner of the process runs. The base
// GOGC is the one in force at Start (100 unless the program set another
// with debug.SetGCPercent); a base of off (negative) starts no tuner.
func Start(o Options) *Tuner {
	if o.Headroom < 0 || os.Getenv("GOGC") != "" || !running.CompareAndSwap(false, true) {
		return nil
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base < 0 {
		running.Store(false)
		return nil
	}
	t := &Tuner{headroom: o.Headroom, max: o.MaxPercent, base: base, percent: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}},
		stop:   make(chan struct{}), done: make(chan struct{})}
	if t.headroom == 0 {
		t.headroom = DefaultHeadroom
	}
	if t.max == 0 {
		t.max = DefaultMaxPercent
	}
	t.max = max(t.max, base)
	every := o.IdleCheck
	if every <= 0 {
		every = DefaultIdleCheck
	}
	after := o.IdleRelease
	if after <= 0 {
		after = DefaultIdleRelease
	}
	t.tune()
	t.arm()
	go t.watchIdle(every, idleCounter{threshold: uint64(t.headroom / 64), need: ChecksFor(after, every)}) // owned by t: ends with Stop
	return t
}

// ChecksFor is how many idleness checks every apart make up the idle
// time after: after/every rounded up, at least two (one quiet check may
// fall between two bursts of a busy process).
func ChecksFor(after, every time.Duration) int {
	n := after / every
	if after%every != 0 {
		n++
	}
	return int(max(n, 2))
}

// idleCounter decides, check by check, when the process has been idle
// long enough: need checks in a row that each saw less than threshold
// bytes allocated since the one before.
type idleCounter struct {
	threshold uint64
	need      int
	quiet     int
}

// check takes the bytes allocated since the last check. It reports busy
// when they reach the threshold, and release when this check completes
// need quiet ones in a row (and again at each quiet check after that:
// Tuner.release does nothing when nothing was raised since).
func (c *idleCounter) check(allocated uint64) (busy, release bool) {
	if allocated >= c.threshold {
		c.quiet = 0
		return true, false
	}
	c.quiet++
	return false, c.quiet >= c.need
}

// watchIdle gives the garbage back once the process has been idle for
// long enough (c). It returns when Stop closes t.stop.
func (t *Tuner) watchIdle(every time.Duration, c idleCounter) {
	defer close(t.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := t.allocated()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		now := t.allocated()
		busy, release := c.check(now - last)
		last = now
		t.mu.Lock()
		t.checks++
		t.mu.Unlock()
		if busy {
			t.busy()
		}
		if release {
			t.release()
		}
	}
}

// allocated is the bytes allocated by the process so far.
func (t *Tuner) allocated() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample)
	if v := t.sample[1].Value; v.Kind() == metrics.KindUint64 {
		return v.Uint64()
	}
	return 0
}

// busy lets tune raise GOGC again after a release.
func (t *Tuner) busy() {
	t.mu.Lock()
	t.idle = false
	t.mu.Unlock()
}

// release puts the base GOGC back and hands the garbage's pages back to
// the system, unless the base is in force already; the next collection
// under load raises GOGC again (tune).
func (t *Tuner) release() {
	t.mu.Lock()
	if t.stopped.Load() || t.percent == t.base {
		t.mu.Unlock()
		return
	}
	debug.SetGCPercent(t.base)
	t.percent = t.base
	t.released++
	t.idle = true // the collections of FreeOSMemory and after keep the base
	t.mu.Unlock()
	debug.FreeOSMemory()
}

// Released reports how many times the idle process gave its garbage
// back.
func (t *Tuner) Released() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.released
}

// sentinel is garbage as soon as it is made: its finalizer runs after the
// next collection, tunes and makes the next sentinel.
type sentinel struct{ t *Tuner }

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t}, func(s *sentinel) {
		if !s.t.stopped.Load() {
			s.t.tune()
			s.t.arm()
		}
	})
}

// Percent returns the GOGC the tuner last set (its base before the first
// collection it saw with a small live heap).
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// tune sets GOGC for the live heap the last collection left.
func (t *Tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	t.cycles++
	if t.idle {
		return
	}
	metrics.Read(t.sample)
	live := int64(0)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	p := PercentFor(live, t.headroom, t.base, t.max)
	if p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
}

// PercentFor is the GOGC that puts the next collection headroom bytes
// above a live heap of live bytes, between base and max.
func PercentFor(live, headroom int64, base, max int) int {
	if live <= 0 {
		return max
	}
	p := (headroom*100 + live - 1) / live
	switch {
	case p <= int64(base):
		return base
	case p >= int64(max):
		return max
	}
	return int(p)
}

// Stop stops the tuner and puts the base GOGC back. Safe on a nil Tuner
// and more than once.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	if t.stopped.Swap(true) {
		return
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetGCPercent(t.base)
	t.percent = t.base
	running.Store(false)
}
