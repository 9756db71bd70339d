package sessionstore

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The in-flight claims part of the conformance suite (Begin and End); the
// tests are registered in runStoreSuite.

// mustBegin claims requestID in session id and returns the session.
func mustBegin(t testing.TB, st Store, id, requestID, token string, ttl time.Duration) *Session {
	t.Helper()
	s, err := st.Begin(t.Context(), id, requestID, token, ttl)
	if err != nil {
		t.Fatalf("Begin(%.40q): %v", requestID, err)
	}
	if s == nil || s.ID != id {
		t.Fatalf("Begin(%.40q) returned session %+v, want id %q", requestID, s, id)
	}
	return s
}

// checkInFlight checks that requestID is claimed in session id: a Begin
// with a new token fails with ErrInFlight and still returns the session.
func checkInFlight(t testing.TB, st Store, id, requestID string) {
	t.Helper()
	token := NewID()
	s, err := st.Begin(t.Context(), id, requestID, token, time.Hour)
	if !errors.Is(err, ErrInFlight) {
		if err == nil {
			// Do not leave the stray claim behind.
			_ = st.End(t.Context(), id, requestID, token)
		}
		t.Fatalf("Begin(%.40q) error = %v, want ErrInFlight", requestID, err)
	}
	if s == nil || s.ID != id {
		t.Fatalf("Begin(%.40q) with ErrInFlight returned session %+v, want the session %q", requestID, s, id)
	}
}

// checkFree checks that requestID is not claimed in session id, by
// claiming it for a moment.
func checkFree(t testing.TB, st Store, id, requestID string) {
	t.Helper()
	token := NewID()
	mustBegin(t, st, id, requestID, token, time.Hour)
	if err := st.End(t.Context(), id, requestID, token); err != nil {
		t.Fatalf("End(%.40q): %v", requestID, err)
	}
}

func testBeginIsGet(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	in := fullSession()
	mustCreate(t, st, in)

	clockTick(t, in.CreatedAt) // so that LastSeen moves
	before := time.Now()
	got := mustBegin(t, st, in.ID, "1", "token", time.Hour)
	after := time.Now()
	checkMilliUTC(t, "LastSeen", got.LastSeen, before, after)

	want := *fullSession()
	want.ID, want.CreatedAt, want.LastSeen = in.ID, in.CreatedAt, got.LastSeen
	if d := diff(&want, got); d != "" {
		t.Errorf("Begin after Create mismatch:\n%s", d)
	}
	viaGet, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	viaGet.LastSeen = got.LastSeen
	if d := diff(viaGet, got); d != "" {
		t.Errorf("Begin and Get disagree:\n%s", d)
	}

	// The returned session is a copy, like Get's.
	got.ClientInfo.Icons[0].Sizes[0] = "changed"
	got.Principal = "mallory"
	again, err := st.Get(t.Context(), in.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	again.LastSeen = viaGet.LastSeen
	if d := diff(viaGet, again); d != "" {
		t.Errorf("stored session changed through Begin's copy:\n%s", d)
	}
}

func testBeginInFlight(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s, other := fullSession(), fullSession()
	mustCreate(t, st, s)
	mustCreate(t, st, other)
	mustBegin(t, st, s.ID, "1", "a", time.Hour)

	// The same request id again: refused, with the session to answer in
	// its terms.
	clockTick(t, time.Now()) // so that LastSeen moves
	before := time.Now()
	got, err := st.Begin(t.Context(), s.ID, "1", "b", time.Hour)
	after := time.Now()
	if !errors.Is(err, ErrInFlight) {
		t.Fatalf("second Begin error = %v, want ErrInFlight", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Errorf("ErrInFlight error %v also matches ErrNotFound", err)
	}
	if msg := err.Error(); strings.Contains(msg, s.ID) || !strings.Contains(msg, s.ID[:8]) {
		t.Errorf("error %q: want the first 8 bytes of the id and not the whole id", msg)
	}
	if got == nil {
		t.Fatal("Begin with ErrInFlight returned a nil session")
	}
	checkMilliUTC(t, "LastSeen", got.LastSeen, before, after)
	want := *fullSession()
	want.ID, want.CreatedAt, want.LastSeen = s.ID, s.CreatedAt, got.LastSeen
	if d := diff(&want, got); d != "" {
		t.Errorf("session returned with ErrInFlight mismatch:\n%s", d)
	}
	// A claim is not re-entrant, even for its own token.
	checkInFlight(t, st, s.ID, "1")
	if _, err := st.Begin(t.Context(), s.ID, "1", "a", time.Hour); !errors.Is(err, ErrInFlight) {
		t.Errorf("Begin with the claim's own token: error = %v, want ErrInFlight", err)
	}

	// Other request ids, including the same id as a JSON string, and the
	// same request id in another session, are free.
	mustBegin(t, st, s.ID, `"1"`, "c", time.Hour)
	mustBegin(t, st, s.ID, "2", "d", time.Hour)
	mustBegin(t, st, other.ID, "1", "e", time.Hour)
	for _, rid := range []string{"1", `"1"`, "2"} {
		checkInFlight(t, st, s.ID, rid)
	}
	checkInFlight(t, st, other.ID, "1")
}

func testEndReleases(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s, other := &Session{ID: NewID()}, &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustCreate(t, st, other)
	ctx := t.Context()
	end := func(id, rid, token string) {
		t.Helper()
		if err := st.End(ctx, id, rid, token); err != nil {
			t.Fatalf("End(%q, %q): %v", rid, token, err)
		}
	}
	mustBegin(t, st, s.ID, "1", "a", time.Hour)

	// Ends that do not name this claim release nothing.
	end(s.ID, "1", "b")      // another token
	end(s.ID, "1", "")       // no token
	end(s.ID, "2", "a")      // another request id
	end(other.ID, "1", "a")  // another session
	end(s.ID, `"1"`, "a")    // the request id as a JSON string
	end(NewID(), "1", "a")   // no session
	end(s.ID, "never", "a")  // never claimed
	end(other.ID, "2", "zz") // never claimed, another session
	checkInFlight(t, st, s.ID, "1")

	// The claim's own End releases it, once.
	end(s.ID, "1", "a")
	mustBegin(t, st, s.ID, "1", "c", time.Hour)
	// The first request's End, late or repeated, does not release the
	// claim of the request that reused its id.
	end(s.ID, "1", "a")
	checkInFlight(t, st, s.ID, "1")
	end(s.ID, "1", "c")
	end(s.ID, "1", "c")
	checkFree(t, st, s.ID, "1")
}

func testClaimExpires(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) { checkClaimExpires(t, newStore) })
}

func checkClaimExpires(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustBegin(t, st, s.ID, "long", "l", time.Hour)
	mustBegin(t, st, s.ID, "1", "crashed", 50*time.Millisecond)

	// No End comes (the frontend crashed): the claim expires by itself.
	var token string
	eventually(t, "claim expires", func() error {
		tok := NewID()
		_, err := st.Begin(t.Context(), s.ID, "1", tok, time.Hour)
		switch {
		case err == nil:
			token = tok
			return nil
		case errors.Is(err, ErrInFlight):
			return err
		}
		t.Fatalf("Begin: %v", err)
		return nil
	})
	// The crashed request's End, if it ever comes, releases nothing.
	if err := st.End(t.Context(), s.ID, "1", "crashed"); err != nil {
		t.Fatal(err)
	}
	checkInFlight(t, st, s.ID, "1")
	checkInFlight(t, st, s.ID, "long")
	if err := st.End(t.Context(), s.ID, "1", token); err != nil {
		t.Fatal(err)
	}
	checkFree(t, st, s.ID, "1")
}

func testDeleteReleasesClaims(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s, other := &Session{ID: NewID()}, &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustCreate(t, st, other)
	rids := []string{"1", "2", `"x"`}
	for _, rid := range rids {
		mustBegin(t, st, s.ID, rid, "old", time.Hour)
	}
	mustBegin(t, st, other.ID, "1", "other", time.Hour)

	if err := st.Delete(t.Context(), s.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	// A deleted session cannot be begun; a late End is harmless.
	if got, err := st.Begin(t.Context(), s.ID, "3", "late", time.Hour); !errors.Is(err, ErrNotFound) || got != nil {
		t.Errorf("Begin after Delete = %v, %v; want nil, ErrNotFound", got, err)
	}
	if err := st.End(t.Context(), s.ID, "1", "old"); err != nil {
		t.Errorf("End after Delete: %v", err)
	}

	// A session re-created with the same id starts with no claims.
	mustCreate(t, st, &Session{ID: s.ID})
	for _, rid := range rids {
		mustBegin(t, st, s.ID, rid, "new", time.Hour)
	}
	// The other session keeps its claim.
	checkInFlight(t, st, other.ID, "1")
}

func testConcurrentBegin(t *testing.T, newStore storeFactory) {
	const n, rounds = 32, 3
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	ctx := t.Context()

	for round := range rounds {
		type result struct {
			token string
			s     *Session
			err   error
		}
		results := make(chan result, n)
		own := make(chan error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				token := fmt.Sprintf("r%d-g%d", round, i)
				got, err := st.Begin(ctx, s.ID, "same", token, time.Hour)
				results <- result{token, got, err}
				// Distinct request ids do not contend.
				mine := fmt.Sprintf("own-%d-%d", round, i)
				if _, err := st.Begin(ctx, s.ID, mine, token, time.Hour); err != nil {
					own <- fmt.Errorf("Begin(%s): %w", mine, err)
					return
				}
				if err := st.End(ctx, s.ID, mine, token); err != nil {
					own <- fmt.Errorf("End(%s): %w", mine, err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		close(own)
		for err := range own {
			t.Errorf("round %d: %v", round, err)
		}
		var winners []string
		for r := range results {
			switch {
			case r.err == nil:
				winners = append(winners, r.token)
			case !errors.Is(r.err, ErrInFlight):
				t.Errorf("round %d: Begin error = %v, want nil or ErrInFlight", round, r.err)
			}
			if r.s == nil || r.s.ID != s.ID {
				t.Errorf("round %d: Begin (error %v) returned session %+v, want %q", round, r.err, r.s, s.ID)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d of %d concurrent Begins of one request id succeeded (%q), want 1",
				round, len(winners), n, winners)
		}
		checkInFlight(t, st, s.ID, "same")
		if err := st.End(ctx, s.ID, "same", winners[0]); err != nil {
			t.Fatalf("round %d: End: %v", round, err)
		}
	}
}

func testOddRequestIDs(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	// JSON forms of JSON-RPC ids, and strings built to break a key: hash
	// tag braces, separators, other keys' suffixes, bytes that are not
	// text, and ids that differ only slightly.
	rids := []string{
		`"abc"`, `42`, `"42"`, `4.2e1`, `-1`, `null`, `""`, ``, ` `,
		`"a}b{c"`, `{`, `}`, `{}`, `}{`, `"x:y z"`, `:`, `::rec`, `}:rec`, `:rq`,
		`"ünïcödé ☃ 日本"`, "\x00", "\x00\xff\xfe", "a\r\nb", `"A"`, `"a"`,
		strings.Repeat("x", 64<<10), strings.Repeat("x", 64<<10) + "y",
	}
	for _, rid := range rids {
		mustBegin(t, st, s.ID, rid, "t:"+rid, time.Hour)
	}
	for _, rid := range rids {
		checkInFlight(t, st, s.ID, rid)
	}
	for i, rid := range rids {
		if i%2 == 0 {
			if err := st.End(t.Context(), s.ID, rid, "t:"+rid); err != nil {
				t.Fatalf("End(%.40q): %v", rid, err)
			}
		}
	}
	for i, rid := range rids {
		if i%2 == 0 {
			checkFree(t, st, s.ID, rid)
		} else {
			checkInFlight(t, st, s.ID, rid)
		}
	}
}

func testBeginInvalidTTL(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	for _, ttl := range []time.Duration{0, -time.Millisecond, -time.Hour} {
		got, err := st.Begin(t.Context(), s.ID, "1", "token", ttl)
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInFlight) || got != nil {
			t.Errorf("Begin with ttl %v = %v, %v; want nil and a plain error", ttl, got, err)
		}
	}
	// Nothing was claimed.
	checkFree(t, st, s.ID, "1")
	// A sub-millisecond ttl is valid (a backend may round it up).
	mustBegin(t, st, s.ID, "2", "token", time.Microsecond)
}
