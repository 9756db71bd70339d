package stream

import (
	"sync"
	"sync/atomic"
)

// clientWriter writes a stream's events to the client from its own
// goroutine, through a bounded queue: whoever produces the events never
// waits for a slow client. The producer (one goroutine) calls send and
// stop; the writer goroutine closes done when it exits (queue closed,
// stop, or a failed write).
type clientWriter struct {
	sse        *SSE
	q          chan []byte
	done       chan struct{}
	quit       chan struct{}
	overflowed atomic.Bool
	failed     atomic.Bool // a write failed
	once       sync.Once
	// dropped, when set, is called once, for the event an overflow left
	// out (the metrics' slow_reader).
	dropped func()
}

func newClientWriter(sse *SSE, buf int) *clientWriter {
	c := &clientWriter{sse: sse, q: make(chan []byte, buf), done: make(chan struct{}), quit: make(chan struct{})}
	go c.run() // owned by the producer: ends at stop (or a failed write)
	return c
}

func (c *clientWriter) run() {
	defer close(c.done)
	l := &Loop[[]byte]{
		Events: c.q,
		OnEvent: func(b []byte) bool {
			if c.sse.Raw(b) != nil {
				c.failed.Store(true)
				return false
			}
			return true
		},
		Stop: c.quit,
	}
	l.Run()
}

// send queues pre-formatted SSE bytes; false when the writer has stopped
// or its queue is full (then it is stopped: the client is too slow).
func (c *clientWriter) send(b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.q <- b:
		return true
	default:
		c.overflowed.Store(true)
		c.once.Do(func() {
			close(c.quit)
			if c.dropped != nil {
				c.dropped()
			}
		})
		return false
	}
}

// delivered reports, after stop, whether every event sent was written.
func (c *clientWriter) delivered() bool {
	return !c.failed.Load() && !c.overflowed.Load()
}

// stop lets the writer finish what is queued (each write bounded by the
// write timeout) and waits for it; after an overflow it stops at once.
func (c *clientWriter) stop() {
	close(c.q)
	<-c.done
}
