package sessionstore

import (
	"context"
	"fmt"
	"slices"
	"time"
)

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
	hash := kindHash(m.seed, s, info, caps)
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
	ms := &memSession{
		kind:              m.acquire(s, info, caps, hash),
		logLevel:          internLevel(s.LogLevel),
		initialized:       s.Initialized,
		clientInitialized: s.ClientInitialized,
	}
	m.touch(ms, now)
	ms.created = ms.lastSeen
	m.sessions[s.ID] = ms
	s.CreatedAt = time.UnixMilli(ms.created).UTC()
	s.LastSeen = s.CreatedAt
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
	s := ms.session(id)
	kind := ms.kind // immutable
	m.mu.Unlock()

	if err := kind.decode(&s); err != nil {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), err)
	}
	return &s, nil
}

// Update implements [Store.Update].
func (m *Memory) Update(ctx context.Context, id string, p Patch) error {
	return m.withLive(ctx, "update", id, true, func(s *memSession) {
		if p.LogLevel != nil {
			s.logLevel = internLevel(*p.LogLevel)
		}
		if p.ClientInitialized != nil {
			s.clientInitialized = *p.ClientInitialized
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
		x := s.grow()
		if x.subs == nil {
			x.subs = make(map[string]struct{})
		}
		x.subs[uri] = struct{}{}
		ids := m.subscribers[uri]
		if ids == nil {
			ids = make(map[string]struct{})
			m.subscribers[uri] = ids
		}
		ids[id] = struct{}{}
	})
}

// Unsubscribe implements [Store.Unsubscribe].
func (m *Memory) Unsubscribe(ctx context.Context, id, uri string) error {
	return m.withLive(ctx, "unsubscribe", id, true, func(s *memSession) {
		if s.subscribed(uri) {
			delete(s.more.subs, uri)
			m.unindex(uri, id)
		}
	})
}

// Subscribers implements [Sessions.Subscribers]. The index of a memory
// store is exact: only live sessions subscribed to uri are listed.
func (m *Memory) Subscribers(ctx context.Context, uri string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: subscribers: %w", err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.subscribers[uri]))
	for id := range m.subscribers[uri] {
		if m.live(id, now) != nil { // evicts (and unindexes) an expired one
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// DropSubscriber implements [Sessions.DropSubscriber]: a live session
// subscribed to uri is kept.
func (m *Memory) DropSubscriber(ctx context.Context, uri, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionstore: drop subscriber: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.live(id, time.Now()); s != nil {
		if s.subscribed(uri) {
			return nil
		}
	}
	m.unindex(uri, id)
	return nil
}

// Subscriptions implements [Store.Subscriptions].
func (m *Memory) Subscriptions(ctx context.Context, id string) ([]string, error) {
	uris := []string{}
	err := m.withLive(ctx, "subscriptions", id, false, func(s *memSession) {
		if s.more == nil {
			return
		}
		for uri := range s.more.subs {
			uris = append(uris, uri)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(uris)
	return uris, nil
}
