package sessionstore

import (
	"context"
	"time"
)

// Len returns the number of live sessions (expired ones are not counted).
func (m *Memory) Len() int {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	t := m.since(now)
	for _, s := range m.sessions {
		if s.expires > t {
			n++
		}
	}
	return n
}

// CountSessions implements [Counter]: Len, exact (a pass over the
// sessions under the store's lock).
func (m *Memory) CountSessions(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return m.Len(), nil
}
