package worker

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
