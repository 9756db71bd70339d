package frontend

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
)

// sseWriter writes Server-Sent Events with a write deadline per flush.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// startSSE writes the SSE response headers with status 200.
func startSSE(w http.ResponseWriter, timeout time.Duration, extra func(http.Header)) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	if extra != nil {
		extra(h)
	}
	w.WriteHeader(http.StatusOK)
	// The first flush goes through w (gin writes the head on its Flush);
	// later flushes go to the innermost writer, whose FlushError reports a
	// failed write: http.ResponseController stops at a wrapper that is an
	// http.Flusher (gin's) and its Flush swallows the error.
	_ = http.NewResponseController(w).Flush()
	return &sseWriter{w: w, rc: http.NewResponseController(httpx.Innermost(w)), timeout: timeout}
}

// event writes one event: an optional id, then data (one data: line per
// line of data), and flushes.
func (s *sseWriter) event(id string, data []byte) error {
	s.buf = appendEvent(s.buf[:0], id, data)
	return s.write(s.buf)
}

// formatEvent returns the bytes of one SSE event.
func formatEvent(id string, data []byte) []byte {
	return appendEvent(make([]byte, 0, len(data)+len(id)+32), id, data)
}

func appendEvent(b []byte, id string, data []byte) []byte {
	b = append(b, "event: message\n"...)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(data[:i], []byte{'\r'})...)
		b = append(b, '\n')
		data = data[i+1:]
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// comment writes an SSE comment line (keepalive).
func (s *sseWriter) comment(text string) error {
	return s.write([]byte(": " + text + "\n\n"))
}

// raw writes pre-formatted SSE bytes (retry:, priming events).
func (s *sseWriter) raw(b []byte) error { return s.write(b) }

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) flush() error { return s.rc.Flush() }

// priming writes the priming event of a resumable stream: an id and empty
// data, with the reconnection delay.
func (s *sseWriter) priming(id string, retry time.Duration) error {
	b := []byte("id: " + id + "\n")
	if retry > 0 {
		b = append(b, "retry: "...)
		b = append(b, []byte(strconvItoa(retry.Milliseconds()))...)
		b = append(b, '\n')
	}
	b = append(b, "data: \n\n"...)
	return s.write(b)
}

func strconvItoa(n int64) string { return strconv.FormatInt(n, 10) }

// clientWriter writes a stream's events to the client from its own
// goroutine, through a bounded queue: whoever produces the events never
// waits for a slow client. The producer (one goroutine) calls send and
// stop; the writer goroutine closes done when it exits (queue closed,
// stop, or a failed write).
type clientWriter struct {
	sse        *sseWriter
	q          chan []byte
	done       chan struct{}
	quit       chan struct{}
	overflowed atomic.Bool
	once       sync.Once
}

func newClientWriter(sse *sseWriter, buf int) *clientWriter {
	c := &clientWriter{sse: sse, q: make(chan []byte, buf), done: make(chan struct{}), quit: make(chan struct{})}
	go c.run()
	return c
}

func (c *clientWriter) run() {
	defer close(c.done)
	for {
		select {
		case b, ok := <-c.q:
			if !ok {
				return
			}
			if err := c.sse.raw(b); err != nil {
				return
			}
		case <-c.quit:
			return
		}
	}
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
		c.once.Do(func() { close(c.quit) })
		return false
	}
}

// stop lets the writer finish what is queued (each write bounded by the
// write timeout) and waits for it; after an overflow it stops at once.
func (c *clientWriter) stop() {
	close(c.q)
	<-c.done
}
