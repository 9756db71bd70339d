package sessionstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

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
