package sessionstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Group commit of the Redis store's scripts: calls made while a round trip
// is in flight are sent together in the next one, as one pipeline, so a
// busy frontend pays one write and one read system call (on each side) per
// batch rather than per call. A call made while the pipes are idle goes
// out at once: batching never waits for company.

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
}

func newBatcher(client redis.UniversalClient) *batcher {
	return &batcher{client: client, q: make(chan *batchOp, maxBatch*batchPipes), quit: make(chan struct{})}
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
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.cmd = errCmd(op.ctx, err) // its caller gave up before it was sent
			continue
		}
		op.cmd = op.script.EvalSha(ctx, pipe, op.keys, op.args...)
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command carries its own outcome
	}
	for _, op := range batch {
		if err := op.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			op.cmd = op.script.Run(op.ctx, b.client, op.keys, op.args...)
		}
		op.done <- struct{}{}
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
