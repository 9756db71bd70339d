package sessionstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The Subscribers part of the Sessions suite.

// subscribers returns Subscribers(uri), sorted.
func subscribers(t *testing.T, st Store, uri string) []string {
	t.Helper()
	ids, err := st.Subscribers(t.Context(), uri)
	if err != nil {
		t.Fatalf("Subscribers(%q): %v", uri, err)
	}
	if ids == nil {
		t.Fatalf("Subscribers(%q) = nil, want a non-nil slice", uri)
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(ids ...string) []string {
	return slices.Sorted(slices.Values(ids))
}

// testSubscribers: Subscribe and Unsubscribe keep the index of
// Subscribers; a deleted session may stay in it until DropSubscriber,
// which keeps a session that is subscribed.
func testSubscribers(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour})
	ctx := t.Context()
	a, b, c := &Session{ID: NewID()}, &Session{ID: NewID()}, &Session{ID: NewID()}
	for _, s := range []*Session{a, b, c} {
		mustCreate(t, st, s)
	}
	const uri = "file:///a}b{c: ☃"
	if got := subscribers(t, st, uri); len(got) != 0 {
		t.Fatalf("no subscriptions yet: %q", got)
	}
	for _, s := range []*Session{a, b, a} {
		if err := st.Subscribe(ctx, s.ID, uri); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Subscribe(ctx, c.ID, "file:///other"); err != nil {
		t.Fatal(err)
	}
	if got, want := subscribers(t, st, uri), sortedIDs(a.ID, b.ID); !slices.Equal(got, want) {
		t.Fatalf("two subscribed: %q, want %q", got, want)
	}
	if got, want := subscribers(t, st, "file:///other"), []string{c.ID}; !slices.Equal(got, want) {
		t.Fatalf("another URI: %q, want %q", got, want)
	}
	if got := subscribers(t, st, "file:///a"); len(got) != 0 {
		t.Fatalf("a URI no one subscribed to: %q", got)
	}

	// Unsubscribe removes; DropSubscriber keeps a session that is still
	// subscribed.
	if err := st.Unsubscribe(ctx, a.ID, uri); err != nil {
		t.Fatal(err)
	}
	if err := st.DropSubscriber(ctx, uri, b.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := subscribers(t, st, uri), []string{b.ID}; !slices.Equal(got, want) {
		t.Fatalf("after Unsubscribe of one: %q, want %q", got, want)
	}

	// Delete may leave the entry behind; DropSubscriber removes it.
	if err := st.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if got := subscribers(t, st, uri); len(got) > 1 || len(got) == 1 && got[0] != b.ID {
		t.Fatalf("after Delete: %q, want at most the deleted %q", got, b.ID)
	}
	for range 2 { // idempotent
		if err := st.DropSubscriber(ctx, uri, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := subscribers(t, st, uri); len(got) != 0 {
		t.Fatalf("after DropSubscriber: %q", got)
	}
	// Unknown ones are no error.
	for _, id := range []string{NewID(), "", "bad id", "a{b}c"} {
		if err := st.DropSubscriber(ctx, "file:///never", id); err != nil {
			t.Errorf("DropSubscriber(%q): %v", shortID(id), err)
		}
	}
	// A session created again with the id is not subscribed: if its old
	// entry is still there, it is stale, and dropped.
	if err := st.Subscribe(ctx, c.ID, uri); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, &Session{ID: c.ID})
	for _, id := range subscribers(t, st, uri) {
		if subs, err := st.Subscriptions(ctx, id); err != nil || slices.Contains(subs, uri) {
			t.Fatalf("the entry of a re-created session: subscriptions %q, %v", subs, err)
		}
		if err := st.DropSubscriber(ctx, uri, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := subscribers(t, st, uri); len(got) != 0 {
		t.Fatalf("after dropping the stale entries: %q", got)
	}

	// A done context fails the calls.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Subscribers(canceled, uri); !errors.Is(err, context.Canceled) {
		t.Errorf("Subscribers with a canceled context: %v", err)
	}
	if err := st.DropSubscriber(canceled, uri, a.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("DropSubscriber with a canceled context: %v", err)
	}
}
