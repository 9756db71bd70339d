// Package limits is the frontend's admission control: it decides whether
// a request may go on, and answers the refusal when it may not. It keeps
// the per-session and per-principal requests in flight on one frontend,
// a token bucket per principal, each principal's legacy session count
// (in the store, so the cap holds across frontends), the string and array
// caps of a message and the room for one more resource subscription.
package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// ErrInvalidOptions wraps every validation error of [New].
var ErrInvalidOptions = errors.New("limits: invalid options")

// Store is the part of the session store the limits use: versioned
// records (the session count of a principal) and a session's resource
// subscriptions.
type Store interface {
	sessionstore.Records
	// Subscriptions returns the session's subscribed URIs (as
	// [sessionstore.Sessions.Subscriptions]).
	Subscriptions(ctx context.Context, id string) ([]string, error)
}

// Options are the limit values. Each cap applies with its default when
// zero and is off when negative.
type Options struct {
	// Store keeps the principals' session counts and the sessions'
	// subscriptions.
	// default: none (required)
	Store Store
	// Logger receives the refusals worth an operator's attention (a full
	// session store).
	// default: slog.Default()
	Logger *slog.Logger
	// MaxStringBytes caps a string in a message: 400 beyond.
	// Negative: off.
	// default: 2 MiB
	MaxStringBytes int
	// MaxArrayLen caps the elements of an array or the members of an
	// object in a message: 400 beyond.
	// Negative: off.
	// default: 10000
	MaxArrayLen int
	// MaxInFlight caps the requests running through this frontend, all
	// sessions and principals together, with or without authentication:
	// 503 with Retry-After beyond (the request did not run; another
	// frontend may have room).
	// Negative: off.
	// default: 4096
	MaxInFlight int
	// MaxInFlightPerSession caps the requests a legacy session has
	// running through this frontend: 429 beyond.
	// Negative: off.
	// default: 64
	MaxInFlightPerSession int
	// MaxInFlightPerPrincipal caps the requests a principal has running
	// through this frontend: 429 beyond. Requests without a principal
	// (no authentication) are not counted.
	// Negative: off.
	// default: 256
	MaxInFlightPerPrincipal int
	// RatePerPrincipal is the requests per second a principal may make on
	// this frontend (a token bucket of RateBurst): 429 with Retry-After
	// beyond. Requests without a principal are not limited.
	// Negative: off.
	// default: 50
	RatePerPrincipal float64
	// RateBurst is the size of a principal's token bucket.
	// Negative: off.
	// default: 100
	RateBurst int
	// MaxSessionsPerPrincipal caps the legacy sessions a principal holds,
	// across the cluster: 429 beyond. Sessions without a principal are
	// not counted.
	// Negative: off.
	// default: 100
	MaxSessionsPerPrincipal int
	// MaxSubscriptionsPerSession caps a legacy session's resource
	// subscriptions: -32602 beyond.
	// Negative: off.
	// default: 1000
	MaxSubscriptionsPerSession int
	// SessionTTL is the store's idle lifetime of a session: a principal's
	// session count forgets a session that long after its creation.
	// Negative is invalid.
	// default: 30 min
	SessionTTL time.Duration
}

// Limiter applies the limits of one frontend. It is safe for concurrent
// use; its idle per-principal state goes at the next sweep (about once a
// minute), so it needs no stopping.
type Limiter struct {
	store Store
	log   *slog.Logger
	// The resolved caps: 0 means off.
	maxString, maxArray         int
	maxPerSession, maxPerPrinc  int
	maxTotal                    int
	rate                        float64
	burst                       int
	maxSessions, maxSubsPerSess int
	sessionTTL                  time.Duration

	mu       sync.Mutex
	inflight map[key]int
	total    int // requests in flight through the frontend
	buckets  map[string]*bucket
	swept    time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// key names an in-flight counter: a session's or a principal's.
type key struct {
	principal bool
	id        string
}

// New validates opts, applies the defaults and returns the limiter.
func New(opts Options) (*Limiter, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: a store is required", ErrInvalidOptions)
	}
	if opts.SessionTTL < 0 {
		return nil, fmt.Errorf("%w: SessionTTL is negative", ErrInvalidOptions)
	}
	if math.IsNaN(opts.RatePerPrincipal) {
		return nil, fmt.Errorf("%w: RatePerPrincipal is not a number", ErrInvalidOptions)
	}
	l := &Limiter{
		store:          opts.Store,
		log:            opts.Logger,
		maxString:      resolve(opts.MaxStringBytes, 2<<20),
		maxArray:       resolve(opts.MaxArrayLen, 10000),
		maxPerSession:  resolve(opts.MaxInFlightPerSession, 64),
		maxPerPrinc:    resolve(opts.MaxInFlightPerPrincipal, 256),
		maxTotal:       resolve(opts.MaxInFlight, 4096),
		rate:           opts.RatePerPrincipal,
		burst:          resolve(opts.RateBurst, 100),
		maxSessions:    resolve(opts.MaxSessionsPerPrincipal, 100),
		maxSubsPerSess: resolve(opts.MaxSubscriptionsPerSession, 1000),
		sessionTTL:     opts.SessionTTL,
		inflight:       map[key]int{},
		buckets:        map[string]*bucket{},
		swept:          time.Now(),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	switch {
	case l.rate == 0:
		l.rate = 50
	case l.rate < 0:
		l.rate = 0
	}
	if l.sessionTTL == 0 {
		l.sessionTTL = 30 * time.Minute
	}
	return l, nil
}

// resolve is v with its default def when zero, and 0 (off) when negative.
func resolve(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// MaxStringBytes is the resolved string cap (0: off).
func (l *Limiter) MaxStringBytes() int { return l.maxString }

// acquire takes one of max slots of k (max 0 or no id: no cap).
func (l *Limiter) acquire(k key, max int) bool {
	if max <= 0 || k.id == "" {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[k] >= max {
		return false
	}
	l.inflight[k]++
	return true
}

func (l *Limiter) release(k key, max int) {
	if max <= 0 || k.id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[k]--; l.inflight[k] <= 0 {
		delete(l.inflight, k)
	}
}

// Allow takes a token of principal's bucket at now; when it is empty it
// returns false and how long until the next token. A request without a
// principal, or with the rate limit off, is always allowed.
func (l *Limiter) Allow(principal string, now time.Time) (bool, time.Duration) {
	rate, burst := l.rate, l.burst
	if rate <= 0 || burst <= 0 || principal == "" {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[principal]
	if b == nil {
		b = &bucket{tokens: float64(burst), last: now}
		l.buckets[principal] = b
	}
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// Held are the in-flight slots a request holds (the zero value holds
// none). It is not safe for concurrent use: one owner releases it.
type Held struct {
	l                  *Limiter
	session, principal key
}

// Release gives the slots back; once only (it empties h, so a second call
// is a no-op).
func (h *Held) Release() {
	if h.l == nil {
		return
	}
	h.l.release(h.session, h.l.maxPerSession)
	h.l.release(h.principal, h.l.maxPerPrinc)
	h.l.releaseTotal()
	*h = Held{}
}

// Refusal says which in-flight cap refused a request.
type Refusal int

// The in-flight caps.
const (
	Admitted Refusal = iota
	SessionFull
	PrincipalFull
	FrontendFull
)

// Acquire takes an in-flight slot of session (empty: none), one of
// principal (empty: none) and one of the frontend. When a cap is reached
// it takes none and says which.
func (l *Limiter) Acquire(session, principal string) (Held, Refusal) {
	h := Held{l: l, session: key{id: session}, principal: key{principal: true, id: principal}}
	if !l.acquire(h.session, l.maxPerSession) {
		return Held{}, SessionFull
	}
	if !l.acquire(h.principal, l.maxPerPrinc) {
		l.release(h.session, l.maxPerSession)
		return Held{}, PrincipalFull
	}
	if !l.acquireTotal() {
		l.release(h.session, l.maxPerSession)
		l.release(h.principal, l.maxPerPrinc)
		return Held{}, FrontendFull
	}
	return h, Admitted
}

// acquireTotal takes one of the frontend's maxTotal slots (0: no cap).
func (l *Limiter) acquireTotal() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		return false
	}
	l.total++
	return true
}

func (l *Limiter) releaseTotal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
}

// InFlight returns the requests in flight through the frontend.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
