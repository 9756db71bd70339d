package stream

import (
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// frame is one message from a worker for a stream.
type frame struct {
	kind    bus.FrameKind
	payload []byte
	// seq is an acked frame's sequence number (0: not acked), reply where
	// its ack goes once the frame is logged.
	seq   uint64
	reply string
}

// inbox is an open exchange waiting for frames from the bus. The frame
// dispatcher (OnFrame) queues frames and signals; the goroutine that owns
// the inbox takes them and closes it when done. The queue is bounded: an
// inbox whose owner falls max frames behind overflows (later frames are
// dropped) and its owner ends it. An inbox costs a small struct and a
// one-slot channel, whatever the bound.
type inbox struct {
	id     string
	signal chan struct{} // one slot: "frames are waiting"
	max    int

	mu         sync.Mutex // guards q and overflowed
	q          []frame
	overflowed bool
}

// push queues a frame (or marks the inbox overflowed) and signals; false
// when the frame was dropped (the inbox overflowed).
func (s *inbox) push(fr frame) bool {
	s.mu.Lock()
	queued := false
	switch {
	case s.overflowed:
		s.mu.Unlock()
		return false
	case len(s.q) >= s.max:
		s.overflowed = true
	default:
		queued = true
		s.q = append(s.q, fr)
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
	return queued
}

// take moves the queued frames into buf (reused) and reports whether the
// inbox overflowed.
func (s *inbox) take(buf []frame) ([]frame, bool) {
	s.mu.Lock()
	buf = append(buf[:0], s.q...)
	clear(s.q)
	s.q = s.q[:0]
	ov := s.overflowed
	s.mu.Unlock()
	return buf, ov
}

// openInbox registers a new inbox; the caller must closeInbox it.
func (s *Streams) openInbox() *inbox {
	// Random, not sequential: stream ids appear in the event ids clients
	// see (ownership is checked against the session's log all the same).
	id := strconv.FormatUint(rand.Uint64(), 36)
	in := &inbox{id: id, signal: make(chan struct{}, 1), max: s.opts.StreamBuffer}
	s.mu.Lock()
	s.open[id] = in
	s.mu.Unlock()
	return in
}

func (s *Streams) closeInbox(in *inbox) {
	s.mu.Lock()
	if s.open[in.id] == in {
		delete(s.open, in.id)
	}
	s.mu.Unlock()
}

// hasInbox reports whether this frontend has the bus stream open.
func (s *Streams) hasInbox(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[id] != nil
}

// OnFrame routes a frame from the bus (a message on
// Subjects.FrontendStreams of this frontend) to its open exchange without
// blocking; a frame for no open exchange, or not a frame, is dropped.
func (s *Streams) OnFrame(m *nats.Msg) {
	id := bus.StreamID(m.Subject)
	s.mu.Lock()
	in := s.open[id]
	s.mu.Unlock()
	seq := bus.FrameSeq(m)
	if in == nil {
		if seq > 0 && m.Reply != "" {
			// Not held here (any more): the worker sends it through
			// any frontend at once.
			_ = bus.Respond(s.nc, m, []byte(bus.AckGone))
		}
		return
	}
	status := ""
	if m.Header != nil {
		status = m.Header.Get("Status")
	}
	kind, payload := bus.ParseFrame(m.Data, status)
	if kind == bus.FrameInvalid {
		return
	}
	fr := frame{kind: kind, payload: payload}
	if seq > 0 {
		fr.seq, fr.reply = seq, m.Reply
	}
	if !in.push(fr) {
		s.opts.Metrics.MessageDropped("inbox_overflow")
	}
}

// ack acks an acked frame, once it is logged (or needs no log).
func (s *Streams) ack(fr frame) {
	if fr.reply != "" {
		_ = s.nc.Publish(fr.reply, nil)
	}
}
