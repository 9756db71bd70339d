package hub

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

func TestResponseHead(t *testing.T) {
	h := http.Header{}
	h.Set("Access-Control-Allow-Origin", "http://localhost")
	h.Set("Content-Length", "12")
	h.Set("Content-Type", "application/json")
	got := string(responseHead(h))
	for _, want := range []string{"HTTP/1.1 200 OK\r\n", "Access-Control-Allow-Origin: http://localhost\r\n", "Content-Type: text/event-stream\r\n",
		"Transfer-Encoding: chunked\r\n", "X-Accel-Buffering: no\r\n", "\r\n\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("head lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Content-Length") || strings.Contains(got, "application/json") {
		t.Errorf("head keeps a header that contradicts the stream:\n%s", got)
	}
	if c := string(chunk(nil, []byte("hello"))); c != "5\r\nhello\r\n" {
		t.Errorf("chunk = %q", c)
	}
}

// tryWrite takes what the socket takes and returns at once: a client
// that does not read never holds the hub's writer.
func TestTryWriteNeverWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 64<<20) // far more than the socket buffers hold
	// A write that waited for the peer would never return: the guard
	// below only catches that hang.
	var n, m int
	var err1, err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err1 = tryWrite(c, big)
		if err1 == nil && n > 0 {
			m, err2 = tryWrite(c, big[n:])
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("tryWrite waited for a peer that does not read")
	}
	if err1 != nil || n <= 0 || n >= len(big) {
		t.Fatalf("first write to a peer that does not read: n=%d of %d, err=%v", n, len(big), err1)
	}
	if err2 != nil || m >= len(big)-n {
		t.Fatalf("second write with the buffers full: n=%d, err=%v", m, err2)
	}
	// The peer resets the connection: a write fails.
	_ = peer.(*net.TCPConn).SetLinger(0)
	_ = peer.Close()
	testutil.Poll(t, "a write to a reset connection to fail", func() bool {
		_, err := tryWrite(c, big[:1024])
		return err != nil
	})
}
