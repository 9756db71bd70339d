package frontend

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
}

// stream is an open exchange waiting for frames from the bus. The frame
// dispatcher (onFrame) queues frames and signals; the goroutine that owns
// the stream takes them and unregisters the stream when done. The queue is
// bounded: a stream whose owner falls MaxBuffer frames behind overflows
// (later frames are dropped) and its owner ends it. A stream costs a small
// struct and a one-slot channel, whatever the bound.
type stream struct {
	id     string
	signal chan struct{} // one slot: "frames are waiting"
	max    int

	mu         sync.Mutex // guards q and overflowed
	q          []frame
	overflowed bool
}

// push queues a frame (or marks the stream overflowed) and signals.
func (s *stream) push(fr frame) {
	s.mu.Lock()
	switch {
	case s.overflowed:
		s.mu.Unlock()
		return
	case len(s.q) >= s.max:
		s.overflowed = true
	default:
		s.q = append(s.q, fr)
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// take moves the queued frames into buf (reused) and reports whether the
// stream overflowed.
func (s *stream) take(buf []frame) ([]frame, bool) {
	s.mu.Lock()
	buf = append(buf[:0], s.q...)
	clear(s.q)
	s.q = s.q[:0]
	ov := s.overflowed
	s.mu.Unlock()
	return buf, ov
}

// openStream registers a new stream; the caller must closeStream it.
func (f *Frontend) openStream() *stream {
	// Random, not sequential: stream ids appear in the event ids clients
	// see (ownership is checked against the session's log all the same).
	id := strconv.FormatUint(rand.Uint64(), 36)
	s := &stream{id: id, signal: make(chan struct{}, 1), max: f.opts.StreamBuffer}
	f.mu.Lock()
	f.streams[id] = s
	f.mu.Unlock()
	return s
}

func (f *Frontend) closeStream(s *stream) {
	f.mu.Lock()
	if f.streams[s.id] == s {
		delete(f.streams, s.id)
	}
	f.mu.Unlock()
}

// onFrame routes a frame from the bus to its stream without blocking.
func (f *Frontend) onFrame(m *nats.Msg) {
	id := bus.StreamID(m.Subject)
	f.mu.Lock()
	s := f.streams[id]
	f.mu.Unlock()
	if s == nil {
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
	s.push(frame{kind: kind, payload: payload})
}
