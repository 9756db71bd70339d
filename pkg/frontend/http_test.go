package frontend

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
	var mbe *http.MaxBytesError
	if _, err := readBody(w, req(strings.Repeat("x", 101), -1), 100); !errors.As(err, &mbe) {
		t.Errorf("unknown length over the cap: %v, want a MaxBytesError", err)
	}
}
