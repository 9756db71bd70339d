package sessionstore

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// memLog is one stream's event log.
type memLog struct {
	// newest is the index of the last event appended (0 before the first).
	newest uint64
	// events holds indices newest-len(events)+1 .. newest, oldest first,
	// at most maxEvents of them.
	events []Event
	// bytes is the size of events' data; seq orders the session's logs
	// by their last append.
	bytes int
	seq   uint64
	// lastSeq is the highest sequence number appended by AppendEventSeq.
	lastSeq uint64
}

// A session's event logs in a Memory store are bounded: at most
// maxSessionLogs logs and maxSessionLogBytes of event data. Past either,
// the logs appended to least recently go first (a client resuming one
// learns that its events are gone), then the oldest events of the log
// being appended to.
const (
	maxSessionLogs     = 256
	maxSessionLogBytes = 16 << 20
)

// AppendEvent implements [Store.AppendEvent].
func (m *Memory) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	ev := Event{Data: slices.Clone(data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	err := m.withLive(ctx, "append event", id, true, func(s *memSession) {
		if s.logs == nil {
			s.logs = make(map[string]*memLog)
		}
		l := s.logs[stream]
		if l == nil {
			l = &memLog{}
			s.logs[stream] = l
		}
		m.appendTo(s, l, &ev)
	})
	if err != nil {
		return 0, err
	}
	return ev.Index, nil
}

// appendTo appends ev to the session's log l, giving it its index, and
// applies the session's bounds. The caller holds the store's lock.
func (m *Memory) appendTo(s *memSession, l *memLog, ev *Event) {
	l.newest++
	ev.Index = l.newest
	l.events = append(l.events, *ev)
	l.bytes += len(ev.Data)
	s.logBytes += len(ev.Data)
	s.logSeq++
	l.seq = s.logSeq
	drop := len(l.events) - m.maxEvents
	for s.logBytes-eventBytes(l.events[:max(drop, 0)]) > maxSessionLogBytes && len(s.logs) > 1 {
		s.dropOldestLog(l)
	}
	for drop < len(l.events)-1 && s.logBytes-eventBytes(l.events[:max(drop, 0)]) > maxSessionLogBytes {
		drop++
	}
	if drop > 0 {
		// Reslicing keeps the append amortised O(1); clearing the
		// dropped slots lets their data be collected before the
		// backing array is reallocated.
		n := eventBytes(l.events[:drop])
		l.bytes -= n
		s.logBytes -= n
		clear(l.events[:drop])
		l.events = l.events[drop:]
	}
	for len(s.logs) > maxSessionLogs {
		s.dropOldestLog(l)
	}
}

// EventsAfter implements [Store.EventsAfter].
func (m *Memory) EventsAfter(ctx context.Context, id, stream string, after uint64) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, time.Now())
	if s == nil {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrNotFound)
	}
	var newest uint64
	var kept []Event
	if l := s.logs[stream]; l != nil {
		newest, kept = l.newest, l.events
	}
	switch eventWindow(after, newest, len(kept)) {
	case windowPurged:
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrEventsPurged)
	case windowEmpty:
		return []Event{}, nil
	}
	kept = kept[len(kept)-int(newest-after):]
	events := make([]Event, len(kept))
	for i, e := range kept {
		events[i] = Event{Index: e.Index, Data: slices.Clone(e.Data)}
	}
	return events, nil
}

func eventBytes(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// dropOldestLog removes the log appended to least recently, other than
// keep. The caller holds the store's lock.
func (s *memSession) dropOldestLog(keep *memLog) {
	var oldest string
	var old *memLog
	for name, l := range s.logs {
		if l != keep && (old == nil || l.seq < old.seq) {
			oldest, old = name, l
		}
	}
	if old == nil {
		return
	}
	s.logBytes -= old.bytes
	delete(s.logs, oldest)
}
