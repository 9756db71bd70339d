package sessionstore

import (
	"context"
	"fmt"
	"slices"
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
// logs and in-flight claims live inside its entry and disappear with it;
// the janitor also drops the expired claims of live sessions.
type Memory struct {
	ttl       time.Duration
	maxEvents int
	maxCount  int   // MaxSessions; <= 0: no cap
	maxBytes  int64 // MaxSessionBytes; <= 0: no cap

	closeOnce   sync.Once
	stop        chan struct{} // closed by Close: tells the janitor to return
	janitorDone chan struct{} // closed by the janitor when it has returned

	// mu guards sessions and everything reachable from it.
	mu sync.Mutex
	// sessions maps ids to entries. Invariant: an entry whose expires is in
	// the past is dead: it is never returned, and whoever finds it removes
	// it.
	sessions map[string]*memSession
	// bytes is the sum of the sessions' info and caps.
	bytes int64
	// fullSwept is when a full store was last swept for room.
	fullSwept time.Time

	once    onceKeys   // UseOnce's registry, with its own lock
	records memRecords // CreateRecord's table, with its own lock
}

var (
	_ Store  = (*Memory)(nil)
	_ Pinger = (*Memory)(nil)
)

// memSession is one session's state, guarded by Memory.mu.
type memSession struct {
	rec        Session // ClientInfo and ClientCapabilities are left zero
	info, caps []byte  // JSON of ClientInfo and ClientCapabilities
	expires    time.Time
	subs       map[string]struct{}
	logs       map[string]*memLog
	logBytes   int    // the sum of the logs' bytes
	logSeq     uint64 // the last append's sequence number
	// claims maps the request ids claimed by Begin to their claims. An
	// entry whose expires is in the past is dead, like a dead session.
	claims map[string]memClaim
}

// memClaim is one in-flight request id of a session.
type memClaim struct {
	token   string
	expires time.Time
}

// memLog is one stream's event log.
type memLog struct {
	// newest is the index of the last event appended (0 before the first).
	newest uint64
	// events holds indices newest-len(events)+1 .. newest, oldest first,
	// at most maxEvents of them.
	events []Event
	// bytes is the size of events' data; seq orders the session's logs
	// by their last append.
	bytes int
	seq   uint64
}

// A session's event logs in a Memory store are bounded: at most
// maxSessionLogs logs and maxSessionLogBytes of event data. Past either,
// the logs appended to least recently go first (a client resuming one
// learns that its events are gone), then the oldest events of the log
// being appended to.
const (
	maxSessionLogs     = 256
	maxSessionLogBytes = 16 << 20
)

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
		maxCount:    o.MaxSessions,
		maxBytes:    o.MaxSessionBytes,
		stop:        make(chan struct{}),
		janitorDone: make(chan struct{}),
		sessions:    make(map[string]*memSession),
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
// now of the others.
func (m *Memory) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
}

// sweepLocked is sweep with m.mu held.
func (m *Memory) sweepLocked(now time.Time) {
	for id, s := range m.sessions {
		if !now.Before(s.expires) {
			m.remove(id, s)
			continue
		}
		for rid, c := range s.claims {
			if !now.Before(c.expires) {
				delete(s.claims, rid)
			}
		}
	}
}

// live returns the live session id, evicting it if it has expired, or nil.
// The caller holds m.mu.
func (m *Memory) live(id string, now time.Time) *memSession {
	s := m.sessions[id]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		m.remove(id, s)
		return nil
	}
	return s
}

// remove forgets session id, whose entry is s. The caller holds m.mu.
func (m *Memory) remove(id string, s *memSession) {
	delete(m.sessions, id)
	m.bytes -= int64(len(s.info) + len(s.caps))
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
	s.expires = now.Add(m.ttl)
	s.rec.LastSeen = time.UnixMilli(now.UnixMilli()).UTC()
}

// Create implements [Store.Create].
func (m *Memory) Create(ctx context.Context, s *Session) error {
	if err := checkNew(s); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), err)
	}
	info, caps, err := encodeJSONMembers(s)
	if err != nil {
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live(s.ID, now) != nil {
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), ErrExists)
	}
	size := int64(len(info) + len(caps))
	if m.full(size, now) {
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), ErrFull)
	}
	m.bytes += size
	ms := &memSession{rec: *s, info: info, caps: caps}
	ms.rec.ClientInfo = protocol.Implementation{}
	ms.rec.ClientCapabilities = protocol.ClientCapabilities{}
	m.touch(ms, now)
	ms.rec.CreatedAt = ms.rec.LastSeen
	m.sessions[s.ID] = ms
	s.CreatedAt, s.LastSeen = ms.rec.CreatedAt, ms.rec.LastSeen
	return nil
}

// Get implements [Store.Get].
func (m *Memory) Get(ctx context.Context, id string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	ms := m.live(id, now)
	if ms == nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), ErrNotFound)
	}
	m.touch(ms, now)
	s := ms.rec
	info, caps := ms.info, ms.caps // immutable once stored
	m.mu.Unlock()

	if err := decodeJSONMembers(&s, info, caps); err != nil {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), err)
	}
	return &s, nil
}

// Begin implements [Store.Begin].
func (m *Memory) Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*Session, error) {
	if err := checkClaimTTL(id, ttl); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	ms := m.live(id, now)
	if ms == nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrNotFound)
	}
	m.touch(ms, now)
	c, inFlight := ms.claims[requestID]
	inFlight = inFlight && now.Before(c.expires)
	if !inFlight {
		if ms.claims == nil {
			ms.claims = make(map[string]memClaim)
		}
		ms.claims[requestID] = memClaim{token: token, expires: now.Add(ttl)}
	}
	s := ms.rec
	info, caps := ms.info, ms.caps // immutable once stored
	m.mu.Unlock()

	if err := decodeJSONMembers(&s, info, caps); err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	if inFlight {
		return &s, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrInFlight)
	}
	return &s, nil
}

// End implements [Store.End].
func (m *Memory) End(ctx context.Context, id, requestID, token string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: end %q: %w", shortID(id), err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, now)
	if s == nil {
		return nil
	}
	// A dead claim is dropped whoever it belonged to: it is gone anyway.
	if c, ok := s.claims[requestID]; ok && (c.token == token || !now.Before(c.expires)) {
		delete(s.claims, requestID)
	}
	return nil
}

// Update implements [Store.Update].
func (m *Memory) Update(ctx context.Context, id string, p Patch) error {
	return m.withLive(ctx, "update", id, true, func(s *memSession) {
		if p.LogLevel != nil {
			s.rec.LogLevel = *p.LogLevel
		}
		if p.ClientInitialized != nil {
			s.rec.ClientInitialized = *p.ClientInitialized
		}
	})
}

// Delete implements [Store.Delete].
func (m *Memory) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, time.Now())
	if s == nil {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), ErrNotFound)
	}
	m.remove(id, s)
	return nil
}

// Subscribe implements [Store.Subscribe].
func (m *Memory) Subscribe(ctx context.Context, id, uri string) error {
	return m.withLive(ctx, "subscribe", id, true, func(s *memSession) {
		if s.subs == nil {
			s.subs = make(map[string]struct{})
		}
		s.subs[uri] = struct{}{}
	})
}

// Unsubscribe implements [Store.Unsubscribe].
func (m *Memory) Unsubscribe(ctx context.Context, id, uri string) error {
	return m.withLive(ctx, "unsubscribe", id, true, func(s *memSession) {
		delete(s.subs, uri)
	})
}

// Subscriptions implements [Store.Subscriptions].
func (m *Memory) Subscriptions(ctx context.Context, id string) ([]string, error) {
	uris := []string{}
	err := m.withLive(ctx, "subscriptions", id, false, func(s *memSession) {
		for uri := range s.subs {
			uris = append(uris, uri)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(uris)
	return uris, nil
}

// AppendEvent implements [Store.AppendEvent].
func (m *Memory) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	ev := Event{Data: slices.Clone(data)}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	err := m.withLive(ctx, "append event", id, true, func(s *memSession) {
		if s.logs == nil {
			s.logs = make(map[string]*memLog)
		}
		l := s.logs[stream]
		if l == nil {
			l = &memLog{}
			s.logs[stream] = l
		}
		l.newest++
		ev.Index = l.newest
		l.events = append(l.events, ev)
		l.bytes += len(ev.Data)
		s.logBytes += len(ev.Data)
		s.logSeq++
		l.seq = s.logSeq
		drop := len(l.events) - m.maxEvents
		for s.logBytes-eventBytes(l.events[:max(drop, 0)]) > maxSessionLogBytes && len(s.logs) > 1 {
			s.dropOldestLog(l)
		}
		for drop < len(l.events)-1 && s.logBytes-eventBytes(l.events[:max(drop, 0)]) > maxSessionLogBytes {
			drop++
		}
		if drop > 0 {
			// Reslicing keeps the append amortised O(1); clearing the
			// dropped slots lets their data be collected before the
			// backing array is reallocated.
			n := eventBytes(l.events[:drop])
			l.bytes -= n
			s.logBytes -= n
			clear(l.events[:drop])
			l.events = l.events[drop:]
		}
		for len(s.logs) > maxSessionLogs {
			s.dropOldestLog(l)
		}
	})
	if err != nil {
		return 0, err
	}
	return ev.Index, nil
}

// EventsAfter implements [Store.EventsAfter].
func (m *Memory) EventsAfter(ctx context.Context, id, stream string, after uint64) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.live(id, time.Now())
	if s == nil {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrNotFound)
	}
	var newest uint64
	var kept []Event
	if l := s.logs[stream]; l != nil {
		newest, kept = l.newest, l.events
	}
	switch eventWindow(after, newest, len(kept)) {
	case windowPurged:
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrEventsPurged)
	case windowEmpty:
		return []Event{}, nil
	}
	kept = kept[len(kept)-int(newest-after):]
	events := make([]Event, len(kept))
	for i, e := range kept {
		events[i] = Event{Index: e.Index, Data: slices.Clone(e.Data)}
	}
	return events, nil
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

func eventBytes(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// dropOldestLog removes the log appended to least recently, other than
// keep. The caller holds the store's lock.
func (s *memSession) dropOldestLog(keep *memLog) {
	var oldest string
	var old *memLog
	for name, l := range s.logs {
		if l != keep && (old == nil || l.seq < old.seq) {
			oldest, old = name, l
		}
	}
	if old == nil {
		return
	}
	s.logBytes -= old.bytes
	delete(s.logs, oldest)
}
