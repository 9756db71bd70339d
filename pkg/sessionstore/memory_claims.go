package sessionstore

import (
	"context"
	"fmt"
	"time"
)

// memClaim is one in-flight request id of a session.
type memClaim struct {
	token   string
	expires time.Time
}

// Begin implements [Store.Begin].
func (m *Memory) Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*Session, error) {
	if err := checkClaimTTL(id, ttl); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	ms := m.live(id, now)
	if ms == nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrNotFound)
	}
	m.touch(ms, now)
	x := ms.grow()
	c, inFlight := x.claims[requestID]
	inFlight = inFlight && now.Before(c.expires)
	if !inFlight {
		if x.claims == nil {
			x.claims = make(map[string]memClaim, 1)
		}
		x.claims[requestID] = memClaim{token: token, expires: now.Add(ttl)}
	}
	s := ms.session(id)
	kind := ms.kind // immutable
	m.mu.Unlock()

	if err := kind.decode(&s); err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	if inFlight {
		return &s, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrInFlight)
	}
	return &s, nil
}

// End implements [Store.End].
func (m *Memory) End(ctx context.Context, id, requestID, token string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: end %q: %w", shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil || s.more == nil {
		return nil
	}
	// A dead claim is dropped whoever it belonged to: it is gone anyway.
	// The empty map stays for the session's next request; the janitor
	// drops it if the session stays idle (see memSession.shrink).
	if c, ok := s.more.claims[requestID]; ok && (c.token == token || !now.Before(c.expires)) {
		delete(s.more.claims, requestID)
	}
	return nil
}
