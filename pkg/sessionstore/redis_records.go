package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Records in Redis: P:r:<key> is a HASH {v: version, d: data} with the
// expiry set at creation (lua/record_create.lua, lua/record_set.lua). Each
// call is one round trip.

func (r *Redis) recordKey(key string) string { return r.prefix + ":r:" + key }

// CreateRecord implements [Store.CreateRecord].
func (r *Redis) CreateRecord(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return errors.New("sessionstore: create record: ttl must be positive")
	}
	n, err := r.run(ctx, scriptRecordCreate, []string{r.recordKey(key)}, data, max(ttl.Milliseconds(), 1)).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("sessionstore: create record: %w", err)
	case n == 0:
		return fmt.Errorf("sessionstore: create record: %w", ErrExists)
	}
	return nil
}

// GetRecord implements [Store.GetRecord].
func (r *Redis) GetRecord(ctx context.Context, key string) ([]byte, int64, error) {
	vals, err := r.client.HMGet(ctx, r.recordKey(key), "v", "d").Result()
	if err != nil {
		return nil, 0, fmt.Errorf("sessionstore: get record: %w", err)
	}
	vs, ok1 := vals[0].(string)
	d, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return nil, 0, fmt.Errorf("sessionstore: get record: %w", ErrNotFound)
	}
	var ver int64
	if _, err := fmt.Sscan(vs, &ver); err != nil {
		return nil, 0, fmt.Errorf("sessionstore: get record: malformed version %q", vs)
	}
	return []byte(d), ver, nil
}

// SetRecord implements [Store.SetRecord].
func (r *Redis) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	n, err := r.run(ctx, scriptRecordSet, []string{r.recordKey(key)}, ver, data).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("sessionstore: set record: %w", err)
	case n == 0:
		return fmt.Errorf("sessionstore: set record: %w", ErrConflict)
	case n < 0:
		return fmt.Errorf("sessionstore: set record: %w", ErrNotFound)
	}
	return nil
}
