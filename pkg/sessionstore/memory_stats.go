package sessionstore

import "time"

// Len returns the number of live sessions (expired ones are not counted).
func (m *Memory) Len() int {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if s.expires.After(now) {
			n++
		}
	}
	return n
}
