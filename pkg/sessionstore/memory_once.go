package sessionstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// onceKeys is the memory store's single-use registry. It keeps a hash of
// each key, whatever its length, and at most maxOnceKeys of them.
type onceKeys struct {
	mu   sync.Mutex
	keys map[[sha256.Size]byte]time.Time // key's hash -> expiry
	ops  int
	max  int // 0: maxOnceKeys
	// swept is when a full registry was last swept: at most once a
	// second, so refusals stay cheap.
	swept time.Time
}

// maxOnceKeys bounds the registry (about 64 MiB): past it, with the
// expired keys gone, UseOnce fails with ErrFull rather than forget a use.
const maxOnceKeys = 1 << 20

func (o *onceKeys) use(key string, ttl time.Duration, now time.Time) error {
	sum := sha256.Sum256([]byte(key))
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = map[[sha256.Size]byte]time.Time{}
	}
	if exp, ok := o.keys[sum]; ok && now.Before(exp) {
		return ErrUsed
	}
	limit := o.max
	if limit <= 0 {
		limit = maxOnceKeys
	}
	if len(o.keys) >= limit && now.Sub(o.swept) >= time.Second {
		o.swept = now
		for k, exp := range o.keys {
			if !now.Before(exp) {
				delete(o.keys, k)
			}
		}
	}
	if len(o.keys) >= limit {
		return ErrFull
	}
	o.keys[sum] = now.Add(ttl)
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
