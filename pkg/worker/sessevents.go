package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/logctx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// Session events (see package bus): what a worker sends to legacy
// sessions' GET streams (resources/updated, and the notifications and
// server-to-client requests of a session outside any request) goes
// through any frontend, which logs it in the session's GET log, so it
// reaches a client that resumes its GET stream anywhere, also while the
// frontend that held it is dead. One sender per worker sends the events in
// order, in batches, one batch outstanding at a time, each resent until a
// frontend replies for it or its events' deadline passes.

// sessionEventTTL is how long an event is tried before it is dropped.
const sessionEventTTL = 30 * time.Second

// maxQueuedSessionEvents bounds the events waiting to be sent; beyond it
// new ones are refused (logged and dropped).
const maxQueuedSessionEvents = 10000

// errSessionEventsFull is returned when the sender's queue is full.
var errSessionEventsFull = errors.New("worker: too many session events waiting to be sent")

// queuedEvent is an event waiting to be sent; done, when not nil, gets
// whether it was logged (buffered 1).
type queuedEvent struct {
	ev       bus.SessionEvent
	deadline time.Time
	done     chan bool
}

// sessionSender sends one worker's session events.
type sessionSender struct {
	w *Worker

	mu      sync.Mutex
	q       []queuedEvent
	seq     uint64
	started bool
	stopped bool
	signal  chan struct{} // one slot: events are waiting
	quit    chan struct{} // closed by stop: send what is queued, then end
	done    chan struct{} // closed when run returns
}

func newSessionSender(w *Worker) *sessionSender {
	return &sessionSender{w: w, signal: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

// start runs the sender; stop ends it.
func (s *sessionSender) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	go s.run() // owned by the worker: ends at stop (Shutdown)
}

// enqueue queues an event for session (or, with uri, for every session
// subscribed to it). With wait, the returned channel gets whether a
// session logged it.
func (s *sessionSender) enqueue(session, uri string, kind bus.FrameKind, msg []byte, wait bool) (<-chan bool, error) {
	qe := queuedEvent{ev: bus.SessionEvent{Session: session, URI: uri, Kind: kind, Msg: json.RawMessage(msg)},
		deadline: time.Now().Add(sessionEventTTL)}
	if wait {
		qe.done = make(chan bool, 1)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, errors.New("worker: stopped")
	}
	if len(s.q) >= maxQueuedSessionEvents {
		s.mu.Unlock()
		s.w.log.Warn("worker: dropping a session event: the queue is full", "session", shortSession(session), "uri", logctx.URI(uri))
		return nil, errSessionEventsFull
	}
	s.seq++
	qe.ev.Key = s.w.opts.ID + "." + strconv.FormatUint(s.seq, 36)
	s.q = append(s.q, qe)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
	return qe.done, nil
}

// stop sends what is queued (until ctx is done), then ends the sender.
// Events queued after stop are refused.
func (s *sessionSender) stop(ctx context.Context) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	close(s.quit)
	if !started {
		close(s.done)
		return
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		s.w.stopSends() // the batch in flight gives up; run returns
		<-s.done
	}
}

func (s *sessionSender) run() {
	defer close(s.done)
	for {
		batch := s.take()
		if len(batch) == 0 {
			select {
			case <-s.signal:
				continue
			case <-s.quit:
				if batch = s.take(); len(batch) == 0 {
					return
				}
			}
		}
		s.send(batch)
	}
}

// take removes up to a batch of events from the queue.
func (s *sessionSender) take() []queuedEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.q), bus.MaxSessionEventsBatch)
	if n == 0 {
		return nil
	}
	batch := make([]queuedEvent, n)
	copy(batch, s.q)
	clear(s.q[:n])
	s.q = s.q[n:]
	if len(s.q) == 0 {
		s.q = nil
	}
	return batch
}

// send delivers one batch: resent with backoff until a frontend replies
// for it; events past their deadline are dropped from it first.
func (s *sessionSender) send(batch []queuedEvent) {
	backoff := 20 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		batch = s.expire(batch)
		if len(batch) == 0 {
			return
		}
		if res, ok := s.request(batch); ok {
			for i, qe := range batch {
				if qe.done != nil {
					qe.done <- i < len(res) && res[i] == bus.SessionEventLogged
				}
			}
			return
		}
		t.Reset(backoff)
		select {
		case <-s.w.sendCtx.Done():
			s.fail(batch)
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// expire drops (and fails) the events past their deadline.
func (s *sessionSender) expire(batch []queuedEvent) []queuedEvent {
	now := time.Now()
	kept := batch[:0]
	for _, qe := range batch {
		if now.After(qe.deadline) {
			s.w.log.Warn("worker: a session event could not be delivered in time", "session", shortSession(qe.ev.Session), "uri", logctx.URI(qe.ev.URI))
			if qe.done != nil {
				qe.done <- false
			}
			continue
		}
		kept = append(kept, qe)
	}
	return kept
}

func (s *sessionSender) fail(batch []queuedEvent) {
	for _, qe := range batch {
		if qe.done != nil {
			qe.done <- false
		}
	}
}

// request sends the batch once; ok when a frontend replied with a result
// per event.
func (s *sessionSender) request(batch []queuedEvent) (res []byte, ok bool) {
	evs := make([]bus.SessionEvent, len(batch))
	for i, qe := range batch {
		evs[i] = qe.ev
	}
	data, err := bus.EncodeSessionEvents(evs)
	if err != nil {
		s.w.log.Error("worker: encoding session events", "err", err)
		return nil, true // cannot be mended by retrying
	}
	ctx, cancel := context.WithTimeout(s.w.sendCtx, s.w.opts.AckTimeout)
	defer cancel()
	resp, err := s.w.nc.RequestWithContext(ctx, s.w.subj.SessionEvents(), data)
	if err != nil || len(resp.Data) != len(batch) {
		return nil, false
	}
	for _, c := range resp.Data {
		if c != bus.SessionEventLogged && c != bus.SessionEventDropped {
			return nil, false // SessionEventsRetry, or not a reply of ours
		}
	}
	return resp.Data, true
}

// shortSession is a session id safe to log.
func shortSession(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
