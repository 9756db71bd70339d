package sessionstore

import (
	"context"
	"slices"
	"time"
)

// AppendEventSeq implements [EventLog.AppendEventSeq].
func (m *Memory) AppendEventSeq(ctx context.Context, id, stream string, seq uint64, data []byte) (uint64, bool, error) {
	ev := Event{Data: slices.Clone(data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	appended := false
	err := m.withLive(ctx, "append event", id, true, func(s *memSession) {
		l := s.log(stream)
		if l == nil || l.newest == 0 || l.gone(time.Now()) || seq <= l.lastSeq {
			return
		}
		l.lastSeq = seq
		m.appendTo(s.more, l, &ev)
		appended = true
	})
	if err != nil || !appended {
		return 0, false, err
	}
	return ev.Index, true, nil
}
