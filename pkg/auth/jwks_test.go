package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
)

// hangGuard bounds a wait that only a hang would exceed.
const hangGuard = 10 * time.Second

// jwksServer is a real HTTP server on loopback serving a JWKS. Once
// stall is called, each fetch blocks until the release it returned is
// called (or the client gives up).
type jwksServer struct {
	*httptest.Server
	set       atomic.Pointer[jose.JSONWebKeySet]
	header    atomic.Pointer[http.Header] // extra response headers
	fetches   atomic.Int32                // requests received
	cancelled atomic.Int32                // stalled requests whose client gave up

	mu   sync.Mutex
	gate chan struct{} // nil: no stall
}

func newJWKSServer(t *testing.T, tls bool, keys ...*signer) *jwksServer {
	s := &jwksServer{}
	s.publish(keys...)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		gate := s.gate
		s.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				s.cancelled.Add(1)
				return
			}
		}
		if h := s.header.Load(); h != nil {
			for k, vs := range *h {
				w.Header()[k] = vs
			}
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_ = json.NewEncoder(w).Encode(s.set.Load())
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) publish(keys ...*signer) {
	set := &jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.public())
	}
	s.set.Store(set)
}

// stall makes the fetches from now on block until release is called
// (release is idempotent, and called at the test's end in any case).
func (s *jwksServer) stall(t *testing.T) (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	release = sync.OnceFunc(func() {
		s.mu.Lock()
		s.gate = nil
		s.mu.Unlock()
		close(gate)
	})
	t.Cleanup(release) // before s.Close, which waits for the handlers
	return release
}

func newVerifier(t *testing.T, o auth.Options) *auth.Verifier {
	t.Helper()
	o.Issuer, o.Audience = issuer, audience
	v, err := auth.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := v.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return v
}

// verifyWithin is v.Verify(ctx, tok), failing the test if it has not
// returned within guard (a hang guard: it should return at once).
func verifyWithin(t *testing.T, ctx context.Context, v *auth.Verifier, tok string, guard time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, tok)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(guard):
		t.Fatalf("Verify has not returned after %v", guard)
		return nil
	}
}

// A token signed by a known key verifies at once while the JWKS refresh
// (due: the set is stale) stalls, and the stale set does not start a
// second fetch while one is in flight.
func TestJWKSKnownKeysVerifyWhileFetchStalls(t *testing.T) {
	k1 := newRSA(t, "k1")
	srv := newJWKSServer(t, false, k1)
	v := newVerifier(t, auth.Options{JWKSURL: srv.URL, AllowInsecureJWKS: true, Refresh: time.Millisecond, MinRefresh: time.Millisecond})
	release := srv.stall(t)
	known := k1.token(t, claims(nil))
	// The set is stale after 1 ms: a Verify starts the refresh, which
	// stalls; every Verify meanwhile returns at once.
	testutil.PollFor(t, hangGuard, "a refresh of the stale set", func() bool {
		if err := verifyWithin(t, t.Context(), v, known, hangGuard); err != nil {
			t.Fatalf("a known key while the set is stale: %v", err)
		}
		return srv.fetches.Load() == 2
	})
	for range 20 {
		if err := verifyWithin(t, t.Context(), v, known, hangGuard); err != nil {
			t.Fatalf("a known key while the fetch stalls: %v", err)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (New, then one refresh in flight)", n)
	}
	release()
}

// Concurrent tokens with an unknown key id share one fetch: each waits
// for it, bounded by its own context (a caller that gives up does not
// end the fetch for the others), and a known key verifies meanwhile.
func TestJWKSUnknownKeysShareOneFetch(t *testing.T) {
	k1, k2 := newRSA(t, "k1"), newRSA(t, "k2")
	srv := newJWKSServer(t, false, k1)
	v := newVerifier(t, auth.Options{JWKSURL: srv.URL, AllowInsecureJWKS: true, MinRefresh: time.Minute})
	srv.publish(k1, k2) // the rotation: k2 appears
	release := srv.stall(t)
	rotated := k2.token(t, claims(nil))

	// An impatient caller starts the fetch and gives up at its deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := verifyWithin(t, ctx, v, rotated, hangGuard)
	if !errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller whose context ends while the fetch stalls: %v, want ErrInvalidToken and DeadlineExceeded", err)
	}
	testutil.PollFor(t, hangGuard, "the fetch", func() bool { return srv.fetches.Load() == 2 })

	const n = 32
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := v.Verify(t.Context(), rotated)
			errs <- err
		}()
	}
	if err := verifyWithin(t, t.Context(), v, k1.token(t, claims(nil)), hangGuard); err != nil {
		t.Fatalf("a known key while unknown ones wait: %v", err)
	}
	release()
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("a token of the rotated key: %v", err)
			}
		case <-time.After(hangGuard):
			t.Fatal("the callers waiting for the fetch have not returned")
		}
	}
	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("%d fetches for %d+1 tokens of an unknown key: want 2 (New and one)", got, n)
	}
	if got := srv.cancelled.Load(); got != 0 {
		t.Errorf("%d fetches cancelled: the impatient caller's context ended the shared fetch", got)
	}
}

// FetchTimeout ends a stalled fetch: New's, and a refresh's, which then
// frees the slot for the next one.
func TestJWKSFetchTimeout(t *testing.T) {
	k1, k2 := newRSA(t, "k1"), newRSA(t, "k2")
	srv := newJWKSServer(t, false, k1)
	release := srv.stall(t)
	o := auth.Options{Issuer: issuer, Audience: audience, JWKSURL: srv.URL, AllowInsecureJWKS: true, FetchTimeout: 200 * time.Millisecond, MinRefresh: time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := auth.New(t.Context(), o)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("New against a stalled JWKS: %v, want DeadlineExceeded", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("New against a stalled JWKS has not returned")
	}
	testutil.PollFor(t, hangGuard, "New's stalled request to be cancelled", func() bool { return srv.cancelled.Load() == 1 })
	release()

	v := newVerifier(t, o)
	srv.publish(k1, k2)
	release = srv.stall(t)
	n := srv.fetches.Load()
	// No deadline of its own: the fetch's timeout ends the wait.
	err := verifyWithin(t, t.Context(), v, k2.token(t, claims(nil)), hangGuard)
	if !errors.Is(err, auth.ErrInvalidToken) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an unknown key while the fetch stalls past FetchTimeout: %v, want ErrInvalidToken (the old set)", err)
	}
	testutil.PollFor(t, hangGuard, "the stalled request to be cancelled", func() bool { return srv.cancelled.Load() == 2 })
	release()
	testutil.PollFor(t, hangGuard, "the rotated key after the next fetch", func() bool {
		return verifyWithin(t, t.Context(), v, k2.token(t, claims(nil)), hangGuard) == nil
	})
	if got := srv.fetches.Load() - n; got < 2 {
		t.Errorf("%d fetches after the timed-out one, want a new one", got-1)
	}
}

// Close cancels the fetch in flight and its waiters return; afterwards
// the known keys still verify, and an unknown one is refused at once
// without a fetch.
func TestJWKSClose(t *testing.T) {
	k1 := newRSA(t, "k1")
	srv := newJWKSServer(t, false, k1)
	v, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSURL: srv.URL, AllowInsecureJWKS: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.stall(t)
	waiting := make(chan error, 1)
	go func() {
		_, err := v.Verify(t.Context(), newRSA(t, "k9").token(t, claims(nil)))
		waiting <- err
	}()
	testutil.PollFor(t, hangGuard, "the fetch", func() bool { return srv.fetches.Load() == 2 })
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	if err := v.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("a waiter after Close: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("a waiter of the fetch has not returned after Close")
	}
	testutil.PollFor(t, hangGuard, "the request cancelled", func() bool { return srv.cancelled.Load() == 1 })
	if err := verifyWithin(t, t.Context(), v, k1.token(t, claims(nil)), hangGuard); err != nil {
		t.Errorf("a known key after Close: %v", err)
	}
	if err := verifyWithin(t, t.Context(), v, newRSA(t, "k8").token(t, claims(nil)), hangGuard); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("an unknown key after Close: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want none after Close", n)
	}
}

// https is required: an http JWKS URL is refused (loopback too) unless
// AllowInsecureJWKS, and so is a redirect from https to http.
func TestJWKSRequiresHTTPS(t *testing.T) {
	k1 := newRSA(t, "k1")
	plain := newJWKSServer(t, false, k1)
	o := auth.Options{Issuer: issuer, Audience: audience, JWKSURL: plain.URL}
	if _, err := auth.New(t.Context(), o); !errors.Is(err, auth.ErrInvalidOptions) {
		t.Fatalf("an http JWKS URL: %v, want ErrInvalidOptions", err)
	}
	if n := plain.fetches.Load(); n != 0 {
		t.Fatalf("an http JWKS URL refused after %d fetches", n)
	}
	o.AllowInsecureJWKS = true
	newVerifier(t, o)

	tls := newJWKSServer(t, true, k1)
	newVerifier(t, auth.Options{JWKSURL: tls.URL, HTTPClient: tls.Client()})

	redirect := httptest.NewTLSServer(http.RedirectHandler(plain.URL, http.StatusFound))
	defer redirect.Close()
	n := plain.fetches.Load()
	_, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSURL: redirect.URL, HTTPClient: redirect.Client()})
	if err == nil || plain.fetches.Load() != n {
		t.Fatalf("an https JWKS redirecting to http: %v, %d fetches over http", err, plain.fetches.Load()-n)
	}
}

// The verifier runs on synctest's fake clock against a real server
// started outside the bubble, over a client of the bubble's own (no kept
// connections, whose goroutines would wait on the network).
func bubbleClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// A rotated key becomes valid at the next allowed refresh: unknown key
// ids start at most one fetch per MinRefresh.
func TestJWKSRotatedKeyAfterMinRefresh(t *testing.T) {
	k1, k2 := newRSA(t, "k1"), newRSA(t, "k2")
	srv := newJWKSServer(t, false, k1)
	synctest.Test(t, func(t *testing.T) {
		v := newVerifier(t, auth.Options{JWKSURL: srv.URL, AllowInsecureJWKS: true, HTTPClient: bubbleClient(), MinRefresh: 10 * time.Second})
		if _, err := v.Verify(t.Context(), k2.token(t, claims(nil))); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("a key not published yet: %v", err)
		}
		if n := srv.fetches.Load(); n != 2 {
			t.Fatalf("%d fetches, want 2: New, then one for the unknown key", n)
		}
		srv.publish(k1, k2)
		for range 20 {
			if _, err := v.Verify(t.Context(), k2.token(t, claims(nil))); !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("within MinRefresh of the last fetch: %v, want refused", err)
			}
		}
		if n := srv.fetches.Load(); n != 2 {
			t.Fatalf("20 tokens of an unknown key within MinRefresh made %d fetches", n-2)
		}
		time.Sleep(10 * time.Second) // the behaviour under test: MinRefresh passes (fake clock)
		if _, err := v.Verify(t.Context(), k2.token(t, claims(nil))); err != nil {
			t.Fatalf("after MinRefresh: %v", err)
		}
		if n := srv.fetches.Load(); n != 3 {
			t.Fatalf("%d fetches, want 3", n)
		}
	})
}

// The JWKS response's Cache-Control max-age (less Age) or Expires (less
// Date) schedules the next refresh, within [MinRefresh, Refresh].
func TestJWKSCacheControl(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none: Refresh", nil, 5 * time.Minute},
		{"max-age", http.Header{"Cache-Control": {"public, max-age=60"}}, time.Minute},
		{"max-age less Age", http.Header{"Cache-Control": {"max-age=100"}, "Age": {"40"}}, time.Minute},
		{"max-age above Refresh", http.Header{"Cache-Control": {"max-age=86400"}}, 5 * time.Minute},
		{"max-age below MinRefresh", http.Header{"Cache-Control": {"max-age=1"}}, 10 * time.Second},
		{"no-cache", http.Header{"Cache-Control": {"no-cache"}}, 10 * time.Second},
		{"Expires less Date", http.Header{"Date": {date.Format(http.TimeFormat)}, "Expires": {date.Add(2 * time.Minute).Format(http.TimeFormat)}}, 2 * time.Minute},
		{"max-age over Expires", http.Header{"Cache-Control": {"max-age=30"}, "Date": {date.Format(http.TimeFormat)}, "Expires": {date.Add(2 * time.Minute).Format(http.TimeFormat)}}, 30 * time.Second},
		{"invalid Expires", http.Header{"Expires": {"0"}}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k1 := newRSA(t, "k1")
			srv := newJWKSServer(t, false, k1)
			srv.header.Store(&tc.header)
			known := k1.token(t, claims(map[string]any{"exp": time.Now().Add(24 * time.Hour).Unix()}))
			synctest.Test(t, func(t *testing.T) {
				v := newVerifier(t, auth.Options{JWKSURL: srv.URL, AllowInsecureJWKS: true, HTTPClient: bubbleClient(), Leeway: -1})
				verify := func() {
					t.Helper()
					if _, err := v.Verify(t.Context(), known); err != nil {
						t.Fatal(err)
					}
					synctest.Wait() // a refresh it started has ended
				}
				time.Sleep(tc.want - time.Second) // the behaviour under test: time passes (fake clock)
				verify()
				if n := srv.fetches.Load(); n != 1 {
					t.Fatalf("refreshed before %v", tc.want)
				}
				time.Sleep(2 * time.Second)
				verify()
				if n := srv.fetches.Load(); n != 2 {
					t.Fatalf("not refreshed after %v (%d fetches)", tc.want, n)
				}
			})
		})
	}
}
