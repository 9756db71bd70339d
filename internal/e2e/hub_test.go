package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
)

// Listen streams taken over by the frontend's hub: no goroutine per idle
// stream, closed streams noticed at once, keepalives and the final result
// written by the hub, and the handler's way kept where a connection cannot
// be taken over.

// rawListenStream opens a listen stream on a raw connection (no client
// goroutine) and returns it after reading the response head; status is
// the HTTP status.
func rawListenStream(t *testing.T, endpoint string, id int, filter map[string]any) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	msg, hdr := testenv.ModernRequest(id, "subscriptions/listen", map[string]any{"notifications": filter}, nil)
	body, _ := json.Marshal(msg)
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", u.Path, u.Host, len(body))
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	b.Write(body)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the listen response: %v", err)
	}
	_ = conn.SetDeadline(time.Time{})
	if resp.StatusCode == 200 {
		if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("listen response headers: %v", resp.Header)
		}
		// Keep reading the chunked body through resp.Body.
		return conn, bufio.NewReader(resp.Body), 200
	}
	return conn, br, resp.StatusCode
}

// readEvent reads the next SSE event (or comment) from a stream body.
func readEvent(t *testing.T, conn net.Conn, br *bufio.Reader, timeout time.Duration) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %q)", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

func TestListenHubNoGoroutinePerStream(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{ListenKeepAlive: time.Hour}})
	filter := map[string]any{"toolsListChanged": true}
	c0, b0, st := rawListenStream(t, ip.URL, 1, filter)
	if st != 200 {
		t.Fatalf("listen: HTTP %d", st)
	}
	if ev := readEvent(t, c0, b0, 5*time.Second); !strings.Contains(ev, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event %q", ev)
	}
	before := runtime.NumGoroutine()
	const n = 50
	conns := make([]net.Conn, n)
	bodies := make([]*bufio.Reader, n)
	for i := range n {
		c, b, st := rawListenStream(t, ip.URL, 100+i, filter)
		if st != 200 {
			t.Fatalf("listen %d: HTTP %d", i, st)
		}
		if ev := readEvent(t, c, b, 5*time.Second); !strings.Contains(ev, "acknowledged") {
			t.Fatalf("listen %d: first event %q", i, ev)
		}
		conns[i], bodies[i] = c, b
	}
	// The requests' own goroutines end after the answers: wait for them.
	after := runtime.NumGoroutine()
	if !testutil.WaitFor(testenv.HangGuard(5*time.Second), func() bool { after = runtime.NumGoroutine(); return after-before <= 10 }) {
		t.Fatalf("%d idle listen streams added %d goroutines (%d -> %d); want none per stream", n, after-before, before, after)
	}
	// Every stream still gets its events, tagged with its own id.
	c := testenv.NewModernClient(t, ip.URL)
	modern(t, c, 1, "tools/call", map[string]any{"name": "test_trigger_tool_change", "arguments": map[string]any{}}, nil, nil)
	for i := range n {
		ev := readEvent(t, conns[i], bodies[i], 5*time.Second)
		if !strings.Contains(ev, "notifications/tools/list_changed") || !strings.Contains(ev, `"io.modelcontextprotocol/subscriptionId":`+strconv.Itoa(100+i)) {
			t.Fatalf("stream %d got %q", i, ev)
		}
	}
}

// A stream the client closes frees its slot at once (the cap is 1 here),
// without waiting for a keepalive write to fail.
func TestListenHubClosedStreamFreesSlot(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{MaxListen: 1, ListenKeepAlive: time.Hour}})
	filter := map[string]any{"toolsListChanged": true}
	c1, b1, st := rawListenStream(t, ip.URL, 1, filter)
	if st != 200 {
		t.Fatalf("first listen: HTTP %d", st)
	}
	readEvent(t, c1, b1, 5*time.Second)
	if _, _, st := rawListenStream(t, ip.URL, 2, filter); st != 503 {
		t.Fatalf("second listen while the first is open: HTTP %d, want 503", st)
	}
	_ = c1.Close()
	// At once: well before a keepalive (a hang guard, not a latency target).
	testutil.PollFor(t, testenv.HangGuard(3*time.Second), "the closed stream's slot to be freed", func() bool {
		c, b, st := rawListenStream(t, ip.URL, 3, filter)
		if st == 200 {
			readEvent(t, c, b, 5*time.Second)
			return true
		}
		_ = c.Close()
		return false
	})
}

// Keepalives reach taken-over streams, and on shutdown each gets its
// SubscriptionsListenResult, the end of the chunked body, and EOF.
func TestListenHubKeepaliveAndShutdown(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{ListenKeepAlive: 100 * time.Millisecond}})
	conn, body, st := rawListenStream(t, ip.URL, 7, map[string]any{"promptsListChanged": true})
	if st != 200 {
		t.Fatalf("listen: HTTP %d", st)
	}
	readEvent(t, conn, body, 5*time.Second)
	if ev := readEvent(t, conn, body, 5*time.Second); !strings.HasPrefix(ev, ": keepalive") {
		t.Fatalf("want a keepalive comment, got %q", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ip.Frontend.Shutdown(ctx) }()
	for {
		ev := readEvent(t, conn, body, 5*time.Second)
		if strings.HasPrefix(ev, ": keepalive") {
			continue
		}
		if !strings.Contains(ev, `"id":7,"result":{"resultType":"complete"`) {
			t.Fatalf("want the final result, got %q", ev)
		}
		break
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := io.ReadAll(body); err != nil || len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("after the final result: %q, %v; want the end of the body", rest, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// noHijack hides the connection: the stream is served by its handler.
type noHijack struct{ http.ResponseWriter }

func (w noHijack) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func TestListenHubFallback(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{})
	h := ip.Frontend.Router("/mcp")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(noHijack{w}, r)
	}))
	defer hs.Close()
	defer hs.CloseClientConnections()
	before := runtime.NumGoroutine()
	conn, body, st := rawListenStream(t, hs.URL+"/mcp", 1, map[string]any{"toolsListChanged": true})
	if st != 200 {
		t.Fatalf("listen: HTTP %d", st)
	}
	if ev := readEvent(t, conn, body, 5*time.Second); !strings.Contains(ev, "acknowledged") {
		t.Fatalf("first event %q", ev)
	}
	if runtime.NumGoroutine() <= before {
		t.Fatal("a stream that could not be taken over should be served by its handler goroutine")
	}
	c := testenv.NewModernClient(t, ip.URL)
	modern(t, c, 1, "tools/call", map[string]any{"name": "test_trigger_tool_change", "arguments": map[string]any{}}, nil, nil)
	if ev := readEvent(t, conn, body, 5*time.Second); !strings.Contains(ev, "notifications/tools/list_changed") {
		t.Fatalf("got %q", ev)
	}
}
