package sessionstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"
)

// memOnceKeys are the keys a memory log remembers for AppendOnce: the
// hashes of the keys of its last maxEvents appends made by AppendOnce,
// with their indices. They live in the log, so they go with it.
type memOnceKeys struct {
	index map[[sha256.Size]byte]uint64
	order [][sha256.Size]byte // the keys of index, oldest first
}

// add records key hash sum at index idx and forgets the oldest keys
// beyond max.
func (k *memOnceKeys) add(sum [sha256.Size]byte, idx uint64, max int) {
	if k.index == nil {
		k.index = make(map[[sha256.Size]byte]uint64)
	}
	k.index[sum] = idx
	k.order = append(k.order, sum)
	if drop := len(k.order) - max; drop > 0 {
		for _, old := range k.order[:drop] {
			delete(k.index, old)
		}
		// Reslicing keeps the add amortised O(1), as for the events.
		k.order = k.order[drop:]
	}
}

// AppendOnce implements [EventLog.AppendOnce]: the whole batch under the
// store's lock, so each message is atomic (and so is the batch).
func (m *Memory) AppendOnce(ctx context.Context, batch []OnceAppend) ([]OnceResult, error) {
	if err := checkOnceBatch(batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: append once: %w", err)
	}
	results := make([]OnceResult, len(batch))
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range batch {
		results[i] = m.appendOnce(&batch[i], now)
	}
	return results, nil
}

// appendOnce is AppendOnce for one message. The caller holds m.mu.
func (m *Memory) appendOnce(a *OnceAppend, now time.Time) OnceResult {
	s := m.live(a.Session, now)
	if s == nil {
		return OnceResult{Status: NoSession}
	}
	if a.URI != "" {
		if !s.subscribed(a.URI) {
			return OnceResult{Status: NotSubscribed}
		}
	}
	l := s.log(a.Stream)
	if l == nil || l.newest == 0 || l.gone(now) {
		return OnceResult{Status: NoLog}
	}
	sum := sha256.Sum256([]byte(a.Key))
	if idx, ok := l.once.index[sum]; ok {
		return OnceResult{Index: idx, Status: Duplicate}
	}
	ev := Event{Data: slices.Clone(a.Data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	m.touch(s, now)
	m.appendTo(s.more, l, &ev)
	l.once.add(sum, ev.Index, m.maxEvents)
	return OnceResult{Index: ev.Index, Status: Appended}
}
