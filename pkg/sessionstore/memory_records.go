package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
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
