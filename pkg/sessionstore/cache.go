package sessionstore

import (
	"sync"
	"sync/atomic"
)

// cachedRecord is a session record as read from Redis, at one version.
// It is never modified once cached.
type cachedRecord struct {
	ver        string // "" for records without a version: never current
	base       Session
	info, caps []byte // the JSON members, decoded per session handed out
}

// version is the version to send to Redis ("" for none; nil-safe).
func (c *cachedRecord) version() string {
	if c == nil {
		return ""
	}
	return c.ver
}

// session returns a new copy of the record; nothing is shared with the
// cache.
func (c *cachedRecord) session() (*Session, error) {
	s := c.base
	if err := decodeJSONMembers(&s, c.info, c.caps); err != nil {
		return nil, err
	}
	return &s, nil
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
