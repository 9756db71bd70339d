package bus

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// localSub is a subscription of a Local: a handler's, with its queue of
// pending messages and the goroutine that delivers them (run), or a
// channel's (no goroutine: a message is sent at once, or dropped when the
// channel is full), or an inline handler's (no queue, no goroutine: each
// publisher runs the handler itself, see call).
type localSub struct {
	l       *Local
	slow    atomic.Bool // dropping since the last delivery or empty queue
	subject string
	queue   string
	tokens  []string // the subject's tokens when it has wildcards, else nil
	h       nats.MsgHandler
	ch      chan *nats.Msg
	inline  bool // h runs on the publishers' goroutines (SubscribeInline)

	mu               sync.Mutex
	pending          []*nats.Msg // pending[head:] wait for delivery
	head             int
	bytes            int // of pending[head:]
	maxMsgs, maxByte int // -1: no bound
	draining, closed bool
	active           int           // inline: handler calls running
	settled          bool          // inline: done is closed
	wake             chan struct{} // cap 1: run has something to look at
	done             chan struct{} // closed once the subscription is closed
}

func newLocalSub(l *Local, subject, queue string, h nats.MsgHandler, ch chan *nats.Msg) *localSub {
	return &localSub{l: l, subject: subject, queue: queue, h: h, ch: ch,
		maxMsgs: nats.DefaultSubPendingMsgsLimit, maxByte: nats.DefaultSubPendingBytesLimit,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// deliver queues m for the handler, or sends it to the channel; past the
// limits (or a full channel) m is dropped: a slow consumer.
func (s *localSub) deliver(m *nats.Msg) {
	s.mu.Lock()
	if s.closed || s.draining {
		s.mu.Unlock()
		return
	}
	if s.ch != nil {
		s.mu.Unlock()
		select {
		case s.ch <- m:
			s.recovered()
		default:
			s.slowConsumer()
		}
		return
	}
	n := len(s.pending) - s.head
	if (s.maxMsgs > 0 && n >= s.maxMsgs) || (s.maxByte > 0 && s.bytes+len(m.Data) > s.maxByte) {
		s.mu.Unlock()
		s.slowConsumer()
		return
	}
	s.pending = append(s.pending, m)
	s.bytes += len(m.Data)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reserve counts a call of an inline subscription's handler that a
// publisher is to make once the index is unlocked (call), unless the
// subscription is stopped: a message routed to it while it was in the
// index is handled even if it is drained meanwhile, as a queued one is.
func (s *localSub) reserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.draining {
		return false
	}
	s.active++
	return true
}

// call runs an inline subscription's handler on m, a call reserved by
// reserve, on the caller's goroutine (unless the subscription was closed
// meanwhile: Unsubscribe and Close drop what is not delivered yet). Once
// the subscription is stopped, the last call to return ends it (done).
func (s *localSub) call(m *nats.Msg) {
	defer func() {
		s.mu.Lock()
		s.active--
		last := s.settleLocked()
		s.mu.Unlock()
		if last {
			close(s.done)
		}
	}()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.h(m)
	}
}

// settleLocked marks an inline subscription closed once it is stopped
// (closed or draining) and no call runs, and reports whether the caller
// is the one to close done. s.mu is held.
func (s *localSub) settleLocked() bool {
	if s.active > 0 || !(s.closed || s.draining) || s.settled {
		return false
	}
	s.closed, s.settled = true, true
	return true
}

// slowConsumer logs a drop, once until the subscription catches up.
func (s *localSub) slowConsumer() {
	if !s.slow.Swap(true) {
		s.l.log.Warn("bus: slow consumer: messages dropped", "subject", s.subject, "err", nats.ErrSlowConsumer)
	}
}

func (s *localSub) recovered() {
	if s.slow.Load() {
		s.slow.Store(false)
	}
}

// run delivers the pending messages to the handler, one at a time, until
// the subscription is closed (or drained and empty).
func (s *localSub) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if s.head == len(s.pending) {
			s.pending, s.head = s.pending[:0], 0
			if cap(s.pending) > 1024 {
				s.pending = nil // a burst's backlog is not kept
			}
			s.recovered()
			if s.draining {
				s.closed = true
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			<-s.wake
			continue
		}
		m := s.pending[s.head]
		s.pending[s.head] = nil
		s.head++
		s.bytes -= len(m.Data)
		s.mu.Unlock()
		s.h(m)
	}
}

// stop closes the subscription: at once (drain false: pending messages
// are lost), or once the pending ones are delivered.
func (s *localSub) stop(drain bool) {
	s.mu.Lock()
	if s.closed || (drain && s.draining) {
		s.mu.Unlock()
		return
	}
	if drain {
		s.draining = true
	} else {
		s.closed = true
		s.pending, s.head, s.bytes = nil, 0, 0
	}
	if s.inline {
		// Done now, or when the last call running returns (call).
		last := s.settleLocked()
		s.mu.Unlock()
		if last {
			close(s.done)
		}
		return
	}
	chanSub := s.ch != nil
	if chanSub {
		s.closed = true
	}
	s.mu.Unlock()
	if chanSub {
		close(s.done)
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *localSub) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.draining
}

// Unsubscribe implements Subscription.
func (s *localSub) Unsubscribe() error { return s.end(false) }

// Drain implements Subscription.
func (s *localSub) Drain() error { return s.end(true) }

// end takes s out of the index and stops it (see stop).
func (s *localSub) end(drain bool) error {
	if s.isClosed() {
		return nats.ErrBadSubscription
	}
	s.l.remove(s)
	s.stop(drain)
	return nil
}

// DrainWait implements Subscription.
func (s *localSub) DrainWait(ctx context.Context) error {
	if err := s.Drain(); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetPendingLimits implements Subscription (a channel's capacity is its
// own bound: the limits do not apply to it). Zero is invalid, as with
// nats.go.
func (s *localSub) SetPendingLimits(msgs, bytes int) error {
	if msgs == 0 || bytes == 0 {
		return nats.ErrInvalidArg
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nats.ErrBadSubscription
	}
	s.maxMsgs, s.maxByte = msgs, bytes
	return nil
}
