package sessionstore

import (
	"sync"
	"sync/atomic"
)

// cachedRecord is a session record as read from Redis, at one version.
// It is never modified once cached.
type cachedRecord struct {
	ver    string // "" for records without a version: never current
	verArg any    // ver as a script argument, boxed once
	base   Session
	mem    *members // the JSON members, decoded once, copied per session
}

// version is the version to send to Redis ("" for none; nil-safe), as a
// script argument.
func (c *cachedRecord) version() any {
	if c == nil || c.verArg == nil {
		return ""
	}
	return c.verArg
}

// session returns a new copy of the record; nothing is shared with the
// cache.
func (c *cachedRecord) session() *Session {
	s := c.base
	c.mem.copyTo(&s)
	return &s
}

// recordCache holds records by session id, at most max of them (an
// arbitrary one is dropped to make room). A record is kept from its
// second read on: the first only marks the id as seen, so the many
// sessions that are opened and then stay idle cost next to nothing. A nil
// cache caches nothing.
type recordCache struct {
	hits atomic.Int64 // replies answered from the cache (for tests)
	mu   sync.Mutex
	max  int
	recs map[string]*cachedRecord
}

func newRecordCache(max int) *recordCache {
	return &recordCache{max: max, recs: map[string]*cachedRecord{}}
}

// seenOnce marks an id read once.
var seenOnce = &cachedRecord{}

func (c *recordCache) get(id string) *cachedRecord {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.recs[id]; r != seenOnce {
		return r
	}
	return nil
}

func (c *recordCache) put(id string, r *cachedRecord) {
	if c == nil || r.ver == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, seen := c.recs[id]
	if !seen {
		if len(c.recs) >= c.max {
			for k := range c.recs {
				delete(c.recs, k)
				break
			}
		}
		r = seenOnce
	}
	c.recs[id] = r
}

func (c *recordCache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.recs, id)
}

// len returns the number of cached records.
func (c *recordCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}
