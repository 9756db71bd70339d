package stream

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
)

// SSE writes Server-Sent Events to one response, with a write deadline per
// flush. It is not safe for concurrent use: one goroutine writes a stream.
type SSE struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// StartSSE writes the SSE response headers (and those extra sets) with
// status 200, flushes them, and returns the stream's writer; each later
// write must complete within timeout.
func StartSSE(w http.ResponseWriter, timeout time.Duration, extra func(http.Header)) *SSE {
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
	return &SSE{w: w, rc: http.NewResponseController(httpx.Innermost(w)), timeout: timeout}
}

// Event writes one event: an optional id, then data (one data: line per
// line of data), and flushes.
func (s *SSE) Event(id string, data []byte) error {
	s.buf = AppendEvent(s.buf[:0], id, data)
	return s.write(s.buf)
}

// FormatEvent returns the bytes of one SSE event (as Event writes it).
func FormatEvent(id string, data []byte) []byte {
	return AppendEvent(make([]byte, 0, len(data)+len(id)+32), id, data)
}

// AppendEvent appends one SSE event ("event: message", the id when not
// empty, a data: line per line of data) to b.
func AppendEvent(b []byte, id string, data []byte) []byte {
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

// Comment writes an SSE comment line (a keepalive) and flushes.
func (s *SSE) Comment(text string) error {
	return s.write([]byte(": " + text + "\n\n"))
}

// Raw writes pre-formatted SSE bytes (events, retry:) and flushes.
func (s *SSE) Raw(b []byte) error { return s.write(b) }

func (s *SSE) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Priming writes the priming event of a resumable stream: an id and empty
// data, with the reconnection delay (omitted when retry is not positive).
func (s *SSE) Priming(id string, retry time.Duration) error {
	b := []byte("id: " + id + "\n")
	if retry > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, retry.Milliseconds(), 10)
		b = append(b, '\n')
	}
	b = append(b, "data: \n\n"...)
	return s.write(b)
}

// SlowWrite reports whether a write to a client failed because the client
// did not read in time (the write deadline passed).
func SlowWrite(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
