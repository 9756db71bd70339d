package sessionstore

// RedisOptions.WaitReplicas: every write is followed, on its connection,
// by WAIT.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is wrapped by the error of a write that the master
// applied but fewer replicas than RedisOptions.WaitReplicas acknowledged
// within RedisOptions.WaitTimeout: a failover may lose it.
var ErrNotReplicated = errors.New("sessionstore: write not acknowledged by enough replicas")

// waitHook is the go-redis hook of WaitReplicas on one connection pool:
// a client's, or in a cluster each node's (WAIT counts the replicas of
// the node it runs on). WAIT covers the writes made before it on its
// connection, so a write goes in a pipeline with the WAIT after it, and
// a pipeline with writes (the batcher's, AppendOnce's) gets one WAIT at
// its end.
type waitHook struct {
	client  *redis.Client
	n       int64
	timeout time.Duration
	ms      int64 // WAIT's timeout argument: at least 1 (0 waits for ever)
}

func newWaitHook(client *redis.Client, n int, timeout time.Duration) *waitHook {
	return &waitHook{client: client, n: int64(n), timeout: timeout, ms: max(timeout.Milliseconds(), 1)}
}

func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook sends a write as a pipeline of its own, which
// ProcessPipelineHook completes with the WAIT; other commands go as they
// are.
func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isWrite(cmd) {
			return next(ctx, cmd)
		}
		pipe := h.client.Pipeline()
		_ = pipe.Process(ctx, cmd)
		_, _ = pipe.Exec(ctx) // cmd carries its outcome
		return cmd.Err()
	}
}

// ProcessPipelineHook appends WAIT to a pipeline with writes and fails
// its successful writes with ErrNotReplicated when WAIT counts fewer
// replicas than wanted (or fails itself).
func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		writes := false
		for _, cmd := range cmds {
			writes = writes || isWrite(cmd)
		}
		if !writes {
			return next(ctx, cmds)
		}
		wait := redis.NewIntCmd(ctx, "wait", h.n, h.ms)
		err := next(ctx, append(cmds[:len(cmds):len(cmds)], wait))
		var short error
		switch got, werr := wait.Result(); {
		case werr != nil:
			short = fmt.Errorf("%w: WAIT failed: %w", ErrNotReplicated, werr)
		case got < h.n:
			short = fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, got, h.n, h.timeout)
		}
		if short != nil {
			for _, cmd := range cmds {
				if isWrite(cmd) && cmd.Err() == nil {
					cmd.SetErr(short)
				}
			}
		}
		// The error of a pipeline is that of its first failed command,
		// which the WAIT is not.
		for _, cmd := range cmds {
			if cerr := cmd.Err(); cerr != nil {
				return cerr
			}
		}
		if err != nil && !errors.Is(err, wait.Err()) {
			return err
		}
		return nil
	}
}

// readOnlyScripts are the SHA1s of the store's scripts that write
// nothing: they need no WAIT.
var readOnlyScripts = map[string]bool{scriptEventsAfter.Hash(): true, scriptSubscriptions.Hash(): true}

// isWrite reports whether cmd is one of the writes the store makes: a
// script (but a read-only one) or a write command.
func isWrite(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "evalsha":
		sha, _ := cmd.Args()[1].(string)
		return !readOnlyScripts[sha]
	case "eval":
		src, _ := cmd.Args()[1].(string)
		sum := sha1.Sum([]byte(src))
		return !readOnlyScripts[hex.EncodeToString(sum[:])]
	case "set", "setnx", "sadd", "srem", "del", "unlink", "hset", "hdel", "expire", "pexpire",
		"zadd", "zrem", "rpush", "lpush", "ltrim", "incr", "incrby", "hincrby", "fcall":
		return true
	}
	return false
}
