package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// OpenRedis connects to the Redis deployment at rawURL, which
// RedisOptions.Mode says how to read (see [RedisMode]: one server by
// default, a Redis Cluster's seed nodes, or Sentinel's), checks that it
// answers PING within ctx, and returns a store that owns the connection:
// Close closes it.
//
// The client fails fast while Redis is down or failing over, so callers
// answer 503 at once and their clients retry: in every mode a dial times
// out after 2 s and retries back off 50 ms at most (go-redis's own read
// and write timeouts, 5 s, and pool sizes are kept; a cluster's pool has
// a single client's size on each node); single and sentinel retry a
// failed command once, a cluster follows MOVED and ASK and retries on
// network errors up to 3 times (max_redirects). Values the URL gives
// (dial_timeout, max_retries, ...) win, but for the client's use of the
// context's deadline, which is always on, and replica reads, which are
// refused (read_only, route_by_latency, route_randomly, replica_only):
// every command goes to a master. With RedisOptions.WaitReplicas, every
// write waits for the replicas (see there).
//
// A malformed URL or invalid options give an error wrapping
// ErrInvalidConfig and naming the form the mode wants; an unreachable
// deployment an error naming its addresses (never the URL, which may hold
// a password). For a client of your own, use [NewRedis].
func OpenRedis(ctx context.Context, rawURL string, opts *RedisOptions) (*Redis, error) {
	ro, err := resolveRedis(opts)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: open redis: %w", err)
	}
	conn, err := parseRedisURL(ro.Mode, rawURL)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: open redis: %w", err)
	}
	if ro.WaitReplicas > 0 && conn.readTimeout > 0 && ro.WaitTimeout >= conn.readTimeout {
		return nil, fmt.Errorf("sessionstore: open redis: %w: WaitTimeout %v is not shorter than the read timeout %v", ErrInvalidConfig, ro.WaitTimeout, conn.readTimeout)
	}
	// The client retries dialling until ctx is done and then reports only
	// ctx's error; keep the dial error, which says what is wrong.
	dials := &dialErrors{}
	client := conn.newClient(func(c *redis.Client) {
		c.AddHook(dials)
		if ro.WaitReplicas > 0 {
			c.AddHook(newWaitHook(c, ro.WaitReplicas, ro.WaitTimeout))
		}
	})
	r := newRedis(client, ro)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = r.Close(ctx) // not owned yet: stops the batcher only
		_ = client.Close()
		if last := dials.last.Load(); last != nil && !errors.Is(err, *last) {
			err = fmt.Errorf("%w (last dial error: %w)", err, *last)
		}
		return nil, fmt.Errorf("sessionstore: open redis: %s unreachable: %w", conn.where, err)
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
