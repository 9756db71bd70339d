package sessionstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var scriptAppendOnce = loadScript("append_once", "touch")

// onceCall is the script call of one message of AppendOnce.
type onceCall struct {
	i    int // the message's place in the batch
	keys []string
	args []any
}

// AppendOnce implements [EventLog.AppendOnce]: one lua/append_once.lua
// call per message (atomic on the server; its keys are all of the
// message's session, declared), the whole batch in one round trip.
//
// A lone message goes through r.run like every other call (sharing the
// store's group commit). Several go as one pipeline of EVALSHA, sent
// directly, so that its calls reach the server in batch order (the group
// commit runs pipelines side by side); on a Redis Cluster the pipeline
// is one round trip per node, in parallel, each node's calls in order.
// The calls that find the script missing (NOSCRIPT: a restarted or
// flushed server) are sent again, in order, in a second pipeline of
// EVAL, which loads it. (Should another client load the script between
// two calls of the first pipeline, a later message could then be logged
// before an earlier one that failed; nothing is logged twice.)
func (r *Redis) AppendOnce(ctx context.Context, batch []OnceAppend) ([]OnceResult, error) {
	if err := checkOnceBatch(batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessionstore: append once: %w", err)
	}
	results := make([]OnceResult, len(batch))
	calls := make([]onceCall, 0, len(batch))
	now := nowMilli().UnixMilli()
	maxEvents := -r.trimFrom
	for i := range batch {
		a := &batch[i]
		if !r.validID(a.Session) {
			results[i].Status = NoSession
			continue
		}
		keys, logPrefix := r.keys(a.Session)
		keys = append(keys, logPrefix+a.Stream, r.onceKey(a.Session, a.Stream))
		data := a.Data
		if data == nil {
			data = []byte{}
		}
		calls = append(calls, onceCall{i: i, keys: keys, args: []any{
			r.slidMS, now, a.Stream, data, r.trimFrom, digest(a.Key), a.URI, maxEvents,
		}})
	}
	var cmds []*redis.Cmd
	switch len(calls) {
	case 0:
		return results, nil
	case 1:
		cmds = []*redis.Cmd{r.run(ctx, scriptAppendOnce, calls[0].keys, calls[0].args...)}
	default:
		cmds = r.pipeOnce(ctx, calls)
	}
	for j, cmd := range cmds {
		res, err := decodeOnceResult(cmd)
		if err != nil {
			return nil, fmt.Errorf("sessionstore: append once to %q: %w", shortID(batch[calls[j].i].Session), err)
		}
		results[calls[j].i] = res
	}
	return results, nil
}

// pipeOnce sends calls as one pipeline of EVALSHA, and those that find
// the script missing as a second one of EVAL.
func (r *Redis) pipeOnce(ctx context.Context, calls []onceCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	pipe := r.client.Pipeline()
	for j, c := range calls {
		cmds[j] = scriptAppendOnce.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own outcome
	var retry []int
	for j, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			retry = append(retry, j)
		}
	}
	if len(retry) > 0 {
		pipe = r.client.Pipeline()
		for _, j := range retry {
			cmds[j] = scriptAppendOnce.Eval(ctx, pipe, calls[j].keys, calls[j].args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	return cmds
}

// decodeOnceResult interprets the reply of scriptAppendOnce: {status,
// index}.
func decodeOnceResult(cmd *redis.Cmd) (OnceResult, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return OnceResult{}, err
	}
	if len(v) != 2 || v[0] < int64(Appended) || v[0] > int64(NoSession) || v[1] < 0 {
		return OnceResult{}, fmt.Errorf("malformed append once reply %v", v)
	}
	return OnceResult{Index: uint64(v[1]), Status: AppendStatus(v[0])}, nil
}
