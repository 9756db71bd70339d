package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// AppendEvent implements [Store.AppendEvent].
func (r *Redis) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	if !r.validID(id) {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream, r.onceKey(id, stream))
	if data == nil {
		data = []byte{}
	}
	idx, err := r.run(ctx, scriptAppend, keys,
		r.ttlMS, nowMilli().UnixMilli(), stream, data, r.trimFrom, r.maxStrms, logPrefix).Int64()
	if err == nil && idx <= 0 {
		err = ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), err)
	}
	return uint64(idx), nil
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
