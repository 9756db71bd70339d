package sessionstore

// The Redis deployments OpenRedis connects to, their URLs and the
// go-redis clients it builds for them.

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisMode says what kind of Redis deployment a URL given to
// [OpenRedis] names (RedisOptions.Mode), hence how the URL is read and
// which go-redis client the store uses. Whatever the mode, every command
// goes to a master: no read is routed to a replica, whose copy may lag
// behind a write the same store just made.
type RedisMode string

const (
	// RedisSingle is one Redis server, in the form of redis.ParseURL:
	// redis://[user:password@]host:port[/db], rediss:// for TLS, or
	// unix://[user:password@]/path/to/socket[?db=N]. The client is a
	// redis.Client. It is the default (the empty mode).
	RedisSingle RedisMode = "single"
	// RedisCluster is a Redis Cluster, in the form of
	// redis.ParseClusterURL: redis://[user:password@]host:port
	// [?addr=host2:port2&addr=...] names seed nodes (any of the cluster's
	// nodes; the client learns the others), rediss:// for TLS, no
	// database (a cluster has only database 0). The client is a
	// redis.ClusterClient sending each command to the master of its
	// key's slot; every key of one session shares the session's hash
	// tag, hence its slot (see [Redis]).
	RedisCluster RedisMode = "cluster"
	// RedisSentinel is a master found through Redis Sentinel, in the form
	// of redis.ParseFailoverURL:
	// redis://[user:password@]sentinel:port[/db]?master_name=NAME
	// [&addr=sentinel2:port&...][&username=U&password=P], rediss:// for
	// TLS. The user information of the URL authenticates to the
	// sentinels; the username and password parameters to the master and
	// its replicas. The client is a failover redis.Client: it asks the
	// sentinels for the master and follows the one they elect after a
	// failover.
	RedisSentinel RedisMode = "sentinel"
)

// RedisModes lists the modes, in the order help texts name them.
var RedisModes = []RedisMode{RedisSingle, RedisCluster, RedisSentinel}

// ParseRedisMode returns the mode named s ("single", "cluster" or
// "sentinel"; empty is single). Any other name gives an error wrapping
// ErrInvalidConfig.
func ParseRedisMode(s string) (RedisMode, error) {
	switch m := RedisMode(s); m {
	case "":
		return RedisSingle, nil
	case RedisSingle, RedisCluster, RedisSentinel:
		return m, nil
	}
	return "", fmt.Errorf("%w: redis mode %q: want single, cluster or sentinel", ErrInvalidConfig, s)
}

// URLForm describes the URLs mode takes, for help texts and messages.
func (m RedisMode) URLForm() string {
	switch m {
	case RedisCluster:
		return "redis://[user:password@]host:port?addr=host2:port&addr=... (seed nodes; rediss:// for TLS)"
	case RedisSentinel:
		return "redis://[user:password@]sentinel:port[/db]?master_name=NAME&addr=sentinel2:port&... (the user authenticates to the sentinels; &username=&password= to the master; rediss:// for TLS)"
	}
	return "redis://[user:password@]host:port/db, rediss://... for TLS, or unix:///path"
}

// CheckRedisURL checks that rawURL is a URL of mode (see [RedisMode])
// that OpenRedis accepts, without connecting. The error wraps
// ErrInvalidConfig and never quotes the URL, which may hold a password.
func CheckRedisURL(mode RedisMode, rawURL string) error {
	_, err := parseRedisURL(mode, rawURL)
	return err
}

// Client defaults that a URL parameter of the same name overrides: fail
// fast while Redis is down or failing over (callers answer 503 at once
// and their clients retry) rather than retry at length.
const (
	redisDialTimeout     = 2 * time.Second       // dial_timeout
	redisMaxRetries      = 1                     // max_retries (single and sentinel)
	redisMaxRetryBackoff = 50 * time.Millisecond // max_retry_backoff
)

// redisReadTimeout is go-redis's read_timeout (and write_timeout) in every
// mode when the URL sets none; the store keeps it.
const redisReadTimeout = 5 * time.Second

// clusterStateReload bounds how stale a cluster client's slot map gets:
// after a failover, calls for the dead master's slots fail (fast) until
// the next reload finds its promoted replica.
const clusterStateReload = time.Second

// redisConn is a parsed Redis URL: the client it makes and what errors
// may name of it (addresses, never credentials).
type redisConn struct {
	mode        RedisMode
	single      *redis.Options
	cluster     *redis.ClusterOptions
	failover    *redis.FailoverOptions
	where       string
	readTimeout time.Duration // of the client's commands; 0: none
}

// parseRedisURL reads rawURL as a URL of mode and applies the store's
// client defaults: ContextTimeoutEnabled always (a context's deadline
// bounds every call, as [Store] promises), and the constants above unless
// the URL sets them.
func parseRedisURL(mode RedisMode, rawURL string) (*redisConn, error) {
	mode, err := ParseRedisMode(string(mode))
	if err != nil {
		return nil, err
	}
	bad := func(err error) error {
		// A *url.Error quotes the whole URL, password included.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: bad %s URL (want %s): %w", ErrInvalidConfig, mode, mode.URLForm(), err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, bad(err)
	}
	q := u.Query()
	set := func(name string) bool { return q.Get(name) != "" }
	dur := func(name string, d *time.Duration, def time.Duration) {
		if !set(name) {
			*d = def
		}
	}
	for _, name := range []string{"read_only", "route_by_latency", "route_randomly", "replica_only"} {
		if set(name) && q.Get(name) != "false" && q.Get(name) != "0" {
			return nil, bad(fmt.Errorf("%s: the store reads from masters only (a replica may not have its last writes yet)", name))
		}
	}
	c := &redisConn{mode: mode}
	switch mode {
	case RedisSingle:
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, bad(err)
		}
		o.ContextTimeoutEnabled = true
		dur("dial_timeout", &o.DialTimeout, redisDialTimeout)
		dur("max_retry_backoff", &o.MaxRetryBackoff, redisMaxRetryBackoff)
		if !set("max_retries") {
			o.MaxRetries = redisMaxRetries
		}
		c.single, c.where = o, "server "+o.Addr
		c.readTimeout = o.ReadTimeout
	case RedisCluster:
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return nil, bad(fmt.Errorf("database %q: a cluster has database 0 only", p))
		}
		u.Path = ""
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, bad(err)
		}
		o.ContextTimeoutEnabled = true
		dur("dial_timeout", &o.DialTimeout, redisDialTimeout)
		dur("max_retry_backoff", &o.MaxRetryBackoff, redisMaxRetryBackoff)
		if !set("pool_size") {
			o.PoolSize = 10 * runtime.GOMAXPROCS(0) // per node, as a single client's
		}
		// go-redis reloads the slot map on MOVED, but not when a master
		// is gone (connection refused): without a short interval, calls
		// for its slots would go to the dead node for go-redis's default
		// minute after a replica took over. A reload is one CLUSTER SLOTS,
		// made lazily at most once per interval.
		o.ClusterStateReloadInterval = clusterStateReload
		c.cluster, c.where = o, "cluster "+strings.Join(o.Addrs, ",")
		c.readTimeout = o.ReadTimeout
	case RedisSentinel:
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, bad(err)
		}
		if o.MasterName == "" {
			return nil, bad(errors.New("master_name is required"))
		}
		o.ContextTimeoutEnabled = true
		dur("dial_timeout", &o.DialTimeout, redisDialTimeout)
		dur("max_retry_backoff", &o.MaxRetryBackoff, redisMaxRetryBackoff)
		if !set("max_retries") {
			o.MaxRetries = redisMaxRetries
		}
		c.failover = o
		c.where = fmt.Sprintf("master %q of the sentinels %s", o.MasterName, strings.Join(o.SentinelAddrs, ","))
		c.readTimeout = o.ReadTimeout
	}
	switch {
	case c.readTimeout == 0:
		c.readTimeout = redisReadTimeout // go-redis's default for every mode
	case c.readTimeout < 0:
		c.readTimeout = 0 // none
	}
	return c, nil
}

// newClient returns the client of c, with hooks installed on every
// connection's client (the cluster's node clients included) by each
// node(client) call.
func (c *redisConn) newClient(node func(*redis.Client)) redis.UniversalClient {
	switch c.mode {
	case RedisCluster:
		cc := redis.NewClusterClient(c.cluster)
		cc.OnNewNode(node)
		return cc
	case RedisSentinel:
		fc := redis.NewFailoverClient(c.failover)
		node(fc)
		return fc
	}
	sc := redis.NewClient(c.single)
	node(sc)
	return sc
}
