package sessionstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Redis is a [Store] in Redis, shared by every frontend of a cluster.
//
// # Key layout
//
// Every key of a session carries the session id as a hash tag, so the
// session lives on one Redis Cluster slot and each operation is an atomic
// Lua script given every key it touches. With P the key prefix and S the
// session id:
//
//	P:{S}:rec            HASH   the record, one field per Session member:
//	                            id, protocolVersion, logLevel, principal;
//	                            clientInfo and clientCapabilities as JSON;
//	                            initialized and clientInitialized as "1"/"0";
//	                            createdAt and lastSeen as unix milliseconds
//	                            (lastSeen: of the last write; Get and Begin
//	                            do not store it, they return the time of
//	                            the call); ver, the record's version (1,
//	                            then +1 per Update), which cached readers
//	                            compare; gen, the record's generation, set
//	                            by Create, random (records written before
//	                            it existed have none: theirs is "c" and
//	                            createdAt), which a claim carries
//	P:{S}:subs           SET    subscribed resource URIs
//	P:{S}:streams        HASH   stream name -> index of its newest event
//	                            (negated once EndStream ended the stream);
//	                            the index counter, and the list of the
//	                            session's event-log keys (no SCAN needed);
//	                            at most MaxStreamsPerSession fields
//	P:{S}:ev:<stream>    LIST   the stream's last MaxEvents event payloads,
//	                            oldest first; as indices are gapless, entry
//	                            i (from 0) of n has index newest-n+1+i
//	P:{S}:rq:<m>         STRING one in-flight request id: "#", the
//	                            generation of the session that claimed it,
//	                            "#" and the token of its claim, with the
//	                            claim's ttl as expiry (SET NX PX); m is the
//	                            unpadded base64url SHA-256 of the request
//	                            id, so no request id (braces, colons,
//	                            spaces, any bytes, any length) can displace
//	                            the hash tag or spell another key
//	P:{S}:rq             ZSET   written by older versions only, which
//	                            listed their claims there (member m, scored
//	                            by the claim's deadline) and stored the
//	                            token alone in the claim key: Create and
//	                            Delete still delete such claims with the
//	                            set, and Begin takes a claim without the
//	                            "#" head as live
//	P:{S}:once:<stream>  ZSET   the dedupe keys of the stream's last
//	                            MaxEvents appends made by AppendOnce, each
//	                            as its unpadded base64url SHA-256 (as rq
//	                            members), scored by the event's index; it
//	                            gets the log's expiry whenever the log
//	                            does, and goes with it
//	P:sub:{U}            SET    the ids of the sessions that subscribed to
//	                            the URI whose unpadded base64url SHA-256 is
//	                            U (Subscribers): not a session's key, so in
//	                            another slot, and without expiry; stale
//	                            entries stay until DropSubscriber
//
// rec, subs and streams all get the same expiry, which every call that
// extends the TTL slides together; an event log gets it on each append, so
// it never outlives the session but may expire earlier when the session
// is kept alive without appends. The counter in streams survives the log,
// so indices never restart within a session and EventsAfter can tell a
// lost log (ErrEventsPurged) from an empty one, as long as the stream keeps
// its field: EndStream negates it and shortens the log's expiry to
// EndedStreamGrace; the first append of a new stream is then followed by
// a sweep that drops the fields of ended streams whose log is gone, and,
// beyond MaxStreamsPerSession, the streams whose log expires first (ended
// ones, then the least recently appended) with their log. So streams holds
// no more fields than the cap and the streams of the last grace, whatever
// the session's age, but for the streams whose sweep has yet to run (or
// failed: see [Redis.AppendEvent]).
//
// The calls that slide the expiry push it to TTL plus a slack (TTL/100,
// at most a second: see slideSlack), and Get and Begin, the reads of
// every legacy request, only when it is less than TTL away: a busy
// session's keys are slid about once per slack, not on every read, and a
// session still lives at least TTL after its last call (at most TTL plus
// the slack).
//
// A claim key expires on its own, after the ttl given to Begin, whatever
// happens to the session; End deletes it (compare-and-delete on the
// token). Delete and the expiry of a session leave its claim keys to End
// or to their expiry, as nothing lists them: what releases them is the
// generation. Begin takes a claim holding another generation than the
// record's for none (a claim of an earlier session with this id), so a
// session created again starts without claims. So a legacy request costs
// Redis two script calls of seven commands together: Begin's PTTL, HMGET
// (the cached record's version, the generation) and SET NX PX, End's GET
// and DEL.
//
// Rolling upgrade from the layout with the rq set (frontends of both
// versions on one Redis): a claim conflicts with a claim of the same id
// made by either version (one key, SET NX), and each version ends its
// own. The difference while both run: a claim made by this version is
// not listed in rq, so an older frontend's Create over a used id (never
// done with [NewID]'s ids) or Delete leaves it to its End or expiry, and
// an older frontend's Begin on a session created again while such a
// claim lives would refuse its id. The rq sets of older frontends expire
// on their own once they no longer claim (their claims' ttl plus a
// second).
//
// Every method is one round trip: a Lua script run by EVALSHA (EVAL the
// first time a server sees it), atomic on the server. The exceptions:
// Subscribe, Unsubscribe and DropSubscriber also write the subscribers
// index, in its own slot (a few round trips, ordered so that a failure
// leaves a stale entry, never a subscription missing from the index; see
// [Redis.Subscribe]); Subscribers is an SMEMBERS and UseOnce a SET NX;
// AppendOnce is one script call per message, the whole batch in one
// pipeline; Create, Delete and the first append of a stream take a
// second round trip when they need the keys of the session's logs, once
// sets or claims (below). The scripts live in lua/*.lua, one file per
// script, embedded (see redis_scripts.go). Create is a create-if-absent;
// Update, Subscribe, Unsubscribe, AppendEvent, AppendEventSeq and
// AppendOnce check that the record exists before writing, so they never
// resurrect a deleted or expired session. Begin is Get's script plus the
// claim, End a compare-and-delete of the claim key.
//
// Every script touches only the keys it is given in KEYS (the rule stated
// in redis_scripts.go, which a test enforces). Create and Delete drop the
// event logs listed in streams (with their once sets) and the claims
// listed in rq (by older versions): their script is given those keys,
// which the Go side names from a first run that reports them, changing
// nothing, when they exist;
// the second run, atomic, checks that none is missing (else it reports
// those and changes nothing again). So Create (of a new id: one round
// trip) and Delete (two, if the session has streams or claims) stay one
// atomic step each. The sweep that follows the first append of a stream
// is a script of its own, given the keys of the streams that append.lua
// named (see [Redis.AppendEvent]). All the keys of a session share its
// hash tag, hence its slot, so each script, which declares them all, is
// routed to the one node that holds them. For the same reason, ids with
// a brace (which [NewID] never makes) are refused.
type Redis struct {
	client    redis.UniversalClient
	owned     bool // Close closes client
	prefix    string
	ttlMS     int64 // the TTL: Get and Begin slide an expiry nearer than this
	slidMS    int64 // ttlMS plus slideSlack: the expiry the slides set
	ttlArg    any   // ttlMS and slidMS as script arguments, boxed once
	slidArg   any
	trimFrom  int64 // -MaxEvents: the LTRIM start that keeps MaxEvents
	maxStrms  int64 // MaxStreamsPerSession; 0: no cap
	graceMS   int64 // EndedStreamGrace in ms; 0: at once
	closeOnce sync.Once
	closeErr  error
	batch     *batcher // nil: every call is its own round trip
	cache     *recordCache
	count     *sessionCounter // CountSessions (redis_count.go)
}

var (
	_ Store   = (*Redis)(nil)
	_ Pinger  = (*Redis)(nil)
	_ Counter = (*Redis)(nil)
)

// NewRedis returns a store on client, which the caller keeps owning:
// Close does not close it. Invalid options give an error wrapping
// ErrInvalidConfig, and so does RedisOptions.WaitReplicas (the store
// waits for replicas on the clients it makes: see [OpenRedis]);
// RedisOptions.Mode is ignored (client is whatever it is). NewRedis does
// no I/O; use Ping to check the server. For a context's deadline to
// bound each call, as [Store] promises, the client needs
// ContextTimeoutEnabled set in its options.
func NewRedis(client redis.UniversalClient, opts *RedisOptions) (*Redis, error) {
	if client == nil {
		return nil, fmt.Errorf("sessionstore: new redis store: %w: nil client", ErrInvalidConfig)
	}
	ro, err := resolveRedis(opts)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: new redis store: %w", err)
	}
	if ro.WaitReplicas > 0 {
		return nil, fmt.Errorf("sessionstore: new redis store: %w: WaitReplicas needs a client the store makes (OpenRedis)", ErrInvalidConfig)
	}
	return newRedis(client, ro), nil
}

// newRedis returns a store on client with the resolved options ro.
func newRedis(client redis.UniversalClient, ro RedisOptions) *Redis {
	r := &Redis{
		client:   client,
		prefix:   ro.KeyPrefix,
		ttlMS:    max(ro.TTL.Milliseconds(), 1), // PEXPIRE 0 would delete
		slidMS:   max(ro.TTL.Milliseconds(), 1) + slideSlack(ro.TTL).Milliseconds(),
		trimFrom: -int64(ro.MaxEvents),
		maxStrms: int64(max(ro.MaxStreamsPerSession, 0)),
		graceMS:  max(ro.EndedStreamGrace.Milliseconds(), 0),
		count:    newSessionCounter(max(ro.CountInterval, 0)),
	}
	r.ttlArg, r.slidArg = r.ttlMS, r.slidMS
	if !ro.NoBatching {
		r.batch = newBatcher(client)
	}
	if ro.CacheSize > 0 {
		r.cache = newRecordCache(ro.CacheSize)
	}
	return r
}

// run runs script for session id; it is the one place that reaches Redis
// for a session.
func (r *Redis) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if r.batch != nil {
		return r.batch.run(ctx, script, keys, args...)
	}
	return script.Run(ctx, r.client, keys, args...)
}

// validID reports whether id passes [ValidID] and has no brace. Ids from

// Ping implements [Pinger]: it checks that the server answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("sessionstore: ping redis: %w", err)
	}
	return nil
}

// Close stops the store's pipelines (after the round trips in flight) and
// closes the client if the store owns it (see [OpenRedis]); a store made
// by [NewRedis] leaves its client alone. Calls made after Close fail. It
// is idempotent; ctx is unused.
func (r *Redis) Close(context.Context) error {
	r.closeOnce.Do(func() {
		r.count.stop()
		if r.batch != nil {
			r.batch.close()
		}
		if r.owned {
			if err := r.client.Close(); err != nil {
				r.closeErr = fmt.Errorf("sessionstore: close redis store: %w", err)
			}
		}
	})
	return r.closeErr
}

// PoolStats returns the connection pool statistics of the store's client
// (a Redis Cluster's: of every node's pool together), read for the
// metrics.
func (r *Redis) PoolStats() *redis.PoolStats { return r.client.PoolStats() }
