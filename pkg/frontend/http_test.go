package frontend

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBody: a body of a known length is read whole, a shorter one is
// an error, and one of unknown length is capped.
func TestReadBody(t *testing.T) {
	req := func(body string, length int64) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.ContentLength = length
		return r
	}
	w := httptest.NewRecorder()
	if b, err := readBody(w, req(`{"a":1}`, 7), 100); err != nil || string(b) != `{"a":1}` {
		t.Errorf("known length: %q, %v", b, err)
	}
	if _, err := readBody(w, req(`{"a"`, 7), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body shorter than its Content-Length: %v, want io.ErrUnexpectedEOF", err)
	}
	if b, err := readBody(w, req(`{"a":1}`, -1), 100); err != nil || string(b) != `{"a":1}` {
		t.Errorf("unknown length: %q, %v", b, err)
	}
	big := strings.Repeat("0123456789", 20_000) // past the up-front buffer
	if b, err := readBody(w, req(big, int64(len(big))), 1<<20); err != nil || string(b) != big {
		t.Errorf("a large body: %d bytes, %v", len(b), err)
	}
	// A large Content-Length with a few bytes behind it allocates for the
	// bytes, not for the length.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := readBody(w, req(`{"a"`, 4<<20), 4<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a 4 MiB Content-Length with 4 bytes: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("a 4 MiB Content-Length with 4 bytes allocated %d bytes", grew)
	}
	var mbe *http.MaxBytesError
	if _, err := readBody(w, req(strings.Repeat("x", 101), -1), 100); !errors.As(err, &mbe) {
		t.Errorf("unknown length over the cap: %v, want a MaxBytesError", err)
	}
}
