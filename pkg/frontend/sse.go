package frontend

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
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
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = s.flush()
	return s
}

// event writes one event: an optional id, then data (one data: line per
// line of data), and flushes.
func (s *sseWriter) event(id string, data []byte) error {
	b := s.buf[:0]
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
	b = append(b, "\n\n"...)
	s.buf = b
	return s.write(b)
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
