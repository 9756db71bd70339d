package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// memRecords is the memory store's record table, with its own lock.
type memRecords struct {
	mu   sync.Mutex
	recs map[string]*memRecord
	ops  int
}

type memRecord struct {
	data    []byte
	ver     int64
	expires time.Time
}

func (m *memRecords) live(key string, now time.Time) *memRecord {
	r := m.recs[key]
	if r != nil && !now.Before(r.expires) {
		delete(m.recs, key)
		return nil
	}
	return r
}

// CreateRecord implements [Store.CreateRecord].
func (m *Memory) CreateRecord(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		return errors.New("sessionstore: create record: ttl must be positive")
	}
	now := time.Now()
	r := &m.records
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recs == nil {
		r.recs = map[string]*memRecord{}
	}
	if r.live(key, now) != nil {
		return fmt.Errorf("sessionstore: create record: %w", ErrExists)
	}
	r.recs[key] = &memRecord{data: append([]byte(nil), data...), ver: 1, expires: now.Add(ttl)}
	// Sweep expired records now and then: the table stays bounded by the
	// records created within one ttl.
	if r.ops++; r.ops%1024 == 0 {
		for k, e := range r.recs {
			if !now.Before(e.expires) {
				delete(r.recs, k)
			}
		}
	}
	return nil
}

// GetRecord implements [Store.GetRecord].
func (m *Memory) GetRecord(ctx context.Context, key string) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	r := &m.records
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.live(key, time.Now())
	if e == nil {
		return nil, 0, fmt.Errorf("sessionstore: get record: %w", ErrNotFound)
	}
	return append([]byte(nil), e.data...), e.ver, nil
}

// SetRecord implements [Store.SetRecord].
func (m *Memory) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &m.records
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.live(key, time.Now())
	switch {
	case e == nil:
		return fmt.Errorf("sessionstore: set record: %w", ErrNotFound)
	case e.ver != ver:
		return fmt.Errorf("sessionstore: set record: %w", ErrConflict)
	}
	e.data = append([]byte(nil), data...)
	e.ver++
	return nil
}

// Records in Redis: P:r:<key> is a HASH {v: version, d: data} with the
// expiry set at creation. Each call is one round trip.
var (
	// ARGV: data, ttl ms -> 1 created, 0 exists.
	scriptRecordCreate = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', 1, 'd', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)
	// ARGV: version, data -> 1 set, 0 conflict, -1 gone.
	scriptRecordSet = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return -1 end
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(v) + 1, 'd', ARGV[2])
return 1
`)
)

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
