package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The expiry part of the conformance suite: which calls slide a session's
// TTL, and what an expired session leaves behind.

// touchOps are the calls that extend a session's TTL.
var touchOps = []struct {
	name  string
	touch func(ctx context.Context, st Store, id string) error
}{
	{"Get", func(ctx context.Context, st Store, id string) error { _, err := st.Get(ctx, id); return err }},
	{"Update", func(ctx context.Context, st Store, id string) error { return st.Update(ctx, id, Patch{}) }},
	{"Subscribe", func(ctx context.Context, st Store, id string) error { return st.Subscribe(ctx, id, "file:///x") }},
	{"Unsubscribe", func(ctx context.Context, st Store, id string) error { return st.Unsubscribe(ctx, id, "file:///x") }},
	{"AppendEvent", func(ctx context.Context, st Store, id string) error {
		_, err := st.AppendEvent(ctx, id, "s", []byte(`{}`))
		return err
	}},
	{"Begin", func(ctx context.Context, st Store, id string) error {
		_, err := st.Begin(ctx, id, NewID(), "token", suiteTTL)
		return err
	}},
	// A Begin refused because the request id is in flight still slides:
	// the client is active.
	{"BeginInFlight", func(ctx context.Context, st Store, id string) error {
		s, err := st.Begin(ctx, id, "busy", NewID(), time.Hour)
		if errors.Is(err, ErrInFlight) && s != nil {
			err = nil
		}
		return err
	}},
}

func testSlidingTTL(t *testing.T, newStore storeFactory, clock suiteClock) {
	for _, op := range touchOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			clock.run(t, func(t *testing.T) {
				st := newStore(t, Options{TTL: suiteTTL})
				// On the fake clock no pause happens: one attempt.
				const attempts = 3
				for attempt := 1; ; attempt++ {
					stall := checkSliding(t, st, op.name, op.touch)
					if stall == 0 {
						break
					}
					if attempt == attempts {
						t.Fatalf("the test was paused %v between touches (TTL %v) in %d attempts: machine overloaded", stall, suiteTTL, attempts)
					}
					t.Logf("attempt %d: the test was paused %v between touches (TTL %v); retrying", attempt, stall, suiteTTL)
				}
			})
		})
	}
}

// checkSliding checks that a session touched every TTL/10 outlives its
// first expiry while an untouched one expires, and that it expires once
// left alone. A touch finding the session gone is a failure only if the
// previous touch started less than TTL/2 earlier; after a longer pause
// (a loaded machine) it returns the pause so that the caller can retry.
func checkSliding(t *testing.T, st Store, name string, touch func(context.Context, Store, string) error) (stall time.Duration) {
	t.Helper()
	kept, idle := &Session{ID: NewID()}, &Session{ID: NewID()}
	mustCreate(t, st, kept)
	mustCreate(t, st, idle)

	start := time.Now()
	last := start
	stillLive := func(err error) bool {
		gap := time.Since(last)
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrNotFound) && gap >= suiteTTL/2:
			stall = gap
			return false
		}
		t.Fatalf("%s %v after Create, %v after the last touch: %v",
			name, time.Since(start).Round(time.Millisecond), gap.Round(time.Millisecond), err)
		return false
	}
	for time.Since(start) < 3*suiteTTL {
		now := time.Now()
		if !stillLive(touch(t.Context(), st, kept.ID)) {
			return stall
		}
		last = now
		pass(suiteTTL / 10) // the client comes back every TTL/10
	}
	live, err := isLive(t, st, kept.ID)
	if err == nil && !live {
		err = ErrNotFound
	}
	if !stillLive(err) {
		return stall
	}
	if live, err := isLive(t, st, idle.ID); err != nil || live {
		t.Fatalf("untouched session: live = %v, err = %v after %v, want expired", live, err, time.Since(start))
	}
	// Left alone, kept expires too.
	waitExpired(t, st, kept.ID)
	if _, err := st.Get(t.Context(), kept.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after expiry: %v, want ErrNotFound", err)
	}
	return 0
}

func testReadsDoNotSlideTTL(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) { checkReadsDoNotSlideTTL(t, newStore) })
}

func checkReadsDoNotSlideTTL(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: suiteTTL})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	// Subscriptions and EventsAfter are reads that must not keep a session
	// alive: a replaying client is not activity.
	eventually(t, "session expires while read", func() error {
		// Nor is the end of a request (End has nothing to release here).
		if err := st.End(t.Context(), s.ID, "1", "token"); err != nil {
			t.Fatalf("End: %v", err)
		}
		if _, err := st.EventsAfter(t.Context(), s.ID, "s", 0); errors.Is(err, ErrNotFound) {
			return nil
		}
		if _, err := st.Subscriptions(t.Context(), s.ID); errors.Is(err, ErrNotFound) {
			return nil
		}
		return errors.New("still live")
	})
}

func testExpiredSessionIsGone(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) { checkExpiredSessionIsGone(t, newStore) })
}

func checkExpiredSessionIsGone(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: suiteTTL})
	s := fullSession()
	mustCreate(t, st, s)
	if err := st.Subscribe(t.Context(), s.ID, "file:///a"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, s.ID, "s", `{"n":1}`)
	mustBegin(t, st, s.ID, freshRequestID, "old", time.Hour)
	waitExpired(t, st, s.ID)

	checkAllNotFound(t, st, s.ID) // never recreated by a late Update & co.
	checkFreshSession(t, st, s.ID)
}

// freshRequestID is the request id that checkFreshSession expects to be
// free in a re-created session.
const freshRequestID = `"fresh"`

// checkFreshSession creates id and checks that it has none of the state of
// an earlier session with that id, in-flight claims included.
func checkFreshSession(t *testing.T, st Store, id string) {
	t.Helper()
	mustCreate(t, st, &Session{ID: id})
	got, err := st.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Principal != "" || got.LogLevel != "" || got.ClientInitialized {
		t.Errorf("re-created session kept old members: %+v", got)
	}
	subs, err := st.Subscriptions(t.Context(), id)
	if err != nil || len(subs) != 0 {
		t.Errorf("re-created session: Subscriptions = %q, %v; want none", subs, err)
	}
	evs, err := st.EventsAfter(t.Context(), id, "s", 0)
	if err != nil || len(evs) != 0 {
		t.Errorf("re-created session: EventsAfter(0) = %v, %v; want none", evs, err)
	}
	if _, err := st.EventsAfter(t.Context(), id, "s", 1); !errors.Is(err, ErrEventsPurged) {
		t.Errorf("re-created session: EventsAfter(1) error = %v, want ErrEventsPurged (the old events are gone)", err)
	}
	if idx := mustAppend(t, st, id, "s", `{}`); idx != 1 {
		t.Errorf("re-created session: first index = %d, want 1", idx)
	}
	if _, err := st.Begin(t.Context(), id, freshRequestID, "new", time.Hour); err != nil {
		t.Errorf("re-created session: Begin(%s): %v, want the old claim gone", freshRequestID, err)
	}
}
