package worker

import "time"

// PoolStarted is how many handler goroutines w's pool has started.
func PoolStarted(w *Worker) int64 { return w.pool.started.Load() }

// PoolIdle is how many of w's handler goroutines wait for a request now.
func PoolIdle(w *Worker) int32 { return w.pool.idle.Load() }

// SetPoolMaxIdle sets how many idle handler goroutines w keeps.
func SetPoolMaxIdle(w *Worker, n int32) {
	w.pool.mu.Lock()
	w.pool.maxIdle = n
	w.pool.mu.Unlock()
}

// SetPoolEscape sets how long w's leader runs a handler before it hands
// the lead over (NATS).
func SetPoolEscape(w *Worker, d time.Duration) { w.pool.escape.Store(int64(d)) }

// PoolQueued is how many requests wait in w's pool's queue (NATS).
func PoolQueued(w *Worker) int { return len(w.pool.msgs) }

// PoolEscapes is how many escapes of w's leaders (from a slow handler)
// added leaders.
func PoolEscapes(w *Worker) int64 { return w.pool.escapes.Load() }

// PoolStreaks is how many leaders w's streak rule added.
func PoolStreaks(w *Worker) int64 { return w.pool.streaks.Load() }

// EarlyCancels is how many cancellations w keeps for requests it has not
// taken.
func EarlyCancels(w *Worker) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.early.by)
}

// SetPoolQueueWait sets how long a request may wait in w's pool's queue
// and still run (NATS).
func SetPoolQueueWait(w *Worker, d time.Duration) { w.pool.maxWait.Store(int64(d)) }

// PoolQueueMarked reports whether every request now in w's pool's queue
// has waited the queue wait bound at least (NATS).
func PoolQueueMarked(w *Worker) bool {
	p := w.pool
	return p.stale.Load() >= p.taken.Load()+uint64(len(p.msgs))
}

// PoolQueueSeen reports whether the watcher of w's pool's queue has
// marked every request now in it (NATS).
func PoolQueueSeen(w *Worker) bool {
	p := w.pool
	return p.marked.Load() >= p.taken.Load()+uint64(len(p.msgs))
}

// SetPoolAfterTake has w's leaders run h between taking a request from
// the queue and accepting it (NATS).
func SetPoolAfterTake(w *Worker, h func()) { w.pool.afterTake.Store(&h) }

// PoolReadingEnded reports whether w's pool's reading has ended (NATS).
func PoolReadingEnded(w *Worker) bool {
	select {
	case <-w.pool.endMsgs:
		return true
	default:
		return false
	}
}
