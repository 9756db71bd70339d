package sessionstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"time"
)

// onceKeys is the memory store's single-use registry.
type onceKeys struct {
	mu   sync.Mutex
	keys map[string]time.Time // key -> expiry
	ops  int
}

func (o *onceKeys) use(key string, ttl time.Duration, now time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = map[string]time.Time{}
	}
	if exp, ok := o.keys[key]; ok && now.Before(exp) {
		return ErrUsed
	}
	o.keys[key] = now.Add(ttl)
	// Sweep expired keys now and then, so the map stays bounded by the
	// keys used within one ttl.
	if o.ops++; o.ops%1024 == 0 {
		for k, exp := range o.keys {
			if !now.Before(exp) {
				delete(o.keys, k)
			}
		}
	}
	return nil
}

// UseOnce implements [Store.UseOnce].
func (m *Memory) UseOnce(ctx context.Context, key string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("sessionstore: use once: ttl must be positive")
	}
	return m.once.use(key, ttl, time.Now())
}

// UseOnce implements [Store.UseOnce] with SET NX PX on
// P:once:<sha256 of key> (one round trip).
func (r *Redis) UseOnce(ctx context.Context, key string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("sessionstore: use once: ttl must be positive")
	}
	sum := sha256.Sum256([]byte(key))
	ok, err := r.client.SetNX(ctx, r.prefix+":once:"+base64.RawURLEncoding.EncodeToString(sum[:]), 1, ttl).Result()
	if err != nil {
		return fmt.Errorf("sessionstore: use once: %w", err)
	}
	if !ok {
		return ErrUsed
	}
	return nil
}
