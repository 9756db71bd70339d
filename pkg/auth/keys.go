package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

// The key set's life, under Verifier.mu:
//
//   - Verify reads the current set under the lock and never waits for a
//     fetch to use it: a token signed by a known key verifies at once,
//     whatever a fetch is doing.
//   - A fetch runs in a goroutine of the Verifier's, outside the lock, on
//     a context of its own (FetchTimeout, cancelled by Close), never a
//     request's. At most one is in flight (fetchCall); whoever needs its
//     result waits on its done channel, bounded by their own context.
//   - A stale set (its next refresh due: the response's max-age or
//     Expires, within [MinRefresh, Refresh]) starts a fetch in the
//     background at the next Verify, which goes on with the stale set.
//   - A token with an unknown key id waits for the fetch in flight, or
//     starts one if none has been started by an unknown key id for
//     MinRefresh; otherwise it is refused at once.
//   - A failed fetch keeps the old set; the next is due after MinRefresh.

// fetchCall is a fetch of the key set in flight.
type fetchCall struct {
	done   chan struct{} // closed once the set is stored (or the fetch failed)
	cancel context.CancelFunc
}

// current returns the key set, starting a background refresh when it is
// stale. It never waits for a fetch.
func (v *Verifier) current() *jose.JSONWebKeySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.call == nil && !time.Now().Before(v.next) {
		v.startLocked()
	}
	return v.keys
}

// refreshed returns the key set after a fetch: the one in flight, or one
// it starts when no unknown key id has started one for MinRefresh.
// Rate limited (or closed), it returns the current set at once. It waits
// at most until ctx is done, then returns ctx's error; the fetch goes on.
func (v *Verifier) refreshed(ctx context.Context) (*jose.JSONWebKeySet, error) {
	v.mu.Lock()
	c := v.call
	if c == nil {
		now := time.Now()
		if v.closed || (!v.lastForce.IsZero() && now.Sub(v.lastForce) < v.opts.MinRefresh) {
			keys := v.keys
			v.mu.Unlock()
			return keys, nil
		}
		v.lastForce = now
		c = v.startLocked()
	}
	v.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.keys, nil
}

// startLocked starts a fetch (none is in flight; v.mu is held) and
// returns it; nil once the Verifier is closed.
func (v *Verifier) startLocked() *fetchCall {
	if v.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.opts.FetchTimeout)
	c := &fetchCall{done: make(chan struct{}), cancel: cancel}
	v.call = c
	v.wg.Add(1)
	go v.run(ctx, c)
	return c
}

// run is the fetch goroutine: it loads the set and stores it with its
// next refresh (or keeps the old one after a failure).
func (v *Verifier) run(ctx context.Context, c *fetchCall) {
	defer v.wg.Done()
	defer c.cancel()
	keys, ttl, err := v.load(ctx)
	now := time.Now()
	v.mu.Lock()
	if err != nil {
		v.next = now.Add(v.opts.MinRefresh)
	} else {
		v.keys, v.next = keys, now.Add(ttl)
	}
	v.call = nil
	v.mu.Unlock()
	close(c.done)
	if err != nil {
		v.log.Warn("auth: refreshing the JWKS failed; keeping the old keys", "err", err, "retry_in", v.opts.MinRefresh)
	} else {
		v.log.Debug("auth: JWKS refreshed", "keys", len(keys.Keys), "next_in", ttl)
	}
}

// Close stops the Verifier's fetching: a fetch in flight is cancelled
// and none starts any more; Verify goes on with the keys it has. It
// waits for the fetch goroutine to end, or until ctx is done (ctx.Err()).
// Close is idempotent. A Verifier never closed keeps nothing running
// between fetches: its fetch goroutine lives at most FetchTimeout.
func (v *Verifier) Close(ctx context.Context) error {
	v.mu.Lock()
	v.closed = true
	if v.call != nil {
		v.call.cancel()
	}
	v.mu.Unlock()
	done := make(chan struct{})
	go func() { v.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// load reads the JWKS (file or URL) and returns it with how long it is
// fresh: Refresh for a file, the response's cache headers bounded by
// [MinRefresh, Refresh] for a URL.
func (v *Verifier) load(ctx context.Context) (*jose.JSONWebKeySet, time.Duration, error) {
	var (
		b   []byte
		err error
		ttl = v.opts.Refresh
	)
	if v.opts.JWKSFile != "" {
		b, err = os.ReadFile(v.opts.JWKSFile)
	} else {
		var h http.Header
		b, h, err = v.fetch(ctx)
		if d, ok := freshness(h, time.Now()); ok {
			ttl = min(ttl, d)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("auth: loading the JWKS: %w", err)
	}
	ttl = max(ttl, v.opts.MinRefresh)
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, 0, fmt.Errorf("auth: malformed JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, 0, errors.New("auth: the JWKS has no keys")
	}
	return &set, ttl, nil
}

func (v *Verifier) fetch(ctx context.Context) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKSURL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: HTTP %d", v.opts.JWKSURL, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: reading the body: %w", v.opts.JWKSURL, err)
	}
	if len(b) > maxJWKSBytes {
		return nil, nil, fmt.Errorf("GET %s: the JWKS is larger than %d bytes", v.opts.JWKSURL, maxJWKSBytes)
	}
	return b, resp.Header, nil
}

// freshness is how long a response with headers h stays fresh (RFC
// 9111): no-store or no-cache, 0; else max-age less Age; else Expires
// less Date (or now), an invalid Expires being 0. ok is false when the
// headers say nothing.
func freshness(h http.Header, now time.Time) (d time.Duration, ok bool) {
	maxAge := int64(-1)
	for _, line := range h.Values("Cache-Control") {
		for _, dir := range strings.Split(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return 0, true
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if errors.Is(err, strconv.ErrRange) && n > 0 {
					n, err = math.MaxInt64, nil // too great to hold: the greatest (RFC 9111 1.2.2)
				}
				if err == nil && n >= 0 && maxAge < 0 {
					maxAge = n
				}
			}
		}
	}
	if maxAge >= 0 {
		if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 {
			maxAge -= age
		}
		return seconds(maxAge), true
	}
	if e := h.Get("Expires"); e != "" {
		exp, err := http.ParseTime(e)
		if err != nil {
			return 0, true // an invalid Expires means already expired
		}
		if date, err := http.ParseTime(h.Get("Date")); err == nil {
			now = date
		}
		return max(exp.Sub(now), 0), true
	}
	return 0, false
}

// seconds converts n seconds to a Duration, 0 below zero and saturating
// instead of overflowing.
func seconds(n int64) time.Duration {
	const most = int64(1<<63-1) / int64(time.Second)
	switch {
	case n <= 0:
		return 0
	case n > most:
		return time.Duration(most) * time.Second
	}
	return time.Duration(n) * time.Second
}
