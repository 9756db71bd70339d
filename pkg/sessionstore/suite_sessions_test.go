package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The Sessions part of the conformance suite: records and subscriptions.

func testCreateGetRoundTrip(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	in := fullSession()
	want := *fullSession()
	want.ID = in.ID

	before := time.Now()
	mustCreate(t, st, in)
	afterCreate := time.Now()
	checkMilliUTC(t, "CreatedAt", in.CreatedAt, before, afterCreate)
	if !in.LastSeen.Equal(in.CreatedAt) {
		t.Errorf("after Create, LastSeen = %v, want CreatedAt %v", in.LastSeen, in.CreatedAt)
	}

	clockTick(t, in.CreatedAt) // so that LastSeen moves
	beforeGet := time.Now()
	got, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	afterGet := time.Now()
	checkMilliUTC(t, "LastSeen", got.LastSeen, beforeGet, afterGet)
	if !got.CreatedAt.Equal(in.CreatedAt) {
		t.Errorf("Get CreatedAt = %v, want %v", got.CreatedAt, in.CreatedAt)
	}
	want.CreatedAt, want.LastSeen = in.CreatedAt, got.LastSeen
	if d := diff(&want, got); d != "" {
		t.Errorf("Get after Create mismatch:\n%s", d)
	}
}

func testMinimalSession(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	in := &Session{ID: NewID()}
	mustCreate(t, st, in)
	got, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := &Session{ID: in.ID, CreatedAt: in.CreatedAt, LastSeen: got.LastSeen}
	if d := diff(want, got); d != "" {
		t.Errorf("Get mismatch:\n%s", d)
	}
}

func testGetReturnsCopy(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	in := fullSession()
	mustCreate(t, st, in)
	want, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}

	// Neither the caller's record nor a returned copy is shared with the
	// store.
	in.ClientInfo.Icons[0].Sizes[0] = "changed"
	in.ClientCapabilities.Experimental["x.feature"][2] = 'X'
	in.ClientCapabilities.Roots.ListChanged = false
	got1, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	got1.ClientInfo.Icons[0].Sizes[0] = "changed"
	got1.ClientInfo.Icons[1].Src = "changed"
	got1.ClientCapabilities.Extensions["new"] = json.RawMessage(`1`)
	got1.ClientCapabilities.Extensions["io.example/ext"][1] = 'X'
	got1.ClientCapabilities.Experimental["x.feature"][2] = 'X'
	got1.ClientCapabilities.Roots.ListChanged = false
	got1.ClientCapabilities.Sampling.Tools = nil
	got1.ClientCapabilities.Elicitation.URL = nil
	got1.ClientCapabilities.Tasks[1] = 'X'
	got1.Principal = "mallory"

	got2, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want.LastSeen = got2.LastSeen
	if d := diff(want, got2); d != "" {
		t.Errorf("stored session changed through a copy:\n%s", d)
	}
}

func testCreateExisting(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	first := fullSession()
	mustCreate(t, st, first)

	second := fullSession()
	second.ID = first.ID
	second.Principal = "someone else"
	if err := st.Create(t.Context(), second); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create error = %v, want ErrExists", err)
	}
	got, err := st.Get(t.Context(), first.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Principal != first.Principal {
		t.Errorf("Principal = %q after failed Create, want the original %q", got.Principal, first.Principal)
	}
}

func testCreateInvalid(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	tests := []struct {
		name string
		s    *Session
	}{
		{"nil", nil},
		{"empty id", &Session{}},
		{"space in id", &Session{ID: "abc def"}},
		{"newline in id", &Session{ID: "abc\n"}},
		{"non-ASCII id", &Session{ID: "sessión"}},
		{"long id", &Session{ID: strings.Repeat("a", MaxIDLen+1)}},
		{"bad raw JSON", &Session{ID: NewID(), ClientCapabilities: protocol.ClientCapabilities{Tasks: json.RawMessage(`{`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.Create(t.Context(), tt.s)
			if err == nil || errors.Is(err, ErrExists) {
				t.Fatalf("Create error = %v, want a validation error", err)
			}
			if tt.s != nil {
				if _, err := st.Get(t.Context(), tt.s.ID); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get after failed Create error = %v, want ErrNotFound", err)
				}
			}
		})
	}
}

func testConcurrentCreate(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	id := NewID()
	const n = 16
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { errs <- st.Create(context.Background(), &Session{ID: id}) })
	}
	wg.Wait()
	close(errs)
	var created int
	for err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, ErrExists):
			t.Errorf("Create error = %v, want nil or ErrExists", err)
		}
	}
	if created != 1 {
		t.Errorf("%d concurrent Creates of one id succeeded, want 1", created)
	}
}

// checkAllNotFound checks that every method reports ErrNotFound for id,
// Delete last so that the others see the same state.
func checkAllNotFound(t *testing.T, st Store, id string) {
	t.Helper()
	for _, op := range sessionOps {
		if err := op.call(t.Context(), st, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s error = %v, want ErrNotFound", op.name, err)
		}
	}
}

func testUnknownSession(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	for _, id := range []string{NewID(), "", "bad id", "x\r\ny", strings.Repeat("a", MaxIDLen+1)} {
		t.Run(fmt.Sprintf("%q", shortID(id)), func(t *testing.T) {
			checkAllNotFound(t, st, id)
		})
	}
	// A failed call must not have created anything.
	id := NewID()
	checkAllNotFound(t, st, id)
	checkAllNotFound(t, st, id)
	// End has nothing to release, which is not an error.
	for _, id := range []string{NewID(), "", "bad id", "a{b}c", strings.Repeat("a", MaxIDLen+1)} {
		if err := st.End(t.Context(), id, "1", "token"); err != nil {
			t.Errorf("End on unknown session %q: %v", shortID(id), err)
		}
	}
}

func testErrorsTruncateID(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	id := NewID()
	for _, op := range sessionOps {
		err := op.call(t.Context(), st, id)
		if err == nil {
			t.Fatalf("%s succeeded on an unknown session", op.name)
		}
		if msg := err.Error(); strings.Contains(msg, id) || !strings.Contains(msg, id[:8]) {
			t.Errorf("%s error %q: want the first 8 bytes of the id and not the whole id", op.name, msg)
		}
	}
}

func testUpdate(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	in := fullSession()
	in.LogLevel, in.ClientInitialized = "", false
	mustCreate(t, st, in)

	level := protocol.LevelError
	yes, no := true, false
	steps := []struct {
		name      string
		patch     Patch
		wantLevel protocol.LoggingLevel
		wantInit  bool
	}{
		{"empty patch", Patch{}, "", false},
		{"log level only", Patch{LogLevel: &level}, protocol.LevelError, false},
		{"client initialized only", Patch{ClientInitialized: &yes}, protocol.LevelError, true},
		{"both", Patch{LogLevel: new(protocol.LevelDebug), ClientInitialized: &no}, protocol.LevelDebug, false},
	}
	for _, step := range steps {
		if err := st.Update(t.Context(), in.ID, step.patch); err != nil {
			t.Fatalf("%s: Update: %v", step.name, err)
		}
		got, err := st.Get(t.Context(), in.ID)
		if err != nil {
			t.Fatalf("%s: Get: %v", step.name, err)
		}
		if got.LogLevel != step.wantLevel || got.ClientInitialized != step.wantInit {
			t.Errorf("%s: got LogLevel %q, ClientInitialized %v; want %q, %v",
				step.name, got.LogLevel, got.ClientInitialized, step.wantLevel, step.wantInit)
		}
		want := *fullSession()
		want.ID, want.CreatedAt, want.LastSeen = in.ID, in.CreatedAt, got.LastSeen
		want.LogLevel, want.ClientInitialized = step.wantLevel, step.wantInit
		if d := diff(&want, got); d != "" {
			t.Errorf("%s: Update changed other members:\n%s", step.name, d)
		}
	}
}

func testNeverRecreateAfterDelete(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := fullSession()
	mustCreate(t, st, s)
	if err := st.Delete(t.Context(), s.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkAllNotFound(t, st, s.ID)
	checkAllNotFound(t, st, s.ID)
}

func testDeleteRemovesEverything(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := fullSession()
	other := fullSession()
	mustCreate(t, st, s)
	mustCreate(t, st, other)
	for _, id := range []string{s.ID, other.ID} {
		for _, uri := range []string{"file:///a", "file:///b"} {
			if err := st.Subscribe(t.Context(), id, uri); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			mustAppend(t, st, id, "s", fmt.Sprintf(`{"n":%d}`, i))
			mustAppend(t, st, id, "other", `{}`)
		}
		mustBegin(t, st, id, freshRequestID, "old", time.Hour)
	}

	if err := st.Delete(t.Context(), s.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := st.Delete(t.Context(), s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete error = %v, want ErrNotFound", err)
	}
	checkFreshSession(t, st, s.ID)
	if evs, err := st.EventsAfter(t.Context(), s.ID, "other", 0); err != nil || len(evs) != 0 {
		t.Errorf("re-created session: EventsAfter(other, 0) = %v, %v; want none", evs, err)
	}

	// The other session is untouched.
	subs, err := st.Subscriptions(t.Context(), other.ID)
	if err != nil || !slices.Equal(subs, []string{"file:///a", "file:///b"}) {
		t.Errorf("other session: Subscriptions = %q, %v", subs, err)
	}
	if evs, err := st.EventsAfter(t.Context(), other.ID, "s", 0); err != nil || len(evs) != 3 {
		t.Errorf("other session: EventsAfter = %v, %v; want 3 events", evs, err)
	}
	checkInFlight(t, st, other.ID, freshRequestID)
}

func testSubscriptions(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	check := func(step string, want []string) {
		t.Helper()
		got, err := st.Subscriptions(t.Context(), s.ID)
		if err != nil {
			t.Fatalf("%s: Subscriptions: %v", step, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Subscriptions = %q, want %q", step, got, want)
		}
	}
	check("new session", []string{})
	for _, uri := range []string{"file:///c", "file:///a", "https://x/b", "file:///a", "file:///c"} {
		if err := st.Subscribe(t.Context(), s.ID, uri); err != nil {
			t.Fatalf("Subscribe(%q): %v", uri, err)
		}
	}
	check("after Subscribe", []string{"file:///a", "file:///c", "https://x/b"})
	for _, uri := range []string{"file:///c", "file:///c", "file:///never"} {
		if err := st.Unsubscribe(t.Context(), s.ID, uri); err != nil {
			t.Fatalf("Unsubscribe(%q): %v", uri, err)
		}
	}
	check("after Unsubscribe", []string{"file:///a", "https://x/b"})
}
