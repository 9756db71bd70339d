package frontend

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// startTestFrontend runs a frontend (embedded NATS, memory store, no
// worker: enough for listen streams) behind a real HTTP server.
func startTestFrontend(t *testing.T, opts Options) string {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	nc, err := e.Connect("fe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	opts.Store, opts.Logger = store, log
	f, err := New(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(f.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.Shutdown(ctx)
		hs.Close()
	})
	return strings.TrimPrefix(hs.URL, "http://")
}

// listenRaw opens a listen stream and returns the connection and the HTTP
// status; on 200 the acknowledgement has been read.
func listenRaw(t *testing.T, addr string, id int) (*net.TCPConn, int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == 200 {
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "event: message") {
			t.Fatalf("acknowledgement: %q, %v", line, err)
		}
	}
	return conn.(*net.TCPConn), resp.StatusCode
}

// With no close watcher, the keepalive is what finds a dead peer: its
// write fails and the slot is freed.
func TestHubKeepaliveFreesDeadPeer(t *testing.T) {
	noCloseWatch = true
	t.Cleanup(func() { noCloseWatch = false })
	addr := startTestFrontend(t, Options{MaxListen: 1, ListenKeepAlive: 100 * time.Millisecond})
	dead, st := listenRaw(t, addr, 1)
	if st != 200 {
		t.Fatalf("listen: HTTP %d", st)
	}
	if _, st := listenRaw(t, addr, 2); st != 503 {
		t.Fatalf("second listen while the first holds the only slot: HTTP %d, want 503", st)
	}
	_ = dead.SetLinger(0) // RST: the next write to it fails
	_ = dead.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, st := listenRaw(t, addr, 3); st == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead peer's slot was not freed by the keepalive")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

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
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := tryWrite(c, big[:1024]); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a reset connection kept succeeding")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
