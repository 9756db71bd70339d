package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Create implements [Store.Create]. Besides the ids [ValidID] refuses, it
// refuses ids with a brace. The create-if-absent and the wiping of an
// earlier session's leftovers are one atomic step (lua/create.lua): one
// round trip, two when there are leftovers, whose keys it must name (see
// runDropping).
func (r *Redis) Create(ctx context.Context, s *Session) error {
	if err := checkNew(s); err != nil {
		return err
	}
	if !r.validID(s.ID) {
		return fmt.Errorf("sessionstore: create %q: session id with a brace", shortID(s.ID))
	}
	info, caps, err := encodeJSONMembers(s)
	if err != nil {
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), err)
	}
	now := nowMilli()
	ms := now.UnixMilli()
	created, err := r.runDropping(ctx, scriptCreate, s.ID,
		r.slidMS,
		fieldID, s.ID,
		fieldProtocolVersion, s.ProtocolVersion,
		fieldClientInfo, info,
		fieldClientCapabilities, caps,
		fieldLogLevel, string(s.LogLevel),
		fieldInitialized, flag(s.Initialized),
		fieldClientInitialized, flag(s.ClientInitialized),
		fieldPrincipal, s.Principal,
		fieldCreatedAt, ms,
		fieldLastSeen, ms,
		fieldVersion, 1,
		fieldGen, newGeneration(),
	)
	switch {
	case err != nil:
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), err)
	case created == 0:
		return fmt.Errorf("sessionstore: create %q: %w", shortID(s.ID), ErrExists)
	}
	s.CreatedAt, s.LastSeen = now, now
	r.cache.drop(s.ID)
	return nil
}

// Get implements [Store.Get] in one round trip.
func (r *Redis) Get(ctx context.Context, id string) (*Session, error) {
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), ErrNotFound)
	}
	keys, _ := r.keys(id)
	now := nowMilli()
	cached := r.cache.get(id)
	reply, err := r.run(ctx, scriptGet, keys, r.ttlArg, r.slidArg, cached.version()).StringSlice()
	if errors.Is(err, redis.Nil) {
		err = ErrNotFound
		r.cache.drop(id)
	}
	if err != nil {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), err)
	}
	s, err := r.sessionFrom(id, reply, cached)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: get %q: %w", shortID(id), err)
	}
	s.LastSeen = now
	return s, nil
}

// sessionFrom builds the session of a Get or Begin reply: from the cached
// record when the reply says it is current ({"="}), else from the reply,
// which then refreshes the cache.
func (r *Redis) sessionFrom(id string, reply []string, cached *cachedRecord) (*Session, error) {
	if len(reply) == 1 && reply[0] == "=" {
		if cached == nil {
			return nil, fmt.Errorf("malformed reply: current version of an uncached record")
		}
		r.cache.hits.Add(1)
		return cached.session(), nil
	}
	c, err := decodeCached(reply)
	if err != nil {
		return nil, err
	}
	r.cache.put(id, c)
	return c.session(), nil
}

// decodeCached reads the HGETALL reply of a record. The JSON members are
// decoded once, here: each session handed out gets its own deep copy.
func decodeCached(kv []string) (*cachedRecord, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("malformed record: %d values", len(kv))
	}
	var (
		c          cachedRecord
		s          = &c.base
		info, caps []byte
		err        error
	)
	for i := 0; i < len(kv) && err == nil; i += 2 {
		v := kv[i+1]
		switch kv[i] {
		case fieldID:
			s.ID = v
		case fieldProtocolVersion:
			s.ProtocolVersion = v
		case fieldClientInfo:
			info = []byte(v)
		case fieldClientCapabilities:
			caps = []byte(v)
		case fieldLogLevel:
			s.LogLevel = protocol.LoggingLevel(v)
		case fieldInitialized:
			s.Initialized = v == "1"
		case fieldClientInitialized:
			s.ClientInitialized = v == "1"
		case fieldPrincipal:
			s.Principal = v
		case fieldCreatedAt:
			s.CreatedAt, err = parseMilli(v)
		case fieldLastSeen:
			s.LastSeen, err = parseMilli(v)
		case fieldVersion:
			c.ver, c.verArg = v, v
		}
	}
	if err != nil {
		return nil, fmt.Errorf("malformed record: %w", err)
	}
	if info == nil || caps == nil {
		return nil, fmt.Errorf("malformed record: client info or capabilities missing")
	}
	if c.mem, err = decodeMembers(info, caps); err != nil {
		return nil, err
	}
	return &c, nil
}

// Update implements [Store.Update].
func (r *Redis) Update(ctx context.Context, id string, p Patch) error {
	args := []any{r.slidMS, fieldLastSeen, nowMilli().UnixMilli()}
	if p.LogLevel != nil {
		args = append(args, fieldLogLevel, string(*p.LogLevel))
	}
	if p.ClientInitialized != nil {
		args = append(args, fieldClientInitialized, flag(*p.ClientInitialized))
	}
	return r.runLive(ctx, "update", id, scriptUpdate, args...)
}

// Delete implements [Store.Delete] in one atomic step (lua/delete.lua):
// one round trip for a session without streams or claims, else two, the
// first of which learns the keys of its logs, once sets and claims (see
// runDropping).
func (r *Redis) Delete(ctx context.Context, id string) error {
	if !r.validID(id) {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), ErrNotFound)
	}
	r.cache.drop(id)
	n, err := r.runDropping(ctx, scriptDelete, id)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), err)
	}
	return nil
}

// Subscribe implements [Store.Subscribe] in three round trips: SADD of
// id to uri's index P:sub:{<digest of uri>} (another slot than the
// session's, so it cannot be in the script), the subscribe script, and
// SADD again. Index first: a failure after it leaves a stale entry, never
// a subscription missing from the index. Again after: a DropSubscriber
// racing with this call (it saw the entry of the first SADD before the
// subscription was made) may have removed the first one.
func (r *Redis) Subscribe(ctx context.Context, id, uri string) error {
	if !r.validID(id) {
		return fmt.Errorf("sessionstore: subscribe %q: %w", shortID(id), ErrNotFound)
	}
	index := r.subscribersKey(uri)
	if err := r.client.SAdd(ctx, index, id).Err(); err != nil {
		return fmt.Errorf("sessionstore: subscribe %q: %w", shortID(id), err)
	}
	if err := r.runLive(ctx, "subscribe", id, scriptSubscribe, r.slidMS, nowMilli().UnixMilli(), "SADD", uri); err != nil {
		return err // a dead session: its entry is stale (removing it could race with a Create)
	}
	if err := r.client.SAdd(ctx, index, id).Err(); err != nil {
		return fmt.Errorf("sessionstore: subscribe %q: %w", shortID(id), err)
	}
	return nil
}

// Unsubscribe implements [Store.Unsubscribe]: the subscribe script, then
// the removal from uri's index (see unindex).
func (r *Redis) Unsubscribe(ctx context.Context, id, uri string) error {
	if err := r.runLive(ctx, "unsubscribe", id, scriptSubscribe, r.slidMS, nowMilli().UnixMilli(), "SREM", uri); err != nil {
		return err
	}
	if err := r.unindex(ctx, uri, id); err != nil {
		return fmt.Errorf("sessionstore: unsubscribe %q: %w", shortID(id), err)
	}
	return nil
}

// Subscribers implements [Sessions.Subscribers]: SMEMBERS of uri's index.
// The index has no TTL: the entries of sessions deleted or expired since
// they subscribed stay until DropSubscriber removes them.
func (r *Redis) Subscribers(ctx context.Context, uri string) ([]string, error) {
	ids, err := r.client.SMembers(ctx, r.subscribersKey(uri)).Result()
	if err != nil {
		return nil, fmt.Errorf("sessionstore: subscribers: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// DropSubscriber implements [Sessions.DropSubscriber] (see unindex).
func (r *Redis) DropSubscriber(ctx context.Context, uri, id string) error {
	if err := r.unindex(ctx, uri, id); err != nil {
		return fmt.Errorf("sessionstore: drop subscriber %q: %w", shortID(id), err)
	}
	return nil
}

// unindex removes id from uri's index, then puts it back if the session
// turns out to be subscribed to uri: a Subscribe racing with the removal
// (its second SADD came first, its script before this check) stays in
// the index. Two round trips, three when it puts the id back; an id
// refused by validID has no session to check.
func (r *Redis) unindex(ctx context.Context, uri, id string) error {
	index := r.subscribersKey(uri)
	if err := r.client.SRem(ctx, index, id).Err(); err != nil {
		return err
	}
	if !r.validID(id) {
		return nil
	}
	keys, _ := r.keys(id)
	subscribed, err := r.client.SIsMember(ctx, keys[1], uri).Result()
	if err != nil || !subscribed {
		return err
	}
	return r.client.SAdd(ctx, index, id).Err()
}

// runLive runs a script on session id that returns 0 when the session is
// not live and 1 otherwise.
func (r *Redis) runLive(ctx context.Context, op, id string, script *redis.Script, args ...any) error {
	if !r.validID(id) {
		return fmt.Errorf("sessionstore: %s %q: %w", op, shortID(id), ErrNotFound)
	}
	keys, _ := r.keys(id)
	n, err := r.run(ctx, script, keys, args...).Int64()
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sessionstore: %s %q: %w", op, shortID(id), err)
	}
	return nil
}

// Subscriptions implements [Store.Subscriptions].
func (r *Redis) Subscriptions(ctx context.Context, id string) ([]string, error) {
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: subscriptions %q: %w", shortID(id), ErrNotFound)
	}
	keys, _ := r.keys(id)
	uris, err := r.run(ctx, scriptSubscriptions, keys).StringSlice()
	if errors.Is(err, redis.Nil) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sessionstore: subscriptions %q: %w", shortID(id), err)
	}
	if uris == nil {
		uris = []string{}
	}
	slices.Sort(uris)
	return uris, nil
}
