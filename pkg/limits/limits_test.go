package limits

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

func newStore(t *testing.T) *sessionstore.Memory {
	t.Helper()
	st, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

func newLimiter(t *testing.T, opts Options) *Limiter {
	t.Helper()
	if opts.Store == nil {
		opts.Store = newStore(t)
	}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewValidates(t *testing.T) {
	st := newStore(t)
	for name, o := range map[string]Options{
		"no store":     {},
		"negative ttl": {Store: st, SessionTTL: -time.Second},
		"NaN rate":     {Store: st, RatePerPrincipal: math.NaN()},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions", name, err)
		}
	}
}

func TestDefaultsAndOff(t *testing.T) {
	l := newLimiter(t, Options{})
	if l.maxString != 2<<20 || l.maxArray != 10000 || l.maxPerSession != 64 || l.maxPerPrinc != 256 ||
		l.rate != 50 || l.burst != 100 || l.maxSessions != 100 || l.maxSubsPerSess != 1000 || l.sessionTTL != 30*time.Minute {
		t.Fatalf("defaults: %+v", l)
	}
	if l.MaxStringBytes() != 2<<20 {
		t.Fatalf("MaxStringBytes() = %d", l.MaxStringBytes())
	}
	off := newLimiter(t, Options{MaxStringBytes: -1, MaxArrayLen: -1, MaxInFlightPerSession: -1, MaxInFlightPerPrincipal: -1,
		RatePerPrincipal: -1, RateBurst: -1, MaxSessionsPerPrincipal: -1, MaxSubscriptionsPerSession: -1})
	if off.maxString != 0 || off.maxArray != 0 || off.maxPerSession != 0 || off.maxPerPrinc != 0 ||
		off.rate != 0 || off.burst != 0 || off.maxSessions != 0 || off.maxSubsPerSess != 0 {
		t.Fatalf("negative is off: %+v", off)
	}
	set := newLimiter(t, Options{MaxInFlightPerSession: 3, RatePerPrincipal: 2.5, SessionTTL: time.Minute})
	if set.maxPerSession != 3 || set.rate != 2.5 || set.sessionTTL != time.Minute {
		t.Fatalf("values given: %+v", set)
	}
}

func TestLimiterAllow(t *testing.T) {
	l := newLimiter(t, Options{RatePerPrincipal: 1, RateBurst: 3})
	now := time.Now()
	for i := range 3 {
		if ok, _ := l.Allow("p", now); !ok {
			t.Fatalf("request %d of a burst of 3 refused", i+1)
		}
	}
	ok, wait := l.Allow("p", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("the 4th of a burst of 3 at 1/s: ok=%v, retry after %s", ok, wait)
	}
	if ok, _ := l.Allow("p", now.Add(time.Second)); !ok {
		t.Fatal("a request a second later was refused")
	}
	if ok, _ := l.Allow("other", now); !ok {
		t.Fatal("another principal shares the bucket")
	}
	for range 100 {
		if ok, _ := l.Allow("", now); !ok {
			t.Fatal("a request without a principal was limited")
		}
	}
	// A negative rate or burst turns the limit off.
	for _, o := range []Options{{RatePerPrincipal: 1, RateBurst: -1}, {RatePerPrincipal: -1, RateBurst: 3}} {
		off := newLimiter(t, o)
		for range 100 {
			if ok, _ := off.Allow("q", now); !ok {
				t.Fatalf("%+v refused a request", o)
			}
		}
	}
}

func TestLimiterSweep(t *testing.T) {
	l := newLimiter(t, Options{RatePerPrincipal: 1, RateBurst: 1})
	now := time.Now()
	l.Allow("idle", now)
	l.Allow("busy", now.Add(90*time.Second))
	l.Allow("busy", now.Add(2*time.Minute)) // the sweep: "idle" has been idle 2 min
	if _, ok := l.buckets["idle"]; ok || len(l.buckets) != 1 {
		t.Fatalf("buckets after the sweep: %v", l.buckets)
	}
}

func TestLimiterInFlight(t *testing.T) {
	l := newLimiter(t, Options{MaxInFlightPerSession: 2, MaxInFlightPerPrincipal: 3})
	var held []Held
	for range 2 {
		h, r := l.Acquire("s", "p")
		if r != Admitted {
			t.Fatalf("a slot of 2 refused: %v", r)
		}
		held = append(held, h)
	}
	if _, r := l.Acquire("s", "p"); r != SessionFull {
		t.Fatalf("a third slot of the session: %v, want SessionFull", r)
	}
	h, r := l.Acquire("s2", "p")
	if r != Admitted {
		t.Fatalf("another session's slot: %v", r)
	}
	held = append(held, h)
	if _, r := l.Acquire("s3", "p"); r != PrincipalFull {
		t.Fatalf("a fourth slot of the principal: %v, want PrincipalFull", r)
	}
	if l.inflight[key{id: "s3"}] != 0 {
		t.Fatal("a refusal by the principal's cap kept the session's slot")
	}
	held[0].Release()
	held[0].Release() // a second release is a no-op
	if h, r := l.Acquire("s", "p"); r != Admitted {
		t.Fatal("a released slot was not reusable")
	} else {
		held[0] = h
	}
	for i := range held {
		held[i].Release()
	}
	if len(l.inflight) != 0 {
		t.Fatalf("counters left after every release: %v", l.inflight)
	}
	var zero Held
	zero.Release() // the zero value holds nothing
	// No session or principal, or a cap off, does not limit.
	free := newLimiter(t, Options{MaxInFlightPerSession: -1, MaxInFlightPerPrincipal: 1})
	for range 10 {
		if _, r := free.Acquire("s", ""); r != Admitted {
			t.Fatal("no principal and no session cap must not limit")
		}
	}
}

func TestLimiterInFlightConcurrent(t *testing.T) {
	l := newLimiter(t, Options{MaxInFlightPerSession: 5})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if h, r := l.Acquire("s", "p"); r == Admitted {
				h.Release()
			}
		})
	}
	wg.Wait()
	if len(l.inflight) != 0 {
		t.Fatalf("counters left: %v", l.inflight)
	}
}

func TestAnswers(t *testing.T) {
	l := newLimiter(t, Options{MaxInFlightPerSession: 1, RatePerPrincipal: 1, RateBurst: 1})
	rec := httptest.NewRecorder()
	if l.RateLimited(rec, "p") {
		t.Fatal("the first request was rate limited")
	}
	rec = httptest.NewRecorder()
	if !l.RateLimited(rec, "p") {
		t.Fatal("the second request of a burst of 1 was not limited")
	}
	checkTooMany(t, rec, "1", "the rate limit of this principal")

	h, ok := l.Admit(httptest.NewRecorder(), protocol.Int64ID(1), "s", "")
	if !ok {
		t.Fatal("Admit refused the first request")
	}
	defer h.Release()
	rec = httptest.NewRecorder()
	if _, ok := l.Admit(rec, protocol.Int64ID(2), "s", ""); ok {
		t.Fatal("Admit granted a second slot of 1")
	}
	checkTooMany(t, rec, "1", "too many requests in flight in this session")
	if !strings.Contains(rec.Body.String(), `"id":2`) {
		t.Fatalf("the refusal does not echo the id: %s", rec.Body)
	}

	rec = httptest.NewRecorder()
	WriteTooMany(rec, protocol.ID{}, 1500*time.Millisecond, "m")
	checkTooMany(t, rec, "2", "m") // rounded up
	rec = httptest.NewRecorder()
	WriteTooMany(rec, protocol.ID{}, 0, "m")
	checkTooMany(t, rec, "1", "m") // at least 1
}

func TestSessionNotCreated(t *testing.T) {
	l := newLimiter(t, Options{})
	rec := httptest.NewRecorder()
	l.WriteSessionNotCreated(rec, protocol.Int64ID(1), ErrTooManySessions)
	checkTooMany(t, rec, "60", "the most sessions allowed")
	rec = httptest.NewRecorder()
	l.WriteSessionNotCreated(rec, protocol.Int64ID(1), sessionstore.ErrFull)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "60" || !strings.Contains(rec.Body.String(), "the most sessions it may") {
		t.Fatalf("a full store: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = httptest.NewRecorder()
	l.WriteSessionNotCreated(rec, protocol.Int64ID(1), errors.New("boom"))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" || !strings.Contains(rec.Body.String(), "could not create the session") {
		t.Fatalf("a store error: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if !IsCapacity(ErrTooManySessions) || !IsCapacity(sessionstore.ErrFull) || IsCapacity(errors.New("x")) {
		t.Fatal("IsCapacity")
	}
}

func checkTooMany(t *testing.T, rec *httptest.ResponseRecorder, retryAfter, msg string) {
	t.Helper()
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != retryAfter || !strings.Contains(rec.Body.String(), msg) {
		t.Fatalf("got %d Retry-After %q %s; want 429 Retry-After %q with %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body, retryAfter, msg)
	}
}

// TestLimiterFrontendInFlight: the frontend-wide cap counts every request,
// without session or principal too, and refuses with a 503 a client or
// proxy may retry.
func TestLimiterFrontendInFlight(t *testing.T) {
	l := newLimiter(t, Options{MaxInFlight: 3})
	var held []Held
	for _, s := range []string{"", "s1", ""} {
		h, r := l.Acquire(s, "")
		if r != Admitted {
			t.Fatalf("slot refused below the cap: %v", r)
		}
		held = append(held, h)
	}
	rec := httptest.NewRecorder()
	if _, ok := l.Admit(rec, protocol.Int64ID(9), "", ""); ok {
		t.Fatal("a fourth request without session or principal was admitted")
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"id":9`) {
		t.Fatalf("refusal: %d %v %s; want 503 with Retry-After: 1 for id 9", rec.Code, rec.Header(), rec.Body)
	}
	if _, r := l.Acquire("s2", "p"); r != FrontendFull {
		t.Fatalf("at the frontend's cap: %v, want FrontendFull", r)
	}
	if len(l.inflight) != 1 { // s1 only: the refusals kept nothing
		t.Fatalf("counters after refusals: %v", l.inflight)
	}
	held[0].Release()
	if h, r := l.Acquire("", ""); r != Admitted {
		t.Fatal("a released frontend slot was not reusable")
	} else {
		held[0] = h
	}
	for i := range held {
		held[i].Release()
	}
	if n := l.InFlight(); n != 0 {
		t.Fatalf("%d in flight after every release", n)
	}
	off := newLimiter(t, Options{MaxInFlight: -1})
	for range 5000 {
		if _, r := off.Acquire("", ""); r != Admitted {
			t.Fatal("the cap off must not limit")
		}
	}
}
