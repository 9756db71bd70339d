package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/limits"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The admission limits live in pkg/limits; these are the frontend's calls
// into them, with the request's principal.

// newLimits builds the limiter from the frontend's options as given (zero
// is a default and negative is off there as here); sessionTTL is the
// resolved session lifetime.
func newLimits(opts *Options, sessionTTL time.Duration, log *slog.Logger) (*limits.Limiter, error) {
	return limits.New(limits.Options{
		Store:                      opts.Store,
		Logger:                     log,
		MaxStringBytes:             opts.MaxStringBytes,
		MaxArrayLen:                opts.MaxArrayLen,
		MaxInFlightPerSession:      opts.MaxInFlightPerSession,
		MaxInFlightPerPrincipal:    opts.MaxInFlightPerPrincipal,
		RatePerPrincipal:           opts.RatePerPrincipal,
		RateBurst:                  opts.RateBurst,
		MaxSessionsPerPrincipal:    opts.MaxSessionsPerPrincipal,
		MaxSubscriptionsPerSession: opts.MaxSubscriptionsPerSession,
		SessionTTL:                 sessionTTL,
	})
}

// tooMany writes 429 with Retry-After (whole seconds, at least 1).
func tooMany(w http.ResponseWriter, id protocol.ID, retryAfter time.Duration, msg string) {
	limits.WriteTooMany(w, id, retryAfter, msg)
}

// rateLimited applies the principal's rate limit; it writes the 429 and
// returns true when the request must stop.
func (f *Frontend) rateLimited(w http.ResponseWriter, r *http.Request) bool {
	return f.limits.RateLimited(w, principalOf(r))
}

// slots are the in-flight counters a forwarded request holds (the zero
// value holds none).
type slots struct{ held limits.Held }

// release gives the slots back; once only (it empties s).
func (s *slots) release() { s.held.Release() }

// admit takes the in-flight slots of a forwarded request; it writes the
// 429 and returns false when one is full.
func (f *Frontend) admit(w http.ResponseWriter, r *http.Request, id protocol.ID, session string) (slots, bool) {
	h, ok := f.limits.Admit(w, id, session, principalOf(r))
	return slots{held: h}, ok
}

// countSession adds session to principal's count, refusing past the cap.
func (f *Frontend) countSession(ctx context.Context, principal, session string, now time.Time) error {
	return f.limits.CountSession(ctx, principal, session, now)
}

// uncountSession removes a deleted session from its principal's count.
func (f *Frontend) uncountSession(ctx context.Context, principal, session string, now time.Time) {
	f.limits.UncountSession(ctx, principal, session, now)
}

// sessionCapReached reports whether principal holds MaxSessionsPerPrincipal
// sessions already (checked before an initialize is forwarded).
func (f *Frontend) sessionCapReached(ctx context.Context, principal string) bool {
	return f.limits.SessionCapReached(ctx, principal, time.Now())
}

const sessionCapMessage = limits.SessionCapMessage

// checkSizes applies the string and array caps to a request or a
// notification.
func (f *Frontend) checkSizes(msg *protocol.Message, body []byte) error {
	return f.limits.CheckSizes(msg, body)
}

// isCapacity reports whether a session was not created for want of room.
func isCapacity(err error) bool { return limits.IsCapacity(err) }

// sessionNotCreated answers an initialize whose session could not be
// stored (429 at the principal's cap, 503 otherwise).
func (f *Frontend) sessionNotCreated(w http.ResponseWriter, id protocol.ID, err error) {
	f.limits.WriteSessionNotCreated(w, id, err)
}

// subscriptionRoom checks a resources/subscribe before it is forwarded:
// its URI at most maxURILen bytes, and room in the session for one more.
func (f *Frontend) subscriptionRoom(r *http.Request, session string, head *protocol.ParamsHead) *protocol.Error {
	return f.limits.SubscriptionRoom(r.Context(), session, head.URI)
}
