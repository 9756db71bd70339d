package testutil

import (
	"testing"
	"time"
)

// DefaultHangGuard is the deadline of Poll: a generous bound that only
// catches a hang, never a measure of speed.
const DefaultHangGuard = 30 * time.Second

// pollEvery is the interval between two checks of a condition.
const pollEvery = 5 * time.Millisecond

// Poll calls cond until it reports true and fails the test (Fatalf, with
// what) if that has not happened within DefaultHangGuard. It is the way a
// test waits for an event it cannot be told about: never a fixed sleep.
func Poll(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	PollFor(tb, DefaultHangGuard, what, cond)
}

// PollFor is Poll with its own hang guard.
func PollFor(tb testing.TB, guard time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !WaitFor(guard, cond) {
		tb.Fatalf("timed out after %v waiting for %s", guard, what)
	}
}

// WaitFor calls cond until it reports true or guard has passed, and
// reports whether it did; for callers that are not test goroutines (it
// never calls t.Fatal).
func WaitFor(guard time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(guard)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery) // the polling interval, not a synchronisation
	}
}
