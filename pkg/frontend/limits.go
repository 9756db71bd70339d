package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// limiter keeps this frontend's per-session and per-principal counters:
// requests in flight and a token bucket per principal. Idle entries go
// at the next sweep.
type limiter struct {
	mu       sync.Mutex
	inflight map[limitKey]int
	buckets  map[string]*bucket
	swept    time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter() *limiter {
	return &limiter{inflight: map[limitKey]int{}, buckets: map[string]*bucket{}, swept: time.Now()}
}

// limitKey names an in-flight counter: a session's or a principal's.
type limitKey struct {
	principal bool
	id        string
}

// acquire takes one of max slots of key (max 0 or no id: no cap).
func (l *limiter) acquire(key limitKey, max int) bool {
	if max <= 0 || key.id == "" {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[key] >= max {
		return false
	}
	l.inflight[key]++
	return true
}

func (l *limiter) release(key limitKey, max int) {
	if max <= 0 || key.id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[key]--; l.inflight[key] <= 0 {
		delete(l.inflight, key)
	}
}

// allow takes a token of key's bucket (rate per second, burst); when it
// is empty it returns how long until the next token.
func (l *limiter) allow(key string, rate float64, burst int, now time.Time) (bool, time.Duration) {
	if rate <= 0 || burst <= 0 || key == "" {
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
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: float64(burst), last: now}
		l.buckets[key] = b
	}
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// tooMany writes 429 with Retry-After (whole seconds, at least 1).
func tooMany(w http.ResponseWriter, id protocol.ID, retryAfter time.Duration, msg string) {
	secs := int(retryAfter.Seconds() + 0.999)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	httpx.WriteError(w, http.StatusTooManyRequests, id, protocol.NewError(protocol.CodeInternalError, "%s", msg))
}

// rateLimited applies the principal's rate limit; it writes the 429 and
// returns true when the request must stop.
func (f *Frontend) rateLimited(w http.ResponseWriter, r *http.Request) bool {
	p := principalOf(r)
	ok, wait := f.limits.allow(p, f.opts.RatePerPrincipal, f.opts.RateBurst, time.Now())
	if ok {
		return false
	}
	tooMany(w, protocol.ID{}, wait, "Too Many Requests: the rate limit of this principal is reached; retry after Retry-After seconds")
	return true
}

// slots are the in-flight counters a forwarded request holds (the zero
// value holds none).
type slots struct {
	f                  *Frontend
	session, principal limitKey
}

// release gives the slots back; once only (it empties s).
func (s *slots) release() {
	if s.f == nil {
		return
	}
	s.f.limits.release(s.session, s.f.opts.MaxInFlightPerSession)
	s.f.limits.release(s.principal, s.f.opts.MaxInFlightPerPrincipal)
	*s = slots{}
}

// admit takes the in-flight slots of a forwarded request; it writes the
// 429 and returns false when one is full.
func (f *Frontend) admit(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (slots, bool) {
	s := slots{f: f, session: limitKey{id: session}, principal: limitKey{principal: true, id: principalOf(r)}}
	if !f.limits.acquire(s.session, f.opts.MaxInFlightPerSession) {
		tooMany(w, id, time.Second, "Too Many Requests: too many requests in flight in this session")
		return slots{}, false
	}
	if !f.limits.acquire(s.principal, f.opts.MaxInFlightPerPrincipal) {
		f.limits.release(s.session, f.opts.MaxInFlightPerSession)
		tooMany(w, id, time.Second, "Too Many Requests: too many requests in flight for this principal")
		return slots{}, false
	}
	return s, true
}

// Sessions per principal (with Auth): the store keeps, per principal, the
// sessions created within the session TTL, so the cap holds across
// frontends. A session ends for the count when deleted or when its TTL
// since creation is over (a session kept alive longer is not counted:
// the cap never refuses more than it should).

var errTooManySessions = errors.New("frontend: too many sessions for this principal")

func sessionsKey(principal string) string { return "sessions-of:" + principal }

// countSession adds session to principal's count, refusing past the cap.
func (f *Frontend) countSession(ctx context.Context, principal, session string, now time.Time) error {
	max := f.opts.MaxSessionsPerPrincipal
	if principal == "" || max <= 0 {
		return nil
	}
	return f.updateSessionCount(ctx, principal, func(m map[string]int64) error {
		if len(m) >= max {
			return errTooManySessions
		}
		m[session] = now.Add(f.opts.SessionTTL).UnixMilli()
		return nil
	}, now)
}

// uncountSession removes a deleted session from its principal's count.
func (f *Frontend) uncountSession(ctx context.Context, principal, session string, now time.Time) {
	if principal == "" || f.opts.MaxSessionsPerPrincipal <= 0 {
		return
	}
	_ = f.updateSessionCount(ctx, principal, func(m map[string]int64) error {
		delete(m, session)
		return nil
	}, now)
}

func (f *Frontend) updateSessionCount(ctx context.Context, principal string, change func(map[string]int64) error, now time.Time) error {
	st := f.opts.Store
	key := sessionsKey(principal)
	for attempt := 0; attempt < 50; attempt++ {
		b, ver, err := st.GetRecord(ctx, key)
		m := map[string]int64{}
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			if err := change(m); err != nil {
				return err
			}
			data, _ := json.Marshal(m)
			err = st.CreateRecord(ctx, key, data, 24*time.Hour)
			if errors.Is(err, sessionstore.ErrExists) {
				continue
			}
			return err
		case err != nil:
			return err
		}
		_ = json.Unmarshal(b, &m)
		for s, exp := range m {
			if exp <= now.UnixMilli() {
				delete(m, s)
			}
		}
		if err := change(m); err != nil {
			return err
		}
		data, _ := json.Marshal(m)
		err = st.SetRecord(ctx, key, ver, data)
		if errors.Is(err, sessionstore.ErrConflict) || errors.Is(err, sessionstore.ErrNotFound) {
			continue
		}
		return err
	}
	return errors.New("frontend: session count: too many concurrent updates")
}

// sessionCapReached reports whether principal holds MaxSessionsPerPrincipal
// sessions already (checked before an initialize is forwarded).
func (f *Frontend) sessionCapReached(ctx context.Context, principal string) bool {
	max := f.opts.MaxSessionsPerPrincipal
	if principal == "" || max <= 0 {
		return false
	}
	b, _, err := f.opts.Store.GetRecord(ctx, sessionsKey(principal))
	if err != nil {
		return false
	}
	m := map[string]int64{}
	_ = json.Unmarshal(b, &m)
	now := time.Now().UnixMilli()
	n := 0
	for _, exp := range m {
		if exp > now {
			n++
		}
	}
	return n >= max
}

const sessionCapMessage = "Too Many Requests: this principal holds the most sessions allowed; end one (DELETE) or retry later"

// checkSizes applies the string and array caps to a request or a
// notification. A client's answers (responses, and the answers and
// server-sealed state a 2026-07-28 retry carries back) are data it was
// asked for, bounded by the body cap alone: a base64 image may be long.
func (f *Frontend) checkSizes(msg *protocol.Message, body []byte) error {
	if msg.Kind() == protocol.KindResponse {
		return nil
	}
	return protocol.CheckSizes(body, f.opts.MaxStringBytes, f.opts.MaxArrayLen, "requestState", "inputResponses")
}

// isCapacity reports whether a session was not created for want of room:
// the principal's cap, or the store's capacity.
func isCapacity(err error) bool {
	return errors.Is(err, errTooManySessions) || errors.Is(err, sessionstore.ErrFull)
}

// sessionNotCreated answers an initialize whose session could not be
// stored: 429 at the principal's cap (another initialize took the last
// slot since the check before forwarding), 503 with Retry-After when the
// store is full, else 503.
func (f *Frontend) sessionNotCreated(w http.ResponseWriter, id protocol.ID, err error) {
	switch {
	case errors.Is(err, errTooManySessions):
		tooMany(w, id, time.Minute, sessionCapMessage)
	case errors.Is(err, sessionstore.ErrFull):
		f.log.Warn("frontend: the session store is full: initialize refused")
		w.Header().Set("Retry-After", "60")
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.NewError(protocol.CodeInternalError,
			"Service Unavailable: the server holds the most sessions it may; retry later"))
	default:
		f.log.Error("frontend: creating a session", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.NewError(protocol.CodeInternalError, "could not create the session; retry"))
	}
}

// subscriptionRoom checks a resources/subscribe before it is forwarded:
// its URI at most maxURILen bytes, and room in the session for one more.
func (f *Frontend) subscriptionRoom(r *http.Request, session string, head *protocol.ParamsHead) *protocol.Error {
	if head.URI == nil {
		return nil // the worker answers the missing uri
	}
	if len(*head.URI) > maxURILen {
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: the uri is longer than %d bytes", maxURILen)
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	uris, err := f.opts.Store.Subscriptions(ctx, session)
	if err != nil || f.opts.MaxSubscriptionsPerSession <= 0 || len(uris) < f.opts.MaxSubscriptionsPerSession {
		return nil // a store error shows when the subscription is recorded
	}
	for _, u := range uris {
		if u == *head.URI {
			return nil // already subscribed
		}
	}
	return protocol.NewError(protocol.CodeInvalidParams, "invalid params: this session holds %d resource subscriptions, the most allowed; unsubscribe from one first", len(uris))
}
