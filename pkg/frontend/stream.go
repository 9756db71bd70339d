package frontend

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync/atomic"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// frame is one message from a worker for a stream.
type frame struct {
	kind    bus.FrameKind
	payload []byte
}

// stream is an open exchange waiting for frames from the bus. Only the
// frame dispatcher (onFrame) sends on ch; the HTTP goroutine that owns the
// stream reads it and unregisters the stream when done.
type stream struct {
	id         string
	ch         chan frame
	overflowed atomic.Bool
}

// openStream registers a new stream; the caller must closeStream it.
func (f *Frontend) openStream() *stream {
	f.mu.Lock()
	// Random, not sequential: a stream id appears in event ids clients see.
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := strconv.FormatUint(binary.LittleEndian.Uint64(b[:]), 36)
	s := &stream{id: id, ch: make(chan frame, f.opts.StreamBuffer)}
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

// onFrame routes a frame from the bus to its stream without blocking: a
// stream whose buffer is full is marked overflowed and its owner closes it.
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
	if s.overflowed.Load() {
		return
	}
	select {
	case s.ch <- frame{kind: kind, payload: payload}:
	default:
		// Only this goroutine sends on s.ch, so closing it here is safe.
		s.overflowed.Store(true)
		close(s.ch)
		f.log.Warn("frontend: closing a slow stream", "stream", id)
	}
}
