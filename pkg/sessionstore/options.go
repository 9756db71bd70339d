package sessionstore

// The options of the stores, their defaults and their validation.

import (
	"fmt"
	"strings"
	"time"
)

// DefaultTTL is the idle lifetime of a session when Options.TTL is zero.
const DefaultTTL = 30 * time.Minute

// DefaultMaxEvents is the per-stream event log length when
// Options.MaxEvents is zero.
const DefaultMaxEvents = 1000

// DefaultMaxStreamsPerSession is the cap on a session's stream logs when
// Options.MaxStreamsPerSession is zero.
const DefaultMaxStreamsPerSession = 64

// DefaultEndedStreamGrace is how long an ended stream stays resumable when
// Options.EndedStreamGrace is zero.
const DefaultEndedStreamGrace = time.Minute

// Defaults of the memory store's capacity. An idle session holds about
// 140 bytes of heap when its client declares what others of its kind do
// (the sessions declaring the same share one copy), about 320 with a
// small declaration of its own (BenchmarkMemoryIdleSession): 14 to 32 MiB
// for DefaultMaxSessions, plus at most DefaultMaxSessionBytes of unshared
// declarations.
const (
	DefaultMaxSessions     = 100000
	DefaultMaxSessionBytes = 256 << 20
)

// DefaultKeyPrefix is the key prefix when RedisOptions.KeyPrefix is empty.
const DefaultKeyPrefix = "mcp"

// DefaultCacheSize is the Redis store's record cache size when
// RedisOptions.CacheSize is zero.
const DefaultCacheSize = 10000

// DefaultWaitTimeout is how long a write waits for its replicas when
// RedisOptions.WaitReplicas is set and RedisOptions.WaitTimeout is zero.
const DefaultWaitTimeout = time.Second

// Options configure a store (both [NewMemory] and, inside [RedisOptions],
// the Redis store). The zero value is valid: every zero field means its
// default. Invalid options make the constructor fail with an error
// wrapping ErrInvalidConfig.
type Options struct {
	// TTL is the sliding idle lifetime of a session: every Get, Begin,
	// Update, Subscribe, Unsubscribe, AppendEvent and append of
	// AppendEventSeq and AppendOnce pushes expiry TTL into the future
	// (at least: a Redis store pushes it TTL plus TTL/100, at most a
	// second, and its Get and Begin only when it is less than TTL away,
	// so that a busy session's reads do not each slide its keys; see
	// [Redis]). Zero means DefaultTTL; negative is invalid (a session store without
	// expiry is not offered).
	// default: 30 minutes (DefaultTTL)
	TTL time.Duration
	// MaxEvents caps each stream's event log; older events are dropped.
	// It also bounds the dedupe keys AppendOnce remembers per stream.
	// Zero means DefaultMaxEvents; negative is invalid.
	// default: 1000 events (DefaultMaxEvents)
	MaxEvents int
	// MaxStreamsPerSession caps the streams a session has event logs for
	// (each legacy POST stream and the GET stream is one): when a new
	// stream starts beyond it, the logs appended to least recently go,
	// ended ones first (resuming them gives ErrEventsPurged). Negative
	// means no cap.
	// default: 64 streams (DefaultMaxStreamsPerSession)
	MaxStreamsPerSession int
	// EndedStreamGrace is how long a stream ended by EndStream (a POST
	// stream whose response was delivered) stays resumable, for a client
	// whose connection broke as the response went out; then its log and
	// its bookkeeping go. Negative means at once.
	// default: 1 minute (DefaultEndedStreamGrace)
	EndedStreamGrace time.Duration
	// MaxSessions bounds the live sessions of a [Memory] store: Create
	// fails with ErrFull beyond it. Zero means DefaultMaxSessions;
	// negative means no cap. The Redis store ignores it: bound Redis with
	// maxmemory.
	// default: 100000 sessions (DefaultMaxSessions)
	MaxSessions int
	// MaxSessionBytes bounds the bytes of what the live sessions of a
	// [Memory] store's clients declared (clientInfo and capabilities):
	// Create fails with ErrFull beyond it. Zero means
	// DefaultMaxSessionBytes; negative means no cap. The Redis store
	// ignores it.
	// default: 256 MiB (DefaultMaxSessionBytes)
	MaxSessionBytes int64
}

// RedisOptions configure a [Redis] store. The zero value is valid: every
// zero field means its default. Invalid options make [NewRedis] and
// [OpenRedis] fail with an error wrapping ErrInvalidConfig.
type RedisOptions struct {
	// Options are the options shared with the memory store (its capacity
	// fields do not apply to Redis).
	Options
	// KeyPrefix starts every key of the store, so several deployments (or
	// tests) can share a database. Empty means DefaultKeyPrefix. It must
	// not contain '{' or '}', which would displace the session hash tag
	// (invalid).
	// default: "mcp" (DefaultKeyPrefix)
	KeyPrefix string
	// NoBatching sends every call in its own round trip. By default calls
	// made while others are in flight share one pipeline (group commit):
	// fewer system calls on a busy frontend and on Redis, and no added
	// wait when idle.
	// default: false (batching on)
	NoBatching bool
	// CacheSize caps the session records kept decoded in this process.
	// A cached record is only used after Redis confirmed, in the same
	// round trip that touches the session, that its version is current,
	// so a DELETE, an expiry or an update made anywhere is seen at once;
	// the cache saves transferring and decoding the record. Zero means
	// DefaultCacheSize; negative means off (no cache).
	// default: 10000 records (DefaultCacheSize)
	CacheSize int
	// Mode says what the URL given to [OpenRedis] names: one server, a
	// Redis Cluster or a master behind Sentinel (see [RedisMode]).
	// [NewRedis], given its client, ignores it. Empty means RedisSingle;
	// another name than the three is invalid.
	// default: RedisSingle
	Mode RedisMode
	// WaitReplicas, when positive, makes every write of the store wait
	// until that many replicas have it: the write's command and a
	// WAIT WaitReplicas WaitTimeout go in one round trip, on one
	// connection, and a write fewer replicas acknowledged within
	// WaitTimeout fails with an error wrapping [ErrNotReplicated] (the
	// master applied it: it is there unless a failover loses it, and the
	// caller, told of a failure, acknowledges nothing). So an
	// acknowledged write survives the loss of the master as long as a
	// replica that has it is elected (see docs/guarantees.md); the price
	// is a round trip to the replicas per write, and no write at all
	// while fewer replicas are connected. Reads (EventsAfter,
	// Subscriptions, Subscribers, GetRecord) do not wait. Zero means off:
	// replication is asynchronous, and a failover loses what the master
	// had not yet sent. Negative is invalid, and so is any positive value
	// with NewRedis: the store installs the WAIT on the clients it makes
	// (OpenRedis), not on a client it is lent.
	// default: 0 (off)
	WaitReplicas int
	// WaitTimeout bounds the wait of each write for its replicas
	// (WaitReplicas); it must be shorter than the client's read timeout
	// (5 s unless the URL sets read_timeout). Zero means
	// DefaultWaitTimeout; negative is invalid.
	// default: 1 second (DefaultWaitTimeout)
	WaitTimeout time.Duration
	// CountInterval is how old the session count of CountSessions may
	// be: at most one count (a SCAN of every master) per interval, shared
	// by every process using the store (see [Redis.CountSessions]). Zero
	// means DefaultCountInterval; negative means off (CountSessions
	// fails: no sessions gauge).
	// default: 1 minute (DefaultCountInterval)
	CountInterval time.Duration
}

// resolve applies the defaults to opts (nil means all defaults) and
// validates the result.
func resolve(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TTL < 0 {
		return o, fmt.Errorf("%w: negative TTL %v", ErrInvalidConfig, o.TTL)
	}
	if o.MaxEvents < 0 {
		return o, fmt.Errorf("%w: negative MaxEvents %d", ErrInvalidConfig, o.MaxEvents)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxStreamsPerSession == 0 {
		o.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
	if o.EndedStreamGrace == 0 {
		o.EndedStreamGrace = DefaultEndedStreamGrace
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionBytes == 0 {
		o.MaxSessionBytes = DefaultMaxSessionBytes
	}
	return o, nil
}

// resolveRedis is resolve for a Redis store's options.
func resolveRedis(opts *RedisOptions) (RedisOptions, error) {
	var ro RedisOptions
	if opts != nil {
		ro = *opts
	}
	o, err := resolve(&ro.Options)
	if err != nil {
		return ro, err
	}
	ro.Options = o
	if ro.KeyPrefix == "" {
		ro.KeyPrefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(ro.KeyPrefix, "{}") {
		return ro, fmt.Errorf("%w: key prefix %q contains a brace", ErrInvalidConfig, ro.KeyPrefix)
	}
	if ro.CacheSize == 0 {
		ro.CacheSize = DefaultCacheSize
	}
	if ro.Mode, err = ParseRedisMode(string(ro.Mode)); err != nil {
		return ro, err
	}
	if ro.WaitReplicas < 0 {
		return ro, fmt.Errorf("%w: negative WaitReplicas %d", ErrInvalidConfig, ro.WaitReplicas)
	}
	if ro.WaitTimeout < 0 {
		return ro, fmt.Errorf("%w: negative WaitTimeout %v", ErrInvalidConfig, ro.WaitTimeout)
	}
	if ro.WaitTimeout == 0 {
		ro.WaitTimeout = DefaultWaitTimeout
	}
	if ro.CountInterval == 0 {
		ro.CountInterval = DefaultCountInterval
	}
	return ro, nil
}
