package sessionstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Redis is a [Store] in Redis, shared by every frontend of a cluster.
//
// # Key layout
//
// Every key of a session carries the session id as a hash tag, so the
// session lives on one Redis Cluster slot and each operation is one atomic
// Lua script. With P the key prefix and S the session id:
//
//	P:{S}:rec            HASH   the record, one field per Session member:
//	                            id, protocolVersion, logLevel, principal;
//	                            clientInfo and clientCapabilities as JSON;
//	                            initialized and clientInitialized as "1"/"0";
//	                            createdAt and lastSeen as unix milliseconds;
//	                            ver, the record's version (1, then +1 per
//	                            Update), which cached readers compare
//	P:{S}:subs           SET    subscribed resource URIs
//	P:{S}:streams        HASH   stream name -> index of its newest event;
//	                            the index counter, and the list of the
//	                            session's event-log keys (no SCAN needed)
//	P:{S}:ev:<stream>    LIST   the stream's last MaxEvents event payloads,
//	                            oldest first; as indices are gapless, entry
//	                            i (from 0) of n has index newest-n+1+i
//	P:{S}:rq             ZSET   the session's in-flight claims: member m of
//	                            each claim key below, scored by the claim's
//	                            deadline (server TIME, unix milliseconds);
//	                            the list of claim keys, as streams is that
//	                            of event-log keys
//	P:{S}:rq:<m>         STRING one in-flight request id: the token of its
//	                            claim, with the claim's ttl as expiry (SET NX
//	                            PX); m is the unpadded base64url SHA-256 of
//	                            the request id, so no request id (braces,
//	                            colons, spaces, any bytes, any length) can
//	                            displace the hash tag or spell another key
//
// rec, subs and streams all get the same expiry, which every call that
// extends the TTL slides together; an event log gets it on each append, so
// it never outlives the session but may expire earlier when the session
// is kept alive without appends. The counter in streams survives the log,
// so indices never restart within a session and EventsAfter can tell a
// lost log (ErrEventsPurged) from an empty one.
//
// A claim key expires on its own, after the ttl given to Begin, whatever
// happens to the session. The rq set is kept alive as long as the claims
// it lists (Begin extends its expiry to the new claim's ttl plus a slack
// of a second when that is longer), so that Create and Delete always find
// every claim left; End removes its claim's member, and Begin drops the
// members whose deadline passed more than the slack ago (claims of a
// frontend that crashed), so the set stays as small as the number of
// requests in flight.
//
// Every method is one round trip: a Lua script run by EVALSHA (EVAL the
// first time a server sees it), atomic on the server. Create is a
// create-if-absent; Update, Subscribe, Unsubscribe and AppendEvent check
// that the record exists before writing, so they never resurrect a
// deleted or expired session. Create and Delete drop the event logs listed
// in streams and the claims listed in rq. Begin is Get's script plus the
// claim, End a compare-and-delete of the claim key. The scripts touch
// event-log and claim keys they derive from a prefix rather than receive
// in KEYS; that is sound because those keys share the session's hash tag,
// hence its slot. For the same reason, ids with a
// brace (which [NewID] never makes) are refused.
type Redis struct {
	client    redis.UniversalClient
	owned     bool // Close closes client
	prefix    string
	ttlMS     int64
	trimFrom  int64 // -MaxEvents: the LTRIM start that keeps MaxEvents
	closeOnce sync.Once
	closeErr  error
	batch     *batcher // nil: every call is its own round trip
	cache     *recordCache
}

var (
	_ Store  = (*Redis)(nil)
	_ Pinger = (*Redis)(nil)
)

// DefaultKeyPrefix is the key prefix when RedisOptions.KeyPrefix is empty.
const DefaultKeyPrefix = "mcp"

// RedisOptions configure a [Redis] store. The zero value is valid.
type RedisOptions struct {
	Options
	// KeyPrefix starts every key of the store, so several deployments (or
	// tests) can share a database. Empty means DefaultKeyPrefix. It must
	// not contain '{' or '}', which would displace the session hash tag.
	KeyPrefix string
	// NoBatching sends every call in its own round trip. By default calls
	// made while others are in flight share one pipeline (group commit):
	// fewer system calls on a busy frontend and on Redis, and no added
	// wait when idle.
	NoBatching bool
	// CacheSize caps the session records kept decoded in this process.
	// A cached record is only used after Redis confirmed, in the same
	// round trip that touches the session, that its version is current,
	// so a DELETE, an expiry or an update made anywhere is seen at once;
	// the cache saves transferring and decoding the record. Zero means
	// 10000; negative disables it.
	CacheSize int
}

// Record field names in the P:{S}:rec hash.
const (
	fieldID                 = "id"
	fieldProtocolVersion    = "protocolVersion"
	fieldClientInfo         = "clientInfo"
	fieldClientCapabilities = "clientCapabilities"
	fieldLogLevel           = "logLevel"
	fieldInitialized        = "initialized"
	fieldClientInitialized  = "clientInitialized"
	fieldPrincipal          = "principal"
	fieldCreatedAt          = "createdAt"
	fieldLastSeen           = "lastSeen"
	// fieldVersion counts the record's changes: 1 at creation, one more
	// per Update. Readers that cached the record send the version they
	// hold and get a short answer while it is current.
	fieldVersion = "ver"
)

// The scripts share one calling convention: KEYS[1] rec, KEYS[2] subs,
// KEYS[3] streams, and for the event scripts KEYS[4] the stream's log.
// luaTouch slides the session's expiry; PEXPIRE on a missing key is a no-op.
const luaTouch = `
local function touch(ttl)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
`

// luaRecord's record(v) is the reply for a reader that holds version v of
// the record ("" for none): {"="} when v is current, else the record.
const luaRecord = `
local function record(v)
  if v ~= '' and redis.call('HGET', KEYS[1], 'ver') == v then return {'='} end
  return redis.call('HGETALL', KEYS[1])
end
`

// luaDropLogs deletes every event log listed in streams; ARGV[1] is the
// event-log key prefix.
const luaDropLogs = `
local function droplogs()
  for _, s in ipairs(redis.call('HKEYS', KEYS[3])) do
    redis.call('DEL', ARGV[1] .. s)
  end
  redis.call('DEL', KEYS[2], KEYS[3])
end
`

// luaDropClaims deletes every claim listed in the rq set KEYS[4], whose
// name followed by ':' is the prefix of the claim keys, and the set.
const luaDropClaims = `
local function dropclaims()
  for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    redis.call('DEL', KEYS[4] .. ':' .. m)
  end
  redis.call('DEL', KEYS[4])
end
`

// claimSlack is how long, in milliseconds, a member of the rq set is kept
// after its claim's deadline, and the rq set after the claim's expiry: a
// margin for the gap between the TIME that scores a claim and the expiry
// that Redis gives its key.
const claimSlack = 1000

var (
	// KEYS[4] rq. ARGV: logprefix, ttl, field, value, ... -> 1 created,
	// 0 exists. Leftovers of an earlier session with this id are wiped
	// first.
	scriptCreate = redis.NewScript(luaDropLogs + luaDropClaims + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
droplogs()
dropclaims()
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

	// ARGV: ttl, now, cached version ("" if none) -> nil if there is no
	// record; {"="} if the record's version is the cached one; else the
	// record's HGETALL.
	scriptGet = redis.NewScript(luaTouch + luaRecord + `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
return record(ARGV[3])
`)

	// KEYS[4] rq, KEYS[5] the claim. ARGV: ttl, now, token, claim ttl,
	// claim member, cached version -> nil if there is no record; else
	// Get's reply (the record or {"="}) preceded by '1' if the claim was
	// made, '0' if the request id was already in flight. The session is
	// touched either way.
	scriptBegin = redis.NewScript(luaTouch + luaRecord + `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
local rec = record(ARGV[6])
if not redis.call('SET', KEYS[5], ARGV[3], 'NX', 'PX', ARGV[4]) then
  table.insert(rec, 1, '0')
  return rec
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - ` + strconv.Itoa(claimSlack) + `)
redis.call('ZADD', KEYS[4], now + ttl, ARGV[5])
if redis.call('PTTL', KEYS[4]) < ttl + ` + strconv.Itoa(claimSlack) + ` then
  redis.call('PEXPIRE', KEYS[4], ttl + ` + strconv.Itoa(claimSlack) + `)
end
table.insert(rec, 1, '1')
return rec
`)

	// KEYS[1] rq, KEYS[2] the claim. ARGV: token, claim member -> 1
	// released, 0 otherwise. A member whose claim is gone is dropped too.
	scriptEnd = redis.NewScript(`
local v = redis.call('GET', KEYS[2])
if v and v ~= ARGV[1] then return 0 end
if v then redis.call('DEL', KEYS[2]) end
redis.call('ZREM', KEYS[1], ARGV[2])
if v then return 1 end
return 0
`)

	// ARGV: ttl, field, value, ... (always lastSeen) -> 1, or 0 if absent.
	// The record's version goes up by one.
	scriptUpdate = redis.NewScript(luaTouch + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HINCRBY', KEYS[1], 'ver', 1)
touch(ARGV[1])
return 1
`)

	// KEYS[4] rq. ARGV: logprefix -> 1 deleted, 0 if there was no record.
	scriptDelete = redis.NewScript(luaDropLogs + luaDropClaims + `
local n = redis.call('DEL', KEYS[1])
droplogs()
dropclaims()
return n
`)

	// ARGV: ttl, now, op ('SADD' or 'SREM'), uri -> 1, or 0 if absent.
	scriptSubscribe = redis.NewScript(luaTouch + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call(ARGV[3], KEYS[2], ARGV[4])
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
return 1
`)

	// no ARGV -> the members of subs, or nil if there is no record.
	scriptSubscriptions = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('SMEMBERS', KEYS[2])
`)

	// ARGV: ttl, now, stream, data, -MaxEvents -> index, or 0 if absent.
	scriptAppend = redis.NewScript(luaTouch + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local idx = redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('LTRIM', KEYS[4], ARGV[5], -1)
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
return idx
`)

	// ARGV: stream, after -> nil if there is no record; -1 if purged;
	// {} if nothing is newer; else {first index, data, data, ...}.
	// The rules are those of eventWindow.
	scriptEventsAfter = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local newest = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
local after = tonumber(ARGV[2])
if newest == 0 and after > 0 then return -1 end
if after >= newest then return {} end
local oldest = newest - redis.call('LLEN', KEYS[4]) + 1
if after + 1 < oldest then return -1 end
local evs = redis.call('LRANGE', KEYS[4], after + 1 - oldest, -1)
table.insert(evs, 1, after + 1)
return evs
`)
)

// NewRedis returns a store on client, which the caller keeps owning:
// Close does not close it. Invalid options give an error wrapping
// ErrInvalidConfig. NewRedis does no I/O; use Ping to check the server.
// For a context's deadline to bound each call, as [Store] promises, the
// client needs ContextTimeoutEnabled set in its options.
func NewRedis(client redis.UniversalClient, opts *RedisOptions) (*Redis, error) {
	if client == nil {
		return nil, fmt.Errorf("sessionstore: new redis store: %w: nil client", ErrInvalidConfig)
	}
	var ro RedisOptions
	if opts != nil {
		ro = *opts
	}
	o, err := resolve(&ro.Options)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: new redis store: %w", err)
	}
	if ro.KeyPrefix == "" {
		ro.KeyPrefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(ro.KeyPrefix, "{}") {
		return nil, fmt.Errorf("sessionstore: new redis store: %w: key prefix %q contains a brace", ErrInvalidConfig, ro.KeyPrefix)
	}
	r := &Redis{
		client:   client,
		prefix:   ro.KeyPrefix,
		ttlMS:    max(o.TTL.Milliseconds(), 1), // PEXPIRE 0 would delete
		trimFrom: -int64(o.MaxEvents),
	}
	if !ro.NoBatching {
		r.batch = newBatcher(client)
	}
	switch {
	case ro.CacheSize == 0:
		r.cache = newRecordCache(10000)
	case ro.CacheSize > 0:
		r.cache = newRecordCache(ro.CacheSize)
	}
	return r, nil
}

// OpenRedis connects to the server at rawURL (redis://[user:pass@]host:port/db
// or rediss:// for TLS, as parsed by redis.ParseURL), checks that it
// answers PING within ctx, and returns a store that owns the connection:
// Close closes it. For Sentinel or Cluster, build a redis.UniversalClient
// and use [NewRedis]. A malformed URL or invalid options give an error
// wrapping ErrInvalidConfig; an unreachable server an error naming its
// address (never the URL, which may hold a password).
func OpenRedis(ctx context.Context, rawURL string, opts *RedisOptions) (*Redis, error) {
	copts, err := redis.ParseURL(rawURL)
	if err != nil {
		// A *url.Error quotes the whole URL, password included.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("sessionstore: open redis: %w: bad URL: %w", ErrInvalidConfig, err)
	}
	// Let ctx bound every call, as the Store contract promises, rather
	// than only the client's own read and write timeouts.
	copts.ContextTimeoutEnabled = true
	// Fail fast while Redis is down: callers answer 503 at once and the
	// client retries. Values given in the URL win.
	q, _ := url.Parse(rawURL)
	if q == nil || q.Query().Get("max_retries") == "" {
		copts.MaxRetries = 1
	}
	if q == nil || q.Query().Get("dial_timeout") == "" {
		copts.DialTimeout = 2 * time.Second
	}
	if q == nil || q.Query().Get("max_retry_backoff") == "" {
		copts.MaxRetryBackoff = 50 * time.Millisecond
	}
	client := redis.NewClient(copts)
	r, err := NewRedis(client, opts)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	// The client retries dialling until ctx is done and then reports only
	// ctx's error; keep the dial error, which says what is wrong.
	dials := &dialErrors{}
	client.AddHook(dials)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		if last := dials.last.Load(); last != nil && !errors.Is(err, *last) {
			err = fmt.Errorf("%w (last dial error: %w)", err, *last)
		}
		return nil, fmt.Errorf("sessionstore: open redis: server %s unreachable: %w", copts.Addr, err)
	}
	r.owned = true
	return r, nil
}

// dialErrors is a client hook that remembers the last dial error.
type dialErrors struct{ last atomic.Pointer[error] }

func (d *dialErrors) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			d.last.Store(&err)
		}
		return conn, err
	}
}

func (d *dialErrors) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dialErrors) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// keys returns the rec, subs and streams keys of session id, and the
// prefix of its event-log keys.
func (r *Redis) keys(id string) (keys []string, logPrefix string) {
	base := r.prefix + ":{" + id + "}:"
	return []string{base + "rec", base + "subs", base + "streams"}, base + "ev:"
}

// claimsKey returns the key of the rq set of session id.
func (r *Redis) claimsKey(id string) string {
	return r.prefix + ":{" + id + "}:rq"
}

// claimKey returns the rq set key of session id, the key of the claim on
// requestID, and the claim's member in the set. The member is a digest:
// a request id is any string, and must not be able to displace the hash
// tag nor to spell the key of another claim.
func (r *Redis) claimKey(id, requestID string) (set, key, member string) {
	sum := sha256.Sum256([]byte(requestID))
	member = base64.RawURLEncoding.EncodeToString(sum[:])
	set = r.claimsKey(id)
	return set, set + ":" + member, member
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
// [NewID] never do; refusing braces keeps a crafted id from displacing the
// hash tag and from making one session's key spell another's.
func (r *Redis) validID(id string) bool {
	return ValidID(id) && !strings.ContainsAny(id, "{}")
}

// Create implements [Store.Create]. Besides the ids [ValidID] refuses, it
// refuses ids with a brace.
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
	keys, logPrefix := r.keys(s.ID)
	keys = append(keys, r.claimsKey(s.ID))
	now := nowMilli()
	ms := now.UnixMilli()
	created, err := r.run(ctx, scriptCreate, keys,
		logPrefix, r.ttlMS,
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
	).Int64()
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
	reply, err := r.run(ctx, scriptGet, keys, r.ttlMS, now.UnixMilli(), cached.version()).StringSlice()
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
		return cached.session()
	}
	c, err := decodeCached(reply)
	if err != nil {
		return nil, err
	}
	r.cache.put(id, c)
	return c.session()
}

// Begin implements [Store.Begin] in one round trip, like Get. Besides the
// ids [ValidID] refuses, it reports ErrNotFound for ids with a brace,
// which never name a session.
func (r *Redis) Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*Session, error) {
	if err := checkClaimTTL(id, ttl); err != nil {
		return nil, err
	}
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: begin %q: %w", shortID(id), ErrNotFound)
	}
	keys, _ := r.keys(id)
	set, claim, member := r.claimKey(id, requestID)
	keys = append(keys, set, claim)
	now := nowMilli()
	cached := r.cache.get(id)
	reply, err := r.run(ctx, scriptBegin, keys,
		r.ttlMS, now.UnixMilli(), token, max(ttl.Milliseconds(), 1), member, cached.version()).StringSlice()
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

// End implements [Store.End] in one round trip. It does not look at the
// session record: the claim key alone says whether there is a claim.
func (r *Redis) End(ctx context.Context, id, requestID, token string) error {
	if !r.validID(id) {
		return nil
	}
	set, claim, member := r.claimKey(id, requestID)
	if err := r.run(ctx, scriptEnd, []string{set, claim}, token, member).Err(); err != nil {
		return fmt.Errorf("sessionstore: end %q: %w", shortID(id), err)
	}
	return nil
}

// decodeCached reads the HGETALL reply of a record. The JSON members stay
// encoded: each session handed out decodes its own copy.
func decodeCached(kv []string) (*cachedRecord, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("malformed record: %d values", len(kv))
	}
	var (
		c   cachedRecord
		s   = &c.base
		err error
	)
	for i := 0; i < len(kv) && err == nil; i += 2 {
		v := kv[i+1]
		switch kv[i] {
		case fieldID:
			s.ID = v
		case fieldProtocolVersion:
			s.ProtocolVersion = v
		case fieldClientInfo:
			c.info = []byte(v)
		case fieldClientCapabilities:
			c.caps = []byte(v)
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
			c.ver = v
		}
	}
	if err != nil {
		return nil, fmt.Errorf("malformed record: %w", err)
	}
	if c.info == nil || c.caps == nil {
		return nil, fmt.Errorf("malformed record: client info or capabilities missing")
	}
	return &c, nil
}

// Update implements [Store.Update].
func (r *Redis) Update(ctx context.Context, id string, p Patch) error {
	args := []any{r.ttlMS, fieldLastSeen, nowMilli().UnixMilli()}
	if p.LogLevel != nil {
		args = append(args, fieldLogLevel, string(*p.LogLevel))
	}
	if p.ClientInitialized != nil {
		args = append(args, fieldClientInitialized, flag(*p.ClientInitialized))
	}
	return r.runLive(ctx, "update", id, scriptUpdate, args...)
}

// Delete implements [Store.Delete].
func (r *Redis) Delete(ctx context.Context, id string) error {
	if !r.validID(id) {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, r.claimsKey(id))
	r.cache.drop(id)
	n, err := r.run(ctx, scriptDelete, keys, logPrefix).Int64()
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sessionstore: delete %q: %w", shortID(id), err)
	}
	return nil
}

// Subscribe implements [Store.Subscribe].
func (r *Redis) Subscribe(ctx context.Context, id, uri string) error {
	return r.runLive(ctx, "subscribe", id, scriptSubscribe, r.ttlMS, nowMilli().UnixMilli(), "SADD", uri)
}

// Unsubscribe implements [Store.Unsubscribe].
func (r *Redis) Unsubscribe(ctx context.Context, id, uri string) error {
	return r.runLive(ctx, "unsubscribe", id, scriptSubscribe, r.ttlMS, nowMilli().UnixMilli(), "SREM", uri)
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

// AppendEvent implements [Store.AppendEvent].
func (r *Redis) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	if !r.validID(id) {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream)
	if data == nil {
		data = []byte{}
	}
	idx, err := r.run(ctx, scriptAppend, keys,
		r.ttlMS, nowMilli().UnixMilli(), stream, data, r.trimFrom).Int64()
	if err == nil && idx <= 0 {
		err = ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sessionstore: append event %q: %w", shortID(id), err)
	}
	return uint64(idx), nil
}

// EventsAfter implements [Store.EventsAfter].
func (r *Redis) EventsAfter(ctx context.Context, id, stream string, after uint64) ([]Event, error) {
	if !r.validID(id) {
		return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), ErrNotFound)
	}
	keys, logPrefix := r.keys(id)
	keys = append(keys, logPrefix+stream)
	reply, err := r.run(ctx, scriptEventsAfter, keys,
		stream, strconv.FormatUint(after, 10)).Result()
	if errors.Is(err, redis.Nil) {
		err = ErrNotFound
	}
	if err == nil {
		var events []Event
		if events, err = decodeEvents(reply); err == nil {
			return events, nil
		}
	}
	return nil, fmt.Errorf("sessionstore: events after %d of %q: %w", after, shortID(id), err)
}

// decodeEvents interprets the reply of scriptEventsAfter.
func decodeEvents(reply any) ([]Event, error) {
	switch v := reply.(type) {
	case int64:
		return nil, ErrEventsPurged
	case []any:
		if len(v) == 0 {
			return []Event{}, nil
		}
		first, ok := v[0].(int64)
		if !ok || first < 1 {
			return nil, fmt.Errorf("malformed event log reply")
		}
		events := make([]Event, len(v)-1)
		for i, d := range v[1:] {
			s, ok := d.(string)
			if !ok {
				return nil, fmt.Errorf("malformed event log reply")
			}
			events[i] = Event{Index: uint64(first) + uint64(i), Data: []byte(s)}
		}
		return events, nil
	}
	return nil, fmt.Errorf("malformed event log reply of type %T", reply)
}

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

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func parseMilli(v string) (time.Time, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}
