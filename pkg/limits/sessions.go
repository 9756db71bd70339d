package limits

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// Sessions per principal: the store keeps, per principal, the sessions
// created within the session TTL, so the cap holds across frontends. A
// session ends for the count when deleted or when its TTL since creation
// is over (a session kept alive longer is not counted: the cap never
// refuses more than it should).

// ErrTooManySessions is CountSession's refusal at the principal's cap.
var ErrTooManySessions = errors.New("limits: too many sessions for this principal")

// SessionsKey is the store record of principal's session count.
func SessionsKey(principal string) string { return "sessions-of:" + principal }

// CountSession adds session to principal's count at now, failing with
// ErrTooManySessions at the cap. Without a principal, or with the cap
// off, it does nothing.
func (l *Limiter) CountSession(ctx context.Context, principal, session string, now time.Time) error {
	max := l.maxSessions
	if principal == "" || max <= 0 {
		return nil
	}
	return l.updateSessionCount(ctx, principal, func(m map[string]int64) error {
		if len(m) >= max {
			return ErrTooManySessions
		}
		m[session] = now.Add(l.sessionTTL).UnixMilli()
		return nil
	}, now)
}

// UncountSession removes a deleted session from its principal's count
// (best effort: an error leaves the session counted until its TTL).
func (l *Limiter) UncountSession(ctx context.Context, principal, session string, now time.Time) {
	if principal == "" || l.maxSessions <= 0 {
		return
	}
	_ = l.updateSessionCount(ctx, principal, func(m map[string]int64) error {
		delete(m, session)
		return nil
	}, now)
}

func (l *Limiter) updateSessionCount(ctx context.Context, principal string, change func(map[string]int64) error, now time.Time) error {
	st := l.store
	k := SessionsKey(principal)
	for attempt := 0; attempt < 50; attempt++ {
		b, ver, err := st.GetRecord(ctx, k)
		m := map[string]int64{}
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			if err := change(m); err != nil {
				return err
			}
			data, _ := json.Marshal(m)
			err = st.CreateRecord(ctx, k, data, 24*time.Hour)
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
		err = st.SetRecord(ctx, k, ver, data)
		if errors.Is(err, sessionstore.ErrConflict) || errors.Is(err, sessionstore.ErrNotFound) {
			continue
		}
		return err
	}
	return errors.New("limits: session count: too many concurrent updates")
}

// SessionCapReached reports whether principal holds the most sessions
// allowed already at now (checked before an initialize is forwarded). A
// store error reports false: CountSession checks again.
func (l *Limiter) SessionCapReached(ctx context.Context, principal string, now time.Time) bool {
	max := l.maxSessions
	if principal == "" || max <= 0 {
		return false
	}
	b, _, err := l.store.GetRecord(ctx, SessionsKey(principal))
	if err != nil {
		return false
	}
	m := map[string]int64{}
	_ = json.Unmarshal(b, &m)
	n := 0
	for _, exp := range m {
		if exp > now.UnixMilli() {
			n++
		}
	}
	return n >= max
}
