package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// storeFactory returns a new, empty store with opts and registers its Close
// in t.Cleanup. Every store of one suite run must be independent of the
// others, as subtests run in parallel.
type storeFactory = func(t *testing.T, opts Options) Store

// suiteTTL is short enough for expiry tests to be quick and long enough
// for a loaded machine to touch a session several times per TTL.
const suiteTTL = 300 * time.Millisecond

// suiteClock is the clock a backend's TTLs follow, which says how the
// suite's expiry tests let time pass.
type suiteClock int

const (
	// realClock: the TTLs follow a server's clock (Redis), which a test
	// can only wait for. Expiry tests poll until the key has expired.
	realClock suiteClock = iota
	// fakeClock: the TTLs follow the time package (Memory). Expiry tests
	// run in a testing/synctest bubble, where time passes only when every
	// goroutine of the test waits, at once and exactly.
	fakeClock
)

// run runs f, a test that lets TTLs pass and makes its stores itself, in
// a synctest bubble on the fake clock (a store made in the bubble, its
// janitor included, lives on the bubble's clock), as is on the real one.
// f must not call t.Run or t.Parallel.
func (c suiteClock) run(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	if c == fakeClock {
		synctest.Test(t, f)
		return
	}
	f(t)
}

// pass lets d go by between two calls of a test: the delay is the
// scenario under test (a client that comes back after d), not a way to
// wait for something. In a synctest bubble it takes no real time.
func pass(d time.Duration) {
	time.Sleep(d) // the behaviour under test: time passes between two calls
}

// runStoreSuite checks every point of the [Store] contract against the
// stores newStore makes, whose TTLs follow clock. It is the one
// conformance suite of the package, organised by the interfaces of
// [Store]: suite_sessions_test.go, suite_subscribers_test.go and
// suite_ttl_test.go (Sessions), suite_claims_test.go (Claims),
// suite_events_test.go, suite_events_seq_test.go,
// suite_once_append_test.go and suite_streams_test.go (EventLog),
// suite_once_test.go (OnceSet), suite_records_test.go (Records), and the
// whole store here.
func runStoreSuite(t *testing.T, newStore storeFactory, clock suiteClock) {
	plain := func(f func(*testing.T, storeFactory)) func(*testing.T) {
		return func(t *testing.T) { f(t, newStore) }
	}
	timed := func(f func(*testing.T, storeFactory, suiteClock)) func(*testing.T) {
		return func(t *testing.T) { f(t, newStore, clock) }
	}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		// Sessions.
		{"CreateGetRoundTrip", plain(testCreateGetRoundTrip)},
		{"MinimalSession", plain(testMinimalSession)},
		{"GetReturnsCopy", plain(testGetReturnsCopy)},
		{"CreateExisting", plain(testCreateExisting)},
		{"CreateInvalid", plain(testCreateInvalid)},
		{"ConcurrentCreate", plain(testConcurrentCreate)},
		{"UnknownSession", plain(testUnknownSession)},
		{"ErrorsTruncateID", plain(testErrorsTruncateID)},
		{"Update", plain(testUpdate)},
		{"SlidingTTL", timed(testSlidingTTL)},
		{"ReadsDoNotSlideTTL", timed(testReadsDoNotSlideTTL)},
		{"ExpiredSessionIsGone", timed(testExpiredSessionIsGone)},
		{"NeverRecreateAfterDelete", plain(testNeverRecreateAfterDelete)},
		{"DeleteRemovesEverything", plain(testDeleteRemovesEverything)},
		{"Subscriptions", plain(testSubscriptions)},
		{"Subscribers", plain(testSubscribers)},
		// EventLog.
		{"EventIndices", plain(testEventIndices)},
		{"EventsAfter", plain(testEventsAfter)},
		{"Trimming", plain(testTrimming)},
		{"EventsAreCopies", plain(testEventsAreCopies)},
		{"ConcurrentAppends", plain(testConcurrentAppends)},
		{"StreamsBounded", plain(testStreamsBounded)},
		{"EndStream", timed(testEndStream)},
		{"EndStreamAtOnce", plain(testEndStreamAtOnce)},
		{"AppendSeq", plain(testAppendSeq)},
		{"ConcurrentAppendSeq", plain(testConcurrentAppendSeq)},
		{"AppendSeqStreams", plain(testAppendSeqStreams)},
		{"AppendOnce", plain(testAppendOnce)},
		{"AppendOnceArgs", plain(testAppendOnceArgs)},
		{"AppendOnceSubscribed", plain(testAppendOnceSubscribed)},
		{"AppendOnceBatch", plain(testAppendOnceBatch)},
		{"AppendOnceForgets", plain(testAppendOnceForgets)},
		{"AppendOnceEnded", timed(testAppendOnceEnded)},
		// Claims.
		{"BeginIsGet", plain(testBeginIsGet)},
		{"BeginInFlight", plain(testBeginInFlight)},
		{"EndReleases", plain(testEndReleases)},
		{"ClaimExpires", timed(testClaimExpires)},
		{"DeleteReleasesClaims", plain(testDeleteReleasesClaims)},
		{"ConcurrentBegin", plain(testConcurrentBegin)},
		{"OddRequestIDs", plain(testOddRequestIDs)},
		{"BeginInvalidTTL", plain(testBeginInvalidTTL)},
		// OnceSet.
		{"UseOnce", timed(testUseOnce)},
		// Records.
		{"Records", plain(testRecords)},
		{"RecordExpiry", timed(testRecordExpiry)},
		{"RecordCAS", plain(testRecordCAS)},
		// The whole store.
		{"CanceledContext", plain(testCanceledContext)},
		{"Ping", plain(testPing)},
		{"CloseIdempotent", plain(testCloseIdempotent)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
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

// eventually polls cond until it returns nil, failing the test with
// cond's last error after testutil.DefaultHangGuard (a bound that only
// catches a hang: the TTLs under test are far shorter).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	var err error
	if !testutil.WaitFor(testutil.DefaultHangGuard, func() bool { err = cond(); return err == nil }) {
		t.Fatalf("%s: still not true after %v: %v", what, testutil.DefaultHangGuard, err)
	}
}

// clockTick waits until the clock has moved to a later millisecond than
// since, the precision of the stores' times, so that a time the store
// records next differs from since.
func clockTick(t *testing.T, since time.Time) {
	t.Helper()
	testutil.Poll(t, "the clock to pass "+since.Format(time.StampMilli), func() bool {
		return time.Now().UnixMilli() > since.UnixMilli()
	})
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
	eventually(t, "session expires", func() error {
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
