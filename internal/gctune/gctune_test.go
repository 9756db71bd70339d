package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, headroom int64
		want           int
	}{
		{0, 64 * mib, 1600},         // nothing live yet: the cap
		{4 * mib, 64 * mib, 1600},   // 64/4 = 16x
		{8 * mib, 64 * mib, 800},    // 8x
		{10 * mib, 64 * mib, 640},   // rounded up
		{64 * mib, 64 * mib, 100},   // the live heap reached the headroom: the base
		{512 * mib, 64 * mib, 100},  // beyond: the base
		{1 * mib, 64 * mib, 1600},   // 6400 capped
		{30 * mib, 64 * mib, 214},   // 213.3 rounded up
		{100 * mib, 150 * mib, 150}, // between base and cap
	} {
		if got := PercentFor(tc.live, tc.headroom, 100, 1600); got != tc.want {
			t.Errorf("PercentFor(%d MiB, %d MiB) = %d, want %d", tc.live/mib, tc.headroom/mib, got, tc.want)
		}
	}
}

var sink []byte

// churn allocates garbage, 64 KiB at a time, until cond holds (or n
// allocations, or 10 s), and reports whether it did.
func churn(n int, cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		sink = make([]byte, 64<<10)
		if i%64 == 0 && cond() {
			return true
		}
	}
	return cond()
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// The tuner raises GOGC while the live heap is small and the process
// allocates; once idle it puts the base back and stays there through
// collections until the process allocates again; Stop restores the base.
func TestTunerRaisesReleasesRestores(t *testing.T) {
	t.Setenv("GOGC", "") // an operator's GOGC would turn it off
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	tu := Start(Options{Headroom: 32 << 20, IdleCheck: 20 * time.Millisecond, IdleRelease: 40 * time.Millisecond})
	if tu == nil {
		t.Fatal("Start returned no tuner")
	}
	defer tu.Stop()
	if again := Start(Options{}); again != nil {
		again.Stop()
		t.Fatal("a second tuner started while one runs")
	}

	if !churn(1_000_000, func() bool { return tu.Percent() > 100 }) {
		t.Fatalf("GOGC stayed %d under allocation with a small live heap", tu.Percent())
	}
	if got := debug.SetGCPercent(-1); got != tu.Percent() {
		t.Errorf("the runtime's GOGC is %d, the tuner says %d", got, tu.Percent())
	}
	debug.SetGCPercent(tu.Percent())

	// Idle: the base comes back and the garbage goes.
	if !waitFor(func() bool { return tu.Released() > 0 }) {
		t.Fatal("the idle process never gave its garbage back")
	}
	if p := tu.Percent(); p != 100 {
		t.Errorf("after the release GOGC is %d, want the base 100", p)
	}
	// Collections while idle keep the base.
	seen := tu.seenCycles()
	runtime.GC()
	runtime.GC()
	if !waitFor(func() bool { return tu.seenCycles() > seen }) {
		t.Fatal("the tuner saw no collection")
	}
	if p := tu.Percent(); p != 100 {
		t.Errorf("a collection while idle raised GOGC to %d", p)
	}

	// Busy again: raised again.
	if !churn(1_000_000, func() bool { return tu.Percent() > 100 }) {
		t.Fatalf("GOGC stayed %d once the process allocated again", tu.Percent())
	}

	tu.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after Stop GOGC is %d, want the base 100", got)
	}
	// A stopped tuner changes nothing more.
	churn(4096, func() bool { return false }) // 256 MiB: several collections
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("a stopped tuner set GOGC to %d", got)
	}
	if next := Start(Options{}); next == nil {
		t.Error("no tuner starts after Stop")
	} else {
		next.Stop()
	}
}

func TestChecksFor(t *testing.T) {
	for _, tc := range []struct {
		after, every time.Duration
		want         int
	}{
		{DefaultIdleRelease, DefaultIdleCheck, 120}, // a minute of half-second checks
		{time.Second, 500 * time.Millisecond, 2},
		{1100 * time.Millisecond, 500 * time.Millisecond, 3}, // rounded up
		{time.Millisecond, time.Second, 2},                   // at least two
		{0, time.Second, 2},
		{math.MaxInt64, time.Second, int(math.MaxInt64/int64(time.Second)) + 1}, // no overflow
	} {
		if got := ChecksFor(tc.after, tc.every); got != tc.want {
			t.Errorf("ChecksFor(%v, %v) = %d, want %d", tc.after, tc.every, got, tc.want)
		}
	}
}

// The release comes at the need-th quiet check in a row, and a busy
// check starts the count again.
func TestIdleCounter(t *testing.T) {
	c := idleCounter{threshold: 1000, need: 3}
	steps := []struct {
		allocated     uint64
		busy, release bool
	}{
		{5000, true, false},
		{10, false, false},
		{999, false, false},
		{1000, true, false}, // the threshold is busy: the count restarts
		{0, false, false},
		{0, false, false},
		{0, false, true}, // third quiet check in a row
		{0, false, true}, // and each one after (release is a no-op then)
		{2000, true, false},
		{0, false, false},
	}
	for i, st := range steps {
		busy, release := c.check(st.allocated)
		if busy != st.busy || release != st.release {
			t.Errorf("check %d (%d bytes): busy %v release %v, want %v %v", i, st.allocated, busy, release, st.busy, st.release)
		}
	}
}

// A process idle for less than IdleRelease keeps its raised GOGC and its
// pages: the release waits for the whole idle time, not two checks.
func TestTunerWaitsForIdleRelease(t *testing.T) {
	t.Setenv("GOGC", "")
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	tu := Start(Options{Headroom: 32 << 20, IdleCheck: 2 * time.Millisecond, IdleRelease: time.Hour})
	if tu == nil {
		t.Fatal("Start returned no tuner")
	}
	defer tu.Stop()
	if !churn(1_000_000, func() bool { return tu.Percent() > 100 }) {
		t.Fatalf("GOGC stayed %d under allocation with a small live heap", tu.Percent())
	}
	// 50 checks (many more than the two that released before) with
	// nothing allocated between most of them.
	from := tu.seenChecks()
	if !waitFor(func() bool { return tu.seenChecks() >= from+50 }) {
		t.Fatal("the tuner made no idleness checks")
	}
	if n := tu.Released(); n != 0 {
		t.Errorf("released %d times after %d quiet checks, with an hour to wait", n, tu.seenChecks()-from)
	}
	if p := tu.Percent(); p <= 100 {
		t.Errorf("GOGC went back to %d before the idle time", p)
	}
}

func TestTunerOff(t *testing.T) {
	if tu := Start(Options{Headroom: -1}); tu != nil {
		tu.Stop()
		t.Error("a negative headroom started a tuner")
	}
	t.Setenv("GOGC", "200")
	if tu := Start(Options{}); tu != nil {
		tu.Stop()
		t.Error("GOGC in the environment started a tuner")
	}
	var nilTuner *Tuner
	nilTuner.Stop() // safe
}

func (t *Tuner) seenChecks() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checks
}

func (t *Tuner) seenCycles() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cycles
}
