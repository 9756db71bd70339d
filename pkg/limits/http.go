package limits

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// The messages of the refusals.
const (
	rateMessage              = "Too Many Requests: the rate limit of this principal is reached; retry after Retry-After seconds"
	sessionInFlightMessage   = "Too Many Requests: too many requests in flight in this session"
	principalInFlightMessage = "Too Many Requests: too many requests in flight for this principal"
	frontendInFlightMessage  = "Service Unavailable: this server has the most requests in flight it takes; retry (the request did not run)"
	// SessionCapMessage is the message of the 429 refusing an initialize
	// at the principal's session cap.
	SessionCapMessage = "Too Many Requests: this principal holds the most sessions allowed; end one (DELETE) or retry later"
)

// WriteTooMany writes a 429 JSON-RPC error (code -32603, message msg, for
// id) with Retry-After: retryAfter in whole seconds, rounded up, at
// least 1.
func WriteTooMany(w http.ResponseWriter, id protocol.ID, retryAfter time.Duration, msg string) {
	secs := int(retryAfter.Seconds() + 0.999)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	httpx.WriteError(w, http.StatusTooManyRequests, id, protocol.NewError(protocol.CodeInternalError, "%s", msg))
}

// RateLimited applies principal's rate limit; it writes the 429 (no id,
// Retry-After until the next token) and returns true when the request
// must stop.
func (l *Limiter) RateLimited(w http.ResponseWriter, principal string) bool {
	ok, wait := l.Allow(principal, time.Now())
	if ok {
		return false
	}
	WriteTooMany(w, protocol.ID{}, wait, rateMessage)
	return true
}

// Admit takes the in-flight slots of a request of session by principal;
// it writes the refusal for id and returns false when one of the caps is
// reached: 429 (Retry-After: 1) at a session's or principal's cap, 503
// (Retry-After: 1) at the frontend's.
func (l *Limiter) Admit(w http.ResponseWriter, id protocol.ID, session, principal string) (Held, bool) {
	h, refusal := l.Acquire(session, principal)
	switch refusal {
	case SessionFull:
		WriteTooMany(w, id, time.Second, sessionInFlightMessage)
		return Held{}, false
	case PrincipalFull:
		WriteTooMany(w, id, time.Second, principalInFlightMessage)
		return Held{}, false
	case FrontendFull:
		// 503, not 429: the client is not at fault, this frontend is
		// full; the request never ran, so a client or a proxy may send it
		// again, here or to another frontend.
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.NewError(protocol.CodeInternalError, "%s", frontendInFlightMessage))
		return Held{}, false
	}
	return h, true
}

// IsCapacity reports whether a session was not created for want of room:
// the principal's cap ([ErrTooManySessions]) or the store's capacity
// ([sessionstore.ErrFull]).
func IsCapacity(err error) bool {
	return errors.Is(err, ErrTooManySessions) || errors.Is(err, sessionstore.ErrFull)
}

// WriteSessionNotCreated answers an initialize whose session could not be
// stored: 429 at the principal's cap (another initialize took the last
// slot since the check before forwarding), 503 with Retry-After when the
// store is full, else 503.
func (l *Limiter) WriteSessionNotCreated(w http.ResponseWriter, id protocol.ID, err error) {
	switch {
	case errors.Is(err, ErrTooManySessions):
		WriteTooMany(w, id, time.Minute, SessionCapMessage)
	case errors.Is(err, sessionstore.ErrFull):
		l.log.Warn("frontend: the session store is full: initialize refused")
		w.Header().Set("Retry-After", "60")
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.NewError(protocol.CodeInternalError,
			"Service Unavailable: the server holds the most sessions it may; retry later"))
	default:
		l.log.Error("frontend: creating a session", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.NewError(protocol.CodeInternalError, "could not create the session; retry"))
	}
}
