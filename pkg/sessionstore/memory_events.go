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
	// endBy is when an ended stream's log goes (zero while it is live).
	endBy time.Time
	// lastSeq is the highest sequence number appended by AppendEventSeq.
	lastSeq uint64
	// once are the keys of AppendOnce's last appends.
	once memOnceKeys
}

// gone reports whether l is an ended log past its grace.
func (l *memLog) gone(now time.Time) bool {
	return !l.endBy.IsZero() && !now.Before(l.endBy)
}

// A session's event logs in a Memory store are bounded: at most
// MaxStreamsPerSession logs and maxSessionLogBytes of event data. Past
// either, the ended logs and then those appended to least recently go
// first (a client resuming one learns that its events are gone), then the
// oldest events of the log being appended to. Ended logs past their grace
// go when a new stream starts or when they are read.
const maxSessionLogBytes = 16 << 20

// AppendEvent implements [Store.AppendEvent].
func (m *Memory) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	ev := Event{Data: slices.Clone(data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	err := m.withLive(ctx, "append event", id, true, func(s *memSession) {
		x := s.grow()
		if x.logs == nil {
			x.logs = make(map[string]*memLog)
		}
		l := x.logs[stream]
		now := time.Now()
		if l != nil && l.gone(now) {
			// An ended log past its grace is gone, with the keys of
			// AppendOnce; its indices go on (as in a Redis store).
			x.logBytes -= l.bytes
			clear(l.events)
			l.events, l.bytes, l.once = nil, 0, memOnceKeys{}
		}
		if l == nil {
			for name, o := range x.logs {
				if o.gone(now) {
					x.logBytes -= o.bytes
					delete(x.logs, name)
				}
			}
			l = &memLog{}
			x.logs[stream] = l
		}
		m.appendTo(x, l, &ev)
	})
	if err != nil {
		return 0, err
	}
	return ev.Index, nil
}

// appendTo appends ev to the log l of the session whose logs are in s,
// giving it its index, and applies the session's bounds. The caller holds
// the store's lock.
func (m *Memory) appendTo(s *memMore, l *memLog, ev *Event) {
	l.endBy = time.Time{} // an append reopens an ended stream
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
	for m.maxLogs > 0 && len(s.logs) > m.maxLogs {
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
	if l := s.log(stream); l != nil && l.gone(time.Now()) {
		s.more.logBytes -= l.bytes
		delete(s.more.logs, stream)
	} else if l != nil {
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

// EndStream implements [EventLog.EndStream].
func (m *Memory) EndStream(ctx context.Context, id, stream string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: end stream of %q: %w", shortID(id), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, time.Now())
	if s == nil {
		return nil
	}
	l := s.log(stream)
	switch {
	case l == nil:
	case m.grace <= 0:
		s.more.logBytes -= l.bytes
		delete(s.more.logs, stream)
	case l.endBy.IsZero():
		l.endBy = time.Now().Add(m.grace)
	}
	return nil
}

func eventBytes(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// dropOldestLog removes the ended log, or else the log, appended to least
// recently, other than keep. The caller holds the store's lock.
func (s *memMore) dropOldestLog(keep *memLog) {
	var oldest string
	var old *memLog
	older := func(a, b *memLog) bool {
		if ae, be := !a.endBy.IsZero(), !b.endBy.IsZero(); ae != be {
			return ae
		}
		return a.seq < b.seq
	}
	for name, l := range s.logs {
		if l != keep && (old == nil || older(l, old)) {
			oldest, old = name, l
		}
	}
	if old == nil {
		return
	}
	s.logBytes -= old.bytes
	delete(s.logs, oldest)
}
