// Package decodecache keeps values decoded from bytes by those bytes: a
// client sends the same client info and capabilities, and a legacy
// session the same snapshot, with every request, and decoding them is
// most of decoding what carries them.
package decodecache

import (
	"strings"
	"sync"
)

// MaxEntries bounds a cache (it starts over when full), and MaxBytes the
// encodings it keeps: at most about 32 MiB with their decoded forms,
// whatever clients declare.
const (
	MaxEntries = 4096
	MaxBytes   = 4 << 10
)

// Cache maps encodings to the values decoded from them. The values are
// shared by every caller that gets them: treat them as read-only. The
// zero value is not usable: call New.
type Cache[T any] struct {
	mu sync.Mutex
	m  map[string]*T
}

// New returns an empty cache.
func New[T any]() *Cache[T] { return &Cache[T]{m: map[string]*T{}} }

// Get returns the value encoded as raw, decoded by decode on a miss (an
// error is returned and nothing kept). decode gets a copy of raw of its
// own, which its result may alias: a kept value pins no buffer of the
// caller's.
func (c *Cache[T]) Get(raw string, decode func(string) (*T, error)) (*T, error) {
	c.mu.Lock()
	v := c.m[raw]
	c.mu.Unlock()
	if v != nil {
		return v, nil
	}
	return c.add(strings.Clone(raw), decode)
}

// GetBytes is Get for an encoding held in a byte slice (looked up without
// a copy).
func (c *Cache[T]) GetBytes(raw []byte, decode func(string) (*T, error)) (*T, error) {
	c.mu.Lock()
	v := c.m[string(raw)]
	c.mu.Unlock()
	if v != nil {
		return v, nil
	}
	return c.add(string(raw), decode)
}

// add decodes key (the caller's own copy) and keeps it unless it is large.
func (c *Cache[T]) add(key string, decode func(string) (*T, error)) (*T, error) {
	v, err := decode(key)
	if err != nil {
		return nil, err
	}
	if len(key) > MaxBytes {
		return v, nil // rare and large: not kept
	}
	c.mu.Lock()
	if len(c.m) >= MaxEntries {
		clear(c.m)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}

// Len is the number of values kept.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
