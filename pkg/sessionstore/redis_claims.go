package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Begin implements [Store.Begin] in one round trip, like Get. Besides the
// ids [ValidID] refuses, it reports ErrNotFound for ids with a brace,
// which never name a session. The claim is one key, SET NX PX, holding
// the session's generation and the token (lua/begin.lua): a claim left by
// an earlier session with the same id is not one of this session's.
func (r *Redis) Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*Session, error) {
	if err := checkClaimTTL(id, ttl); err != nil {
		return nil, err
	}
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrNotFound)
	}
	keys := r.beginKeys(id, requestID)
	now := nowMilli()
	cached := r.cache.get(id)
	reply, err := r.run(ctx, scriptBegin, keys,
		r.ttlArg, r.slidArg, token, max(ttl.Milliseconds(), 1), cached.version()).StringSlice()
	switch {
	case errors.Is(err, redis.Nil):
		err = ErrNotFound
		r.cache.drop(id)
	case err == nil && (len(reply) == 0 || reply[0] != "0" && reply[0] != "1"):
		err = fmt.Errorf("malformed begin reply")
	}
	if err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	s, err := r.sessionFrom(id, reply[1:], cached)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), err)
	}
	s.LastSeen = now
	if reply[0] == "0" {
		return s, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrInFlight)
	}
	return s, nil
}

// End implements [Store.End] in one round trip: a compare-and-delete of
// the claim key (lua/end.lua). It does not look at the session record:
// the claim key alone says whether there is a claim. On a Redis that is
// not a cluster, the Ends of one pipeline go as one script call
// (batch.go).
func (r *Redis) End(ctx context.Context, id, requestID, token string) error {
	if !r.validID(id) {
		return nil
	}
	if err := r.run(ctx, scriptEnd, r.endKeys(id, requestID), token).Err(); err != nil {
		return fmt.Errorf("sessionstore: end %q: %w", shortID(id), err)
	}
	return nil
}
