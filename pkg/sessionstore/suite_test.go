package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// storeFactory returns a new, empty store with opts and registers its Close
// in t.Cleanup. Every store of one suite run must be independent of the
// others, as subtests run in parallel.
type storeFactory = func(t *testing.T, opts Options) Store

// suiteTTL is short enough for expiry tests to be quick and long enough
// for a loaded machine to touch a session several times per TTL.
const suiteTTL = 300 * time.Millisecond

// runStoreSuite checks every point of the [Store] contract against the
// stores newStore makes. It is the one conformance suite of the package.
func runStoreSuite(t *testing.T, newStore func(t *testing.T, opts Options) Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, newStore storeFactory)
	}{
		{"CreateGetRoundTrip", testCreateGetRoundTrip},
		{"MinimalSession", testMinimalSession},
		{"GetReturnsCopy", testGetReturnsCopy},
		{"CreateExisting", testCreateExisting},
		{"CreateInvalid", testCreateInvalid},
		{"ConcurrentCreate", testConcurrentCreate},
		{"UnknownSession", testUnknownSession},
		{"ErrorsTruncateID", testErrorsTruncateID},
		{"Update", testUpdate},
		{"SlidingTTL", testSlidingTTL},
		{"ReadsDoNotSlideTTL", testReadsDoNotSlideTTL},
		{"ExpiredSessionIsGone", testExpiredSessionIsGone},
		{"NeverRecreateAfterDelete", testNeverRecreateAfterDelete},
		{"DeleteRemovesEverything", testDeleteRemovesEverything},
		{"Subscriptions", testSubscriptions},
		{"EventIndices", testEventIndices},
		{"EventsAfter", testEventsAfter},
		{"Trimming", testTrimming},
		{"EventsAreCopies", testEventsAreCopies},
		{"ConcurrentAppends", testConcurrentAppends},
		{"BeginIsGet", testBeginIsGet},
		{"BeginInFlight", testBeginInFlight},
		{"EndReleases", testEndReleases},
		{"ClaimExpires", testClaimExpires},
		{"DeleteReleasesClaims", testDeleteReleasesClaims},
		{"ConcurrentBegin", testConcurrentBegin},
		{"UseOnce", testUseOnce},
		{"Records", testRecords},
		{"RecordExpiry", testRecordExpiry},
		{"RecordCAS", testRecordCAS},
		{"OddRequestIDs", testOddRequestIDs},
		{"BeginInvalidTTL", testBeginInvalidTTL},
		{"CanceledContext", testCanceledContext},
		{"Ping", testPing},
		{"CloseIdempotent", testCloseIdempotent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newStore)
		})
	}
}

// fullSession returns a session with every member set, capabilities with
// nested members included.
func fullSession() *Session {
	return &Session{
		ID:              NewID(),
		ProtocolVersion: "2025-11-25",
		ClientInfo: protocol.Implementation{
			Name:        "test-client",
			Version:     "1.2.3",
			Title:       "Test Client",
			Description: "a client for tests",
			WebsiteURL:  "https://example.com",
			Icons: []protocol.Icon{
				{Src: "https://example.com/a.png", MimeType: "image/png", Sizes: []string{"16x16", "32x32"}, Theme: "dark"},
				{Src: "data:image/svg+xml;base64,AAAA"},
			},
		},
		ClientCapabilities: protocol.ClientCapabilities{
			Experimental: map[string]json.RawMessage{"x.feature": json.RawMessage(`{"on":true,"n":[1,2]}`)},
			Roots:        &protocol.RootsCapability{ListChanged: true},
			Sampling:     &protocol.SamplingCapability{Context: &struct{}{}, Tools: &struct{}{}},
			Elicitation:  &protocol.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
			Tasks:        json.RawMessage(`{"list":{},"cancel":{}}`),
			Extensions:   map[string]json.RawMessage{"io.example/ext": json.RawMessage(`{"v":1}`)},
		},
		LogLevel:          protocol.LevelWarning,
		Initialized:       true,
		ClientInitialized: true,
		Principal:         "user:alice@example.com",
	}
}

func mustCreate(t testing.TB, st Store, s *Session) {
	t.Helper()
	if err := st.Create(t.Context(), s); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

func mustAppend(t testing.TB, st Store, id, stream string, data string) uint64 {
	t.Helper()
	idx, err := st.AppendEvent(t.Context(), id, stream, []byte(data))
	if err != nil {
		t.Fatalf("AppendEvent(%q): %v", stream, err)
	}
	return idx
}

// diff reports the difference between want and got, or "" if they are
// deeply equal. (go-cmp is not a dependency of the module.)
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, _ := json.MarshalIndent(want, "", "  ")
	g, _ := json.MarshalIndent(got, "", "  ")
	return fmt.Sprintf("want %#v\n got %#v\nwant JSON %s\n got JSON %s", want, got, w, g)
}

// checkMilliUTC fails unless ts is a UTC time with millisecond precision
// between from and to (from truncated to milliseconds).
func checkMilliUTC(t *testing.T, what string, ts, from, to time.Time) {
	t.Helper()
	if ts.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, ts.Location())
	}
	if ts.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("%s = %v, want millisecond precision", what, ts)
	}
	if ts.Before(from.Truncate(time.Millisecond)) || ts.After(to) {
		t.Errorf("%s = %v, want between %v and %v", what, ts, from, to)
	}
}

// eventually polls cond until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isLive reports whether id is live without sliding its TTL.
func isLive(t *testing.T, st Store, id string) (bool, error) {
	_, err := st.Subscriptions(t.Context(), id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// waitExpired waits until id has expired, without touching it.
func waitExpired(t *testing.T, st Store, id string) {
	t.Helper()
	eventually(t, 5*time.Second, "session expires", func() error {
		live, err := isLive(t, st, id)
		if err != nil {
			return err
		}
		if live {
			return errors.New("still live")
		}
		return nil
	})
}

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

	time.Sleep(5 * time.Millisecond) // so that LastSeen moves
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
	got1.ClientCapabilities.Extensions["new"] = json.RawMessage(`1`)
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

// sessionOps calls every method that names an existing session.
var sessionOps = []struct {
	name string
	call func(ctx context.Context, st Store, id string) error
}{
	{"Get", func(ctx context.Context, st Store, id string) error { _, err := st.Get(ctx, id); return err }},
	{"Update", func(ctx context.Context, st Store, id string) error {
		lvl := protocol.LevelDebug
		return st.Update(ctx, id, Patch{LogLevel: &lvl})
	}},
	{"Delete", func(ctx context.Context, st Store, id string) error { return st.Delete(ctx, id) }},
	{"Subscribe", func(ctx context.Context, st Store, id string) error { return st.Subscribe(ctx, id, "file:///a") }},
	{"Unsubscribe", func(ctx context.Context, st Store, id string) error { return st.Unsubscribe(ctx, id, "file:///a") }},
	{"Subscriptions", func(ctx context.Context, st Store, id string) error { _, err := st.Subscriptions(ctx, id); return err }},
	{"AppendEvent", func(ctx context.Context, st Store, id string) error {
		_, err := st.AppendEvent(ctx, id, "s", []byte("{}"))
		return err
	}},
	{"EventsAfter", func(ctx context.Context, st Store, id string) error {
		_, err := st.EventsAfter(ctx, id, "s", 0)
		return err
	}},
	{"Begin", func(ctx context.Context, st Store, id string) error {
		s, err := st.Begin(ctx, id, "1", "token", time.Minute)
		if s != nil && err != nil && !errors.Is(err, ErrInFlight) {
			return fmt.Errorf("Begin returned a session with error %w", err)
		}
		return err
	}},
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

func testSlidingTTL(t *testing.T, newStore storeFactory) {
	for _, op := range touchOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t, Options{TTL: suiteTTL})
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
		time.Sleep(suiteTTL / 10)
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

func testReadsDoNotSlideTTL(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: suiteTTL})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	// Subscriptions and EventsAfter are reads that must not keep a session
	// alive: a replaying client is not activity.
	eventually(t, 5*time.Second, "session expires while read", func() error {
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

func testExpiredSessionIsGone(t *testing.T, newStore storeFactory) {
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

func testEventIndices(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)

	payloads := []string{`{"n":1}`, "", "\x00\xff binary \r\n", `{"n":4}`, strings.Repeat("x", 64<<10)}
	var want1, want2 []Event
	for i, p := range payloads {
		if idx := mustAppend(t, st, s.ID, "one", p); idx != uint64(i+1) {
			t.Errorf("append %d to stream one: index %d, want %d", i, idx, i+1)
		}
		want1 = append(want1, Event{Index: uint64(i + 1), Data: []byte(p)})
		if i%2 == 0 {
			idx := mustAppend(t, st, s.ID, "two", p)
			want2 = append(want2, Event{Index: uint64(len(want2) + 1), Data: []byte(p)})
			if idx != uint64(len(want2)) {
				t.Errorf("stream two: index %d, want %d", idx, len(want2))
			}
		}
	}
	for stream, want := range map[string][]Event{"one": want1, "two": want2} {
		got, err := st.EventsAfter(t.Context(), s.ID, stream, 0)
		if err != nil {
			t.Fatalf("EventsAfter(%s, 0): %v", stream, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("EventsAfter(%s, 0):\n%s", stream, d)
		}
	}
}

// events returns the events from..to with data as appended by appendN.
func events(from, to uint64) []Event {
	evs := []Event{}
	for i := from; i <= to; i++ {
		evs = append(evs, Event{Index: i, Data: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	return evs
}

// appendN appends n events whose data names their expected index.
func appendN(t *testing.T, st Store, id, stream string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if idx := mustAppend(t, st, id, stream, fmt.Sprintf(`{"n":%d}`, i)); idx != uint64(i) {
			t.Fatalf("AppendEvent index = %d, want %d", idx, i)
		}
	}
}

// eventsCase is one EventsAfter query and its expected answer.
type eventsCase struct {
	stream     string
	after      uint64
	want       []Event // nil when wantPurged
	wantPurged bool
}

func checkEventsAfter(t *testing.T, st Store, id string, tests []eventsCase) {
	t.Helper()
	for _, tt := range tests {
		got, err := st.EventsAfter(t.Context(), id, tt.stream, tt.after)
		switch {
		case tt.wantPurged:
			if !errors.Is(err, ErrEventsPurged) || got != nil {
				t.Errorf("EventsAfter(%s, %d) = %v, %v; want ErrEventsPurged", tt.stream, tt.after, got, err)
			}
		case err != nil:
			t.Errorf("EventsAfter(%s, %d) error: %v", tt.stream, tt.after, err)
		case got == nil:
			t.Errorf("EventsAfter(%s, %d) = nil, want a non-nil slice", tt.stream, tt.after)
		default:
			if d := diff(tt.want, got); d != "" {
				t.Errorf("EventsAfter(%s, %d):\n%s", tt.stream, tt.after, d)
			}
		}
	}
}

func testEventsAfter(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{MaxEvents: 10})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	appendN(t, st, s.ID, "s", 1, 5)
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 0, want: events(1, 5)},
		{stream: "s", after: 2, want: events(3, 5)},
		{stream: "s", after: 4, want: events(5, 5)},
		{stream: "s", after: 5, want: []Event{}},
		// A client ahead of the store has nothing newer to see.
		{stream: "s", after: 6, want: []Event{}},
		{stream: "s", after: math.MaxUint64, want: []Event{}},
		// A stream without events: nothing to replay from 0, but a client
		// that saw events the store does not know cannot be served.
		{stream: "none", after: 0, want: []Event{}},
		{stream: "none", after: 1, wantPurged: true},
		{stream: "none", after: math.MaxUint64, wantPurged: true},
	})
}

func testTrimming(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{MaxEvents: 3})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	appendN(t, st, s.ID, "s", 1, 5) // keeps 3..5
	appendN(t, st, s.ID, "short", 1, 2)
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 0, wantPurged: true},
		{stream: "s", after: 1, wantPurged: true},
		{stream: "s", after: 2, want: events(3, 5)},
		{stream: "s", after: 3, want: events(4, 5)},
		{stream: "s", after: 5, want: []Event{}},
		{stream: "s", after: 9, want: []Event{}},
		{stream: "short", after: 0, want: events(1, 2)},
	})
	appendN(t, st, s.ID, "s", 6, 1) // keeps 4..6
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 2, wantPurged: true},
		{stream: "s", after: 3, want: events(4, 6)},
	})
}

func testEventsAreCopies(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	buf := []byte(`{"n":1}`)
	if _, err := st.AppendEvent(t.Context(), s.ID, "s", buf); err != nil {
		t.Fatal(err)
	}
	buf[2] = 'X'
	got, err := st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	got[0].Data[2] = 'Y'
	got, err = st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(events(1, 1), got); d != "" {
		t.Errorf("stored event changed through a caller's buffer:\n%s", d)
	}
}

func testConcurrentAppends(t *testing.T, newStore storeFactory) {
	const writers, perWriter = 8, 40
	st := newStore(t, Options{MaxEvents: writers * perWriter})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)

	type appended struct {
		idx  uint64
		data string
	}
	results := make(chan appended, writers*perWriter)
	errs := make(chan error, 4*writers*perWriter)
	var wg sync.WaitGroup
	ctx := t.Context()
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				data := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				idx, err := st.AppendEvent(ctx, s.ID, "s", []byte(data))
				if err != nil {
					errs <- err
					return
				}
				results <- appended{idx, data}
			}
		})
		// Other traffic on the same session, for the race detector.
		wg.Go(func() {
			lvl := protocol.LevelInfo
			for i := range perWriter {
				uri := fmt.Sprintf("file:///%d/%d", w, i%3)
				for _, err := range []error{
					st.Subscribe(ctx, s.ID, uri),
					st.Update(ctx, s.ID, Patch{LogLevel: &lvl}),
					func() error { _, err := st.Get(ctx, s.ID); return err }(),
					func() error { _, err := st.EventsAfter(ctx, s.ID, "s", 0); return err }(),
					func() error { _, err := st.Subscriptions(ctx, s.ID); return err }(),
				} {
					if err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}

	byIndex := map[uint64]string{}
	for r := range results {
		if prev, dup := byIndex[r.idx]; dup {
			t.Errorf("index %d given to both %s and %s", r.idx, prev, r.data)
		}
		byIndex[r.idx] = r.data
	}
	got, err := st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatalf("EventsAfter: %v", err)
	}
	if len(got) != writers*perWriter || len(byIndex) != writers*perWriter {
		t.Fatalf("got %d events and %d distinct indices, want %d", len(got), len(byIndex), writers*perWriter)
	}
	for i, ev := range got {
		if ev.Index != uint64(i+1) {
			t.Fatalf("event %d has index %d: indices are not gapless from 1", i, ev.Index)
		}
		if string(ev.Data) != byIndex[ev.Index] {
			t.Errorf("event %d data = %s, want %s as returned by its AppendEvent", ev.Index, ev.Data, byIndex[ev.Index])
		}
	}
}

func testCanceledContext(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, op := range sessionOps {
		if err := op.call(ctx, st, s.ID); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: error = %v, want context.Canceled", op.name, err)
		}
	}
	if err := st.Create(ctx, &Session{ID: NewID()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a canceled context: error = %v, want context.Canceled", err)
	}
	if _, err := st.Get(t.Context(), s.ID); err != nil {
		t.Errorf("Get after the canceled calls: %v (a canceled Delete must not delete)", err)
	}
	// The canceled Begin of sessionOps claimed nothing; a canceled End
	// releases nothing.
	mustBegin(t, st, s.ID, "1", "live", time.Hour)
	if err := st.End(ctx, s.ID, "1", "live"); !errors.Is(err, context.Canceled) {
		t.Errorf("End with a canceled context: error = %v, want context.Canceled", err)
	}
	checkInFlight(t, st, s.ID, "1")
}

func testPing(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	p, ok := st.(Pinger)
	if !ok {
		t.Fatalf("%T does not implement Pinger", st)
	}
	if err := p.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func testCloseIdempotent(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	for i := range 3 {
		if err := st.Close(t.Context()); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
}

func testUseOnce(t *testing.T, newStore func(t *testing.T, opts Options) Store) {
	s := newStore(t, Options{})
	ctx := context.Background()
	if err := s.UseOnce(ctx, "state-a", time.Minute); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.UseOnce(ctx, "state-a", time.Minute); !errors.Is(err, ErrUsed) {
		t.Fatalf("second use: %v, want ErrUsed", err)
	}
	if err := s.UseOnce(ctx, "state-b", time.Minute); err != nil {
		t.Fatalf("another key: %v", err)
	}
	if err := s.UseOnce(ctx, "short", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.UseOnce(ctx, "short", 50*time.Millisecond) != nil {
		if time.Now().After(deadline) {
			t.Fatal("a used key never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.UseOnce(ctx, "x", 0); err == nil {
		t.Fatal("a zero ttl was accepted")
	}
}
