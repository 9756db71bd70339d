package sessionstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// failoverTarget is a Redis set-up whose master a failover test kills.
type failoverTarget struct {
	name         string
	mode         sessionstore.RedisMode
	url          string
	kill         func(t *testing.T) int       // SIGKILLs a master, returns its node
	waitFailover func(t *testing.T, node int) // until a replica replaced it
	restart      func(t *testing.T, node int) // back as a replica, in sync
}

// Bounds of the failover tests.
const (
	// failoverCallTimeout is every call's context deadline.
	failoverCallTimeout = 2 * time.Second
	// failoverWorkers is how many goroutines make calls.
	failoverWorkers = 4
	// failoverWarmup is how many calls succeed before the kill.
	failoverWarmup = 300
	// failoverSteady is how many calls in a row must succeed after the
	// killed node is back for the store to count as recovered.
	failoverSteady = 300
)

// runFailovers runs the failover test without, then with, WaitReplicas,
// one after the other on target (each brings the killed node back).
func runFailovers(t *testing.T, target failoverTarget) {
	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("WaitReplicas=%d", wait), func(t *testing.T) { testFailover(t, target, wait) })
	}
}

// session is one session a worker created and its acknowledged appends.
type session struct {
	id     string
	events map[uint64]string // index -> data of each acknowledged append
}

// failoverLoad is the steady load of a failover test and its figures.
type failoverLoad struct {
	st sessionstore.Store
	mu sync.Mutex
	// The figures, guarded by mu.
	calls, failed, notReplicated, deadline, notFound int
	maxOK, maxFailed                                 time.Duration
	lastFailed                                       time.Time // end of the last failed call
	streak                                           int       // calls succeeded since the last failure
	samples                                          []string  // the first failures' errors, one per kind
	sessions                                         [][]*session
}

// call makes one call of op under failoverCallTimeout and records it. A
// session found missing (ErrNotFound) is an acknowledged write lost, not
// an outage: it is counted apart and does not break the streak.
func (l *failoverLoad) call(op func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), failoverCallTimeout)
	defer cancel()
	start := time.Now()
	err := op(ctx)
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	switch {
	case err == nil || errors.Is(err, sessionstore.ErrNotFound):
		l.maxOK = max(l.maxOK, took)
		l.streak++
		if err != nil {
			l.notFound++
		}
	default:
		l.failed++
		l.maxFailed = max(l.maxFailed, took)
		l.lastFailed, l.streak = time.Now(), 0
		if errors.Is(err, sessionstore.ErrNotReplicated) {
			l.notReplicated++
		}
		if errors.Is(err, context.DeadlineExceeded) {
			l.deadline++
		}
		if msg := err.Error(); len(l.samples) < 5 && !slices.Contains(l.samples, msg) {
			l.samples = append(l.samples, msg)
		}
	}
	return err
}

// waitFor waits until cond (a hang guard bounds the wait), failing the
// test with the figures so far if it does not come.
func (l *failoverLoad) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := testenv.HangGuard(60 * time.Second)
	if !testutil.WaitFor(guard, cond) {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("timed out after %v waiting for %s: %d calls, %d failed, first failures %q", guard, what, l.calls, l.failed, l.samples)
	}
}

// work is one worker w: it creates a session every fifth round, and each
// round appends to one of its sessions and reads one, until stop.
func (l *failoverLoad) work(w int, stop <-chan struct{}) {
	var mine []*session
	for round := 0; ; round++ {
		select {
		case <-stop:
			l.mu.Lock()
			l.sessions[w] = mine
			l.mu.Unlock()
			return
		default:
		}
		if round%5 == 0 || len(mine) == 0 {
			s := &session{id: sessionstore.NewID(), events: map[uint64]string{}}
			if l.call(func(ctx context.Context) error { return l.st.Create(ctx, &sessionstore.Session{ID: s.id}) }) == nil {
				mine = append(mine, s)
			}
			continue
		}
		s := mine[round%len(mine)]
		data := fmt.Sprintf(`{"w":%d,"round":%d}`, w, round)
		var idx uint64
		if l.call(func(ctx context.Context) (err error) {
			idx, err = l.st.AppendEvent(ctx, s.id, "s", []byte(data))
			return err
		}) == nil {
			s.events[idx] = data
		}
		r := mine[rand.IntN(len(mine))]
		_ = l.call(func(ctx context.Context) error { _, err := l.st.Get(ctx, r.id); return err })
	}
}

// testFailover kills a master of target under a steady load of Create,
// AppendEvent and Get calls from several goroutines, waits for the
// failover, brings the killed node back as a replica, and waits until
// calls succeed again. It checks that every call returned within its
// deadline (no hang) and that the store recovered, and counts the
// acknowledged writes lost: none may be with WaitReplicas; without, the
// writes the master had not sent to its replica (asynchronous
// replication) may go. One line gives the figures.
func testFailover(t *testing.T, target failoverTarget, waitReplicas int) {
	st := openModeForTest(t, target.mode, target.url, sessionstore.RedisOptions{
		Options: sessionstore.Options{TTL: time.Hour}, WaitReplicas: waitReplicas})
	l := &failoverLoad{st: st, sessions: make([][]*session, failoverWorkers)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range failoverWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); l.work(w, stop) }()
	}
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	figures := func() (calls, streak int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.calls - l.failed, l.streak
	}
	l.waitFor(t, "the load to warm up", func() bool { ok, _ := figures(); return ok >= failoverWarmup })

	node := target.kill(t)
	killed := time.Now()
	target.waitFailover(t, node)
	failedOver := time.Since(killed)
	target.restart(t, node)
	restarted := time.Since(killed)
	l.waitFor(t, "calls to succeed again", func() bool { _, s := figures(); return s >= failoverSteady })
	halt()

	// Every acknowledged write, read back on the new master.
	var sessions, events, lostSessions, lostEvents int
	ctx := t.Context()
	for _, mine := range l.sessions {
		for _, s := range mine {
			sessions++
			events += len(s.events)
			if _, err := st.Get(ctx, s.id); errors.Is(err, sessionstore.ErrNotFound) {
				lostSessions++
				lostEvents += len(s.events)
				continue
			} else if err != nil {
				t.Fatalf("Get after the recovery: %v", err)
			}
			got, err := st.EventsAfter(ctx, s.id, "s", 0)
			if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
				t.Fatalf("EventsAfter after the recovery: %v", err)
			}
			have := map[uint64]string{}
			for _, e := range got {
				have[e.Index] = string(e.Data)
			}
			for idx, data := range s.events {
				if have[idx] != data {
					lostEvents++
				}
			}
		}
	}
	recovery := time.Duration(0)
	if !l.lastFailed.IsZero() {
		recovery = l.lastFailed.Sub(killed)
	}
	t.Logf("%s failover, WaitReplicas %d: %d calls, %d failed (%d past their %v deadline, %d not replicated), %d found a lost session; "+
		"max latency %v (failed calls: %v); kill to failover %v, to the killed node back in sync %v, to the last failure (recovery) %v; "+
		"acknowledged %d sessions and %d events, lost %d sessions and %d events",
		target.name, waitReplicas, l.calls, l.failed, l.deadline, failoverCallTimeout, l.notReplicated, l.notFound,
		l.maxOK.Round(time.Millisecond), l.maxFailed.Round(time.Millisecond), failedOver.Round(time.Millisecond),
		restarted.Round(time.Millisecond), recovery.Round(time.Millisecond), sessions, events, lostSessions, lostEvents)
	if t.Failed() || testing.Verbose() {
		t.Logf("first failures: %q", l.samples)
	}
	if bound := failoverCallTimeout + testenv.HangGuard(time.Second); max(l.maxOK, l.maxFailed) > bound {
		t.Errorf("a call took %v, beyond its %v deadline and a second: it hung", max(l.maxOK, l.maxFailed), failoverCallTimeout)
	}
	if waitReplicas > 0 && (lostSessions > 0 || lostEvents > 0 || l.notFound > 0) {
		t.Errorf("with WaitReplicas %d, %d acknowledged sessions and %d events were lost (%d calls found a session missing)", waitReplicas, lostSessions, lostEvents, l.notFound)
	}
}
