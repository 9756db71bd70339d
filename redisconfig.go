package mcpfleet

import (
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// redisConfig is what the command line says about the session store's
// Redis (serve and frontend).
type redisConfig struct {
	RedisURL, RedisMode string
	RedisWaitReplicas   int64
	RedisWaitTimeout    time.Duration
}

// defineRedis registers the Redis flags of role r, if it has them (in the
// bus group).
func (c *redisConfig) defineRedis(r role, f *flags) {
	f.in(groupBus)
	switch r {
	case roleServe:
		f.str(&c.RedisURL, "redis-url", "", "URL", "Redis for sessions, shared by frontends, in the form --redis-mode says (empty: the in-memory store)")
	case roleFrontend:
		f.str(&c.RedisURL, "redis-url", "redis://127.0.0.1:6379/0", "URL", "Redis for sessions, shared by every frontend, in the form --redis-mode says")
	default:
		return
	}
	f.str(&c.RedisMode, "redis-mode", string(sessionstore.RedisSingle), "MODE",
		"what --redis-url names: single (one server: redis://host:port/db), cluster (a Redis Cluster: redis://host:port?addr=host2:port&...) or sentinel (a master behind Sentinel: redis://sentinel:port?addr=sentinel2:port&master_name=NAME)")
	f.i64(&c.RedisWaitReplicas, "redis-wait-replicas", 0, "replicas each session-store write waits for (WAIT): a write fewer acknowledged within --redis-wait-timeout fails (503), so an acknowledged one survives a failover (0: off, replication is asynchronous)")
	f.dur(&c.RedisWaitTimeout, "redis-wait-timeout", sessionstore.DefaultWaitTimeout, "how long a write waits for --redis-wait-replicas (below the client's 5 s read timeout)")
}

// validateRedis checks the Redis flags of role r; add reports a problem.
// Messages never quote the URL, which may hold a password.
func (c *redisConfig) validateRedis(r role, add func(string, ...any)) {
	if r != roleServe && r != roleFrontend {
		return
	}
	if r == roleFrontend && c.RedisURL == "" {
		add("--redis-url is required")
	}
	mode, err := sessionstore.ParseRedisMode(c.RedisMode)
	switch {
	case err != nil:
		add("--redis-mode %q: want single, cluster or sentinel", c.RedisMode)
	case c.RedisURL != "":
		if err := sessionstore.CheckRedisURL(mode, c.RedisURL); err != nil {
			add("--redis-url (--redis-mode %s): %s", mode, strings.TrimPrefix(err.Error(), sessionstore.ErrInvalidConfig.Error()+": "))
		}
	case mode != sessionstore.RedisSingle:
		add("--redis-mode %s needs --redis-url", mode)
	}
	if c.RedisWaitReplicas < 0 {
		add("--redis-wait-replicas must not be negative")
	}
	if c.RedisWaitReplicas > 0 && c.RedisURL == "" {
		add("--redis-wait-replicas needs --redis-url (the in-memory store has no replicas)")
	}
	if c.RedisWaitTimeout <= 0 {
		add("--redis-wait-timeout must be positive")
	}
}
