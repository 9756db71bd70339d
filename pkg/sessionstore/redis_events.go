package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// AppendEvent implements [Store.AppendEvent]: one round trip
// (lua/append.lua), and a second one, the sweep (lua/sweep.lua), after
// the first append to a stream when the session has ended streams or
// more than MaxStreamsPerSession with the new one.
//
// The sweep is a step of its own, given the keys of the streams it may
// drop, which append.lua names but cannot touch (the rule in
// redis_scripts.go); it weighs the streams as they are when it runs. So
// MaxStreamsPerSession holds once AppendEvent has returned, but in
// between (the gap of one round trip) the session has a stream more than
// the cap, and one more for each stream started meanwhile. A sweep that
// fails (ctx done, Redis unreachable) is not an error of the append,
// which was made: an error would have the caller append the event again.
// The next first append of a stream sweeps again, all the excess and not
// one stream: the streams beyond the cap never outnumber those whose
// sweep failed since the last that ran, and the field of an ended stream
// whose grace passed waits for that sweep too (its log and once set
// expire on their own).
func (r *Redis) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	if !r.validID(id) {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream, r.onceKey(id, stream))
	if data == nil {
		data = []byte{}
	}
	reply, err := r.run(ctx, scriptAppend, keys,
		r.slidMS, nowMilli().UnixMilli(), stream, data, r.trimFrom, r.maxStrms).Result()
	var (
		idx   int64
		names []string
	)
	if err == nil {
		idx, names, err = decodeAppend(reply)
	}
	if err == nil && idx <= 0 {
		err = ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), err)
	}
	if len(names) > 0 {
		_ = r.sweep(ctx, id, stream, names) // best effort: see above
	}
	return uint64(idx), nil
}

// decodeAppend interprets the reply of scriptAppend: the index, or
// {index, the streams to sweep}.
func decodeAppend(reply any) (int64, []string, error) {
	switch v := reply.(type) {
	case int64:
		return v, nil, nil
	case []any:
		if len(v) > 1 {
			idx, ok := v[0].(int64)
			names, ok2 := nameList(v[1:])
			if ok && ok2 {
				return idx, names, nil
			}
		}
		return 0, nil, fmt.Errorf("malformed append reply %v", v)
	}
	return 0, nil, fmt.Errorf("malformed append reply of type %T", reply)
}

// EventsAfter implements [Store.EventsAfter].
func (r *Redis) EventsAfter(ctx context.Context, id, stream string, after uint64) ([]Event, error) {
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream)
	reply, err := r.run(ctx, scriptEventsAfter, keys,
		stream, strconv.FormatUint(after, 10)).Result()
	if errors.Is(err, redis.Nil) {
		err = ErrNotFound
	}
	if err == nil {
		var events []Event
		if events, err = decodeEvents(reply); err == nil {
			return events, nil
		}
	}
	return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), err)
}

// EndStream implements [EventLog.EndStream].
func (r *Redis) EndStream(ctx context.Context, id, stream string) error {
	if !r.validID(id) {
		return nil
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream, r.onceKey(id, stream))
	if err := r.run(ctx, scriptEndStream, keys, stream, r.graceMS).Err(); err != nil {
		return fmt.Errorf("sessionstore: end stream of %q: %w", shortID(id), err)
	}
	return nil
}

// decodeEvents interprets the reply of scriptEventsAfter.
func decodeEvents(reply any) ([]Event, error) {
	switch v := reply.(type) {
	case int64:
		return nil, ErrEventsPurged
	case []any:
		if len(v) == 0 {
			return []Event{}, nil
		}
		first, ok := v[0].(int64)
		if !ok || first < 1 {
			return nil, fmt.Errorf("malformed event log reply")
		}
		events := make([]Event, len(v)-1)
		for i, d := range v[1:] {
			s, ok := d.(string)
			if !ok {
				return nil, fmt.Errorf("malformed event log reply")
			}
			events[i] = Event{Index: uint64(first) + uint64(i), Data: []byte(s)}
		}
		return events, nil
	}
	return nil, fmt.Errorf("malformed event log reply of type %T", reply)
}
