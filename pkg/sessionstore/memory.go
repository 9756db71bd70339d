package sessionstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Memory is a [Store] that keeps everything in the process: the supported
// store of a single-process deployment, not a test double.
//
// Expired sessions are evicted lazily by any call that finds them, and by a
// janitor goroutine (started by [NewMemory], stopped by [Memory.Close]) so
// that abandoned sessions do not pile up. A session's subscriptions, event
// logs and in-flight claims live inside its entry and disappear with it
// (so do its entries in the index of Subscribers, which is exact: no
// stale entries); the janitor also drops the expired claims of live
// sessions.
type Memory struct {
	ttl       time.Duration
	maxEvents int
	maxLogs   int           // MaxStreamsPerSession; <= 0: no cap
	grace     time.Duration // EndedStreamGrace; <= 0: at once
	maxCount  int           // MaxSessions; <= 0: no cap
	maxBytes  int64         // MaxSessionBytes; <= 0: no cap

	closeOnce   sync.Once
	stop        chan struct{} // closed by Close: tells the janitor to return
	janitorDone chan struct{} // closed by the janitor when it has returned

	// mu guards sessions and everything reachable from it.
	mu sync.Mutex
	// sessions maps ids to entries. Invariant: an entry whose expires is in
	// the past is dead: it is never returned, and whoever finds it removes
	// it.
	sessions map[string]*memSession
	// kinds are the declarations of the live sessions, each shared by the
	// sessions declaring the same (see memKind).
	kinds map[uint64]*memKind
	seed  maphash.Seed // of the keys of kinds
	// base is the origin of the store's monotonic clock (see since).
	base time.Time
	// subscribers indexes the subscriptions: uri -> the ids of the
	// sessions in sessions subscribed to it (an empty set is deleted).
	subscribers map[string]map[string]struct{}
	// bytes is the sum of the sessions' info and caps.
	bytes int64
	// fullSwept is when a full store was last swept for room.
	fullSwept time.Time

	once    onceKeys   // UseOnce's registry, with its own lock
	records memRecords // CreateRecord's table, with its own lock
}

var (
	_ Store     = (*Memory)(nil)
	_ Immediate = (*Memory)(nil)
	_ Pinger    = (*Memory)(nil)
)

// memSession is one session's state, guarded by Memory.mu. It is small
// (64 bytes, issue 21): what sessions declare alike is shared (kind), the
// times are integers, and what an idle session does not have (its
// subscriptions, claims and event logs) is behind a pointer that stays nil
// while it has none.
type memSession struct {
	kind     *memKind // ProtocolVersion, Principal, ClientInfo, ClientCapabilities
	logLevel protocol.LoggingLevel
	// created and lastSeen are Unix milliseconds (CreatedAt, LastSeen);
	// expires is on the store's monotonic clock (see Memory.since).
	created, lastSeen, expires     int64
	initialized, clientInitialized bool
	more                           *memMore
}

// memMore is what a session holds once it subscribes, claims a request id
// or logs an event; the janitor drops its empty maps, and it when all are
// gone (see memSession.shrink), so a session that has gone idle holds
// none of it.
type memMore struct {
	subs     map[string]struct{}
	logs     map[string]*memLog
	logBytes int    // the sum of the logs' bytes
	logSeq   uint64 // the last append's sequence number
	// claims maps the request ids claimed by Begin to their claims. An
	// entry whose expires is in the past is dead, like a dead session.
	claims map[string]memClaim
}

// grow returns s.more, allocating it if s has none.
func (s *memSession) grow() *memMore {
	if s.more == nil {
		s.more = &memMore{}
	}
	return s.more
}

// shrink drops the maps of s that are empty, and s.more when nothing is
// left in it.
func (s *memSession) shrink() {
	x := s.more
	if x == nil {
		return
	}
	if len(x.subs) == 0 {
		x.subs = nil
	}
	if len(x.claims) == 0 {
		x.claims = nil
	}
	if len(x.logs) == 0 {
		x.logs = nil
	}
	if x.subs == nil && x.claims == nil && x.logs == nil {
		s.more = nil
	}
}

// subscribed reports whether s is subscribed to uri.
func (s *memSession) subscribed(uri string) bool {
	if s.more == nil {
		return false
	}
	_, ok := s.more.subs[uri]
	return ok
}

// log returns the event log of stream, or nil.
func (s *memSession) log(stream string) *memLog {
	if s.more == nil {
		return nil
	}
	return s.more.logs[stream]
}

// session returns the record of s, whose id is id, without its JSON
// members (see memKind.decode).
func (s *memSession) session(id string) Session {
	return Session{
		ID:                id,
		ProtocolVersion:   s.kind.proto,
		LogLevel:          s.logLevel,
		Initialized:       s.initialized,
		ClientInitialized: s.clientInitialized,
		Principal:         s.kind.principal,
		CreatedAt:         time.UnixMilli(s.created).UTC(),
		LastSeen:          time.UnixMilli(s.lastSeen).UTC(),
	}
}

// ImmediateSessions implements [Immediate]: Get, Begin and End only take
// the store's mutex.
func (m *Memory) ImmediateSessions() {}

// Janitor sweep bounds: half the TTL, within these limits.
const (
	minSweep = 10 * time.Millisecond
	maxSweep = time.Minute
)

// NewMemory returns a memory store with the given options (nil means the
// defaults) and starts its janitor; call Close to stop it. Invalid options
// give an error wrapping ErrInvalidConfig.
func NewMemory(opts *Options) (*Memory, error) {
	o, err := resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: new memory store: %w", err)
	}
	m := &Memory{
		ttl:         o.TTL,
		maxEvents:   o.MaxEvents,
		maxLogs:     o.MaxStreamsPerSession,
		grace:       o.EndedStreamGrace,
		maxCount:    o.MaxSessions,
		maxBytes:    o.MaxSessionBytes,
		stop:        make(chan struct{}),
		janitorDone: make(chan struct{}),
		sessions:    make(map[string]*memSession),
		kinds:       make(map[uint64]*memKind),
		seed:        maphash.MakeSeed(),
		base:        time.Now(),
		subscribers: make(map[string]map[string]struct{}),
	}
	go m.janitor(min(max(o.TTL/2, minSweep), maxSweep))
	return m, nil
}

// janitor removes expired sessions every interval until Close.
func (m *Memory) janitor(interval time.Duration) {
	defer close(m.janitorDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.sweep(time.Now())
		}
	}
}

// sweep removes every session expired at now, and the claims expired at
// now of the others, which it shrinks.
func (m *Memory) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
}

// sweepLocked is sweep with m.mu held.
func (m *Memory) sweepLocked(now time.Time) {
	for id, s := range m.sessions {
		if m.since(now) >= s.expires {
			m.remove(id, s)
			continue
		}
		if s.more == nil {
			continue
		}
		for rid, c := range s.more.claims {
			if !now.Before(c.expires) {
				delete(s.more.claims, rid)
			}
		}
		s.shrink()
	}
}

// live returns the live session id, evicting it if it has expired, or nil.
// The caller holds m.mu.
func (m *Memory) live(id string, now time.Time) *memSession {
	s := m.sessions[id]
	if s == nil {
		return nil
	}
	if m.since(now) >= s.expires {
		m.remove(id, s)
		return nil
	}
	return s
}

// since is now on the store's monotonic clock: the nanoseconds since the
// store was made (wall clock changes do not move the expiries).
func (m *Memory) since(now time.Time) int64 {
	return int64(now.Sub(m.base))
}

// remove forgets session id, whose entry is s, and its subscriptions'
// index entries. The caller holds m.mu.
func (m *Memory) remove(id string, s *memSession) {
	delete(m.sessions, id)
	m.bytes -= s.kind.size()
	m.release(s.kind)
	if s.more != nil {
		for uri := range s.more.subs {
			m.unindex(uri, id)
		}
	}
}

// unindex removes id from uri's subscribers. The caller holds m.mu.
func (m *Memory) unindex(uri, id string) {
	ids := m.subscribers[uri]
	delete(ids, id)
	if len(ids) == 0 {
		delete(m.subscribers, uri)
	}
}

// full reports whether a session declaring size bytes would exceed the
// capacity, once the expired sessions are gone. The caller holds m.mu.
func (m *Memory) full(size int64, now time.Time) bool {
	over := func() bool {
		return m.maxCount > 0 && len(m.sessions) >= m.maxCount || m.maxBytes > 0 && m.bytes+size > m.maxBytes
	}
	if !over() {
		return false
	}
	if now.Sub(m.fullSwept) >= time.Second { // refusals stay cheap
		m.fullSwept = now
		m.sweepLocked(now)
	}
	return over()
}

// touch slides the expiry of s and records the access. The caller holds
// m.mu.
func (m *Memory) touch(s *memSession, now time.Time) {
	s.expires = m.since(now) + int64(m.ttl)
	s.lastSeen = now.UnixMilli()
}

// withLive runs f on the live session id under m.mu, sliding its TTL first
// if touch is set, and reports ErrNotFound if there is none.
func (m *Memory) withLive(ctx context.Context, op, id string, touch bool, f func(*memSession)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: %s %q: %w", op, shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return fmt.Errorf("sessionstore: %s %q: %w", op, shortID(id), ErrNotFound)
	}
	if touch {
		m.touch(s, now)
	}
	f(s)
	return nil
}

// Ping implements [Pinger]; a memory store is always reachable.
func (m *Memory) Ping(context.Context) error { return nil }

// Close stops the janitor and waits for it to return, or until ctx is
// done. It is idempotent. The sessions are kept, so a closed store still
// answers, but expired sessions are then only evicted when accessed.
func (m *Memory) Close(ctx context.Context) error {
	m.closeOnce.Do(func() { close(m.stop) })
	select {
	case <-m.janitorDone:
		return nil
	default:
	}
	select {
	case <-m.janitorDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sessionstore: close memory store: %w", ctx.Err())
	}
}
