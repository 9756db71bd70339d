package sessionstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Group commit of the Redis store's scripts: calls made while a round trip
// is in flight are sent together in the next one, as one pipeline, so a
// busy frontend pays one write and one read system call (on each side) per
// batch rather than per call. A call made while the pipes are idle goes
// out at once: batching never waits for company.
//
// On a Redis that is not a cluster, the Ends of one pipeline also go as
// one script call (lua/end.lua takes any number of claims): one script
// for Redis to run instead of one per End (measured: 1.12 script calls
// per legacy request instead of 2, for about 1 µs less Redis CPU; see
// docs/scaling.md). A Redis Cluster routes a script by its keys, which
// must share a slot, so there each End stays a call of its own.

const (
	// batchPipes is how many pipelines may be in flight at once.
	batchPipes = 2
	// maxBatch caps the calls of one pipeline.
	maxBatch = 128
	// batchFallbackTimeout bounds a pipeline whose calls have no deadline.
	batchFallbackTimeout = 10 * time.Second
)

// batchOp is one script call waiting for its pipeline.
type batchOp struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{}
}

// batcher runs the pipelines of one store. Its goroutines start with the
// first call and end with stop.
type batcher struct {
	client redis.UniversalClient
	q      chan *batchOp
	quit   chan struct{}
	start  sync.Once
	wg     sync.WaitGroup
	mu     sync.RWMutex // held for reading while a call is queued
	closed bool         // guarded by mu; no call is queued once set
	// mergeEnds: the client is one Redis (a *redis.Client, also what a
	// Sentinel failover client is), whose keys may all go in one script.
	mergeEnds bool
}

func newBatcher(client redis.UniversalClient) *batcher {
	_, single := client.(*redis.Client)
	return &batcher{client: client, q: make(chan *batchOp, maxBatch*batchPipes), quit: make(chan struct{}), mergeEnds: single}
}

var opPool = sync.Pool{New: func() any { return &batchOp{done: make(chan struct{}, 1)} }}

// run sends the call in the next pipeline and waits for its reply or ctx.
func (b *batcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	b.start.Do(func() {
		for range batchPipes {
			b.wg.Add(1)
			go b.loop() // owned by the batcher: ends when quit is closed
		}
	})
	if err := ctx.Err(); err != nil {
		// Never queued: a call with a done context changes nothing
		// (select below would pick a ready send at random).
		return errCmd(ctx, err)
	}
	op := opPool.Get().(*batchOp)
	op.ctx, op.script, op.keys, op.args = ctx, script, keys, args
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return errCmd(ctx, redis.ErrClosed)
	}
	select {
	case b.q <- op:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return errCmd(ctx, ctx.Err())
	}
	select {
	case <-op.done:
		cmd := op.cmd
		*op = batchOp{done: op.done}
		opPool.Put(op)
		return cmd
	case <-ctx.Done():
		// The pipeline still owns op; it is not reused.
		return errCmd(ctx, ctx.Err())
	}
}

func errCmd(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}

func (b *batcher) loop() {
	defer b.wg.Done()
	batch := make([]*batchOp, 0, maxBatch)
	for {
		select {
		case op := <-b.q:
			batch = append(batch[:0], op)
		case <-b.quit:
			// No call is queued any more: answer those left.
			for {
				select {
				case op := <-b.q:
					op.cmd = errCmd(op.ctx, redis.ErrClosed)
					op.done <- struct{}{}
				default:
					return
				}
			}
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case op := <-b.q:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		b.exec(batch)
		clear(batch)
	}
}

// exec sends one batch. A lone call is sent as is; several go as one
// pipeline of EVALSHA, and a call that finds its script missing on the
// server (NOSCRIPT: a restarted Redis) is sent again on its own, which
// loads the script.
func (b *batcher) exec(batch []*batchOp) {
	if len(batch) == 1 {
		op := batch[0]
		op.cmd = op.script.Run(op.ctx, b.client, op.keys, op.args...)
		op.done <- struct{}{}
		return
	}
	deadline := time.Now().Add(batchFallbackTimeout)
	for _, op := range batch {
		if d, ok := op.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	pipe := b.client.Pipeline()
	var ends endMerge
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.cmd = errCmd(op.ctx, err) // its caller gave up before it was sent
			continue
		}
		if b.mergeEnds && op.script == scriptEnd {
			ends.add(op)
			continue
		}
		op.cmd = op.script.EvalSha(ctx, pipe, op.keys, op.args...)
	}
	ends.queue(ctx, pipe)
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command carries its own outcome
	}
	ends.reply(ctx, b.client)
	for _, op := range batch {
		if err := op.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			op.cmd = op.script.Run(op.ctx, b.client, op.keys, op.args...)
		}
		op.done <- struct{}{}
	}
}

// endMerge is the Ends of one pipeline, sent as one call of lua/end.lua.
type endMerge struct {
	ops  []*batchOp
	keys []string
	args []any
	cmd  *redis.Cmd
}

func (e *endMerge) add(op *batchOp) {
	e.ops = append(e.ops, op)
	e.keys = append(e.keys, op.keys...)
	e.args = append(e.args, op.args...)
}

// queue adds the merged call to pipe; a lone End goes as it came.
func (e *endMerge) queue(ctx context.Context, pipe redis.Pipeliner) {
	switch len(e.ops) {
	case 0:
	case 1:
		op := e.ops[0]
		op.cmd = op.script.EvalSha(ctx, pipe, op.keys, op.args...)
	default:
		e.cmd = scriptEnd.EvalSha(ctx, pipe, e.keys, e.args...)
	}
}

// reply gives each End its part of the merged call's reply (its own
// 1 or 0), or the call's error. A NOSCRIPT error (a restarted Redis) sends
// the merged call again on its own, which loads the script. An error is
// every End's: one raised inside the script (a claim key of another type)
// fails the call after the releases before it were made, so an End that
// reports an error may have released its claim (the claim is then free
// early, as after its expiry; never another token's).
func (e *endMerge) reply(ctx context.Context, client redis.UniversalClient) {
	if e.cmd == nil {
		return
	}
	if err := e.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		e.cmd = scriptEnd.Run(ctx, client, e.keys, e.args...)
	}
	vals, err := e.cmd.Slice()
	if err == nil && len(vals) != len(e.ops) {
		err = fmt.Errorf("sessionstore: end: %d replies for %d claims", len(vals), len(e.ops))
	}
	for i, op := range e.ops {
		cmd := redis.NewCmd(op.ctx)
		if err != nil {
			cmd.SetErr(err)
		} else {
			cmd.SetVal([]any{vals[i]})
		}
		op.cmd = cmd
	}
}

// close stops the pipelines after the batches in flight.
func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.quit)
	}
	b.mu.Unlock()
	b.wg.Wait()
}
