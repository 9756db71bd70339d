package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// The fault tests run make cluster's topology (nginx round robin in front
// of 2 frontends, 2 workers, nats-server, redis-server: persistent where a
// restart is tested), talk to it through nginx, and break parts of it.

// proxyCluster starts make cluster's topology.
func proxyCluster(t *testing.T, persistent bool) *testenv.Cluster {
	return testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true, Persistent: persistent})
}

// streamHolder returns the index of the frontend whose open-streams gauge
// of kind counts a stream (the one the proxy picked).
func streamHolder(t *testing.T, c *testenv.Cluster, kind string) int {
	t.Helper()
	want := `mcpfleet_frontend_open_streams{kind="` + kind + `"} 1`
	holder := -1
	testutil.PollFor(t, testenv.HangGuard(5*time.Second), "a frontend to report an open "+kind+" stream", func() bool {
		for i, fe := range c.Frontends {
			resp, err := http.Get(fe.AdminURL(t) + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				holder = i
				return true
			}
		}
		return false
	})
	return holder
}

// TestWorkerKilled kills the worker running a request: the client gets a
// JSON-RPC error within a few seconds, a request on the other worker is
// unaffected, and new requests go to the surviving worker at once.
func TestWorkerKilled(t *testing.T) {
	c := proxyCluster(t, false)
	cl := testenv.NewClient(t, c.ProxyURL)
	cl.Initialize(nil)
	// Two sleeps: each worker takes one, most of the time; find them.
	s1 := cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 8000}, "_meta": map[string]any{"progressToken": 1}}), nil)
	s1.NextMessage(t, 10*time.Second)
	victim := -1
	re := regexp.MustCompile(`"msg":"sleep started","request":"1"|msg="sleep started" request=1 `)
	testutil.PollFor(t, testenv.HangGuard(5*time.Second), "a worker to log the sleep", func() bool {
		for i, w := range c.Workers {
			if re.MatchString(w.Log()) {
				victim = i
			}
		}
		return victim >= 0
	})
	other := tryOtherWorker(t, cl, c, victim)
	killed := time.Now()
	c.Workers[victim].Kill()
	msgs, _, ended := s1.Rest(15 * time.Second)
	lost := time.Since(killed)
	if !ended {
		t.Fatal("the stream of the killed worker's request did not end")
	}
	resp := responseOf(msgs)
	if resp == nil || resp.Error == nil || !strings.Contains(resp.Error.Message, "stopped responding") {
		t.Fatalf("after the kill: %+v", msgs)
	}
	t.Logf("the client got the error %s after the worker's SIGKILL", lost.Round(time.Millisecond))
	if lost > 5*time.Second {
		t.Errorf("the error took %s, want at most 5s", lost)
	}
	// The request on the other worker finishes normally.
	if resp := responseOf(expectEnd(t, other)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("the other worker's request: %+v", resp)
	}
	// New requests work at once.
	start := time.Now()
	for i := 0; i < 6; i++ {
		cl.Call(100+i, "tools/call", callParams("echo", map[string]any{"text": "after"}))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("6 calls after the kill took %s", d)
	}
}

// TestNoWorker: once the last worker has left, requests of both eras are
// answered at once with 503 and a JSON-RPC error (NATS "no responders"),
// never left to hang.
func TestNoWorker(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1})
	cl := testenv.NewClient(t, c.URLs[0])
	cl.Initialize(nil)
	c.Workers[0].Stop(10 * time.Second)
	mc := testenv.NewModernClient(t, c.URLs[0])
	fresh := testenv.NewClient(t, c.URLs[0])
	for _, tc := range []struct {
		name string
		call func() *testenv.Reply
	}{
		{"legacy tools/call", func() *testenv.Reply {
			return cl.Post(testenv.Request(2, "tools/call", callParams("echo", map[string]any{"text": "x"})), nil)
		}},
		{"modern tools/call", func() *testenv.Reply {
			return modern(t, mc, 3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil, nil)
		}},
		{"initialize", func() *testenv.Reply {
			return fresh.Post(testenv.Request(4, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
		}},
	} {
		start := time.Now()
		r := tc.call()
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s without a worker took %s", tc.name, d)
		}
		if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != -32603 {
			t.Fatalf("%s without a worker: got %s, want 503 with a JSON-RPC error", tc.name, r)
		}
	}
}

// tryOtherWorker starts sleeps until one runs on a worker other than
// victim, and returns its stream. The queue group picks a worker at
// random: 16 misses in a row (1 in 65536) fail the test.
func tryOtherWorker(t *testing.T, cl *testenv.Client, c *testenv.Cluster, victim int) *testenv.Stream {
	t.Helper()
	for i := 0; i < 16; i++ {
		id := 10 + i
		s := cl.PostStream(testenv.Request(id, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": id}}), nil)
		s.NextMessage(t, 10*time.Second)
		re := regexp.MustCompile(fmt.Sprintf(`"msg":"sleep started","request":"%d"|msg="sleep started" request=%d `, id, id))
		for j, w := range c.Workers {
			if j != victim && re.MatchString(w.Log()) {
				return s
			}
		}
		s.Close()
	}
	t.Fatal("no sleep landed on the other worker in 16 tries")
	return nil
}

// TestFrontendKilled: a modern listen client whose frontend is killed
// reconnects through the proxy, gets its acknowledgement and its events;
// legacy resumption is TestResumeAfterFrontendKilled.
func TestFrontendKilled(t *testing.T) {
	c := proxyCluster(t, false)
	mc := testenv.NewModernClient(t, c.ProxyURL)
	s, _ := openListen(t, mc, "l1", map[string]any{"toolsListChanged": true})
	c.Frontends[streamHolder(t, c, "listen")].Kill()
	if _, _, ended := s.Rest(5 * time.Second); !ended {
		t.Fatal("the listen stream outlived its frontend")
	}
	s2, _ := openListen(t, mc, "l1", map[string]any{"toolsListChanged": true})
	modern(t, mc, 1, "tools/call", map[string]any{"name": "test_trigger_tool_change"}, nil, nil)
	if _, m := s2.NextMessage(t, 10*time.Second); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s", m.Method)
	}
}

// TestRedisRestart: while redis-server is down, requests that need it fail
// fast with a clear error; afterwards the same session works again
// (persisted by Redis) without restarting anything.
func TestRedisRestart(t *testing.T) {
	c := proxyCluster(t, true)
	cl := testenv.NewClient(t, c.ProxyURL)
	cl.Initialize(nil)
	cl.Call(1, "tools/call", callParams("echo", map[string]any{"text": "before"}))
	c.Redis.Stop(5 * time.Second)
	down := time.Now()
	failed := 0
	var slowest time.Duration
	for i := 0; i < 4; i++ {
		start := time.Now()
		r := cl.Post(testenv.Request(10+i, "tools/call", callParams("echo", map[string]any{"text": "down"})), nil)
		d := time.Since(start)
		slowest = max(slowest, d)
		if d > testenv.HangGuard(6*time.Second) { // fails fast: a hang guard, not a latency target
			t.Fatalf("a request during the outage took %s", d)
		}
		if r.Status != 503 || r.ErrorCode() != -32603 {
			t.Fatalf("during the outage: got %s, want 503 with a JSON-RPC error", r)
		}
		failed++
	}
	restarted := time.Now()
	c.Redis = c.Redis.Restart(t)
	t.Logf("redis restart: the slowest failed request took %s; redis-server was back up %s after the restart began", slowest.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
	var back time.Duration
	var r *testenv.Reply
	if !testutil.WaitFor(testenv.HangGuard(15*time.Second), func() bool {
		r = cl.Post(testenv.Request(20, "tools/call", callParams("echo", map[string]any{"text": "after"})), nil)
		return r.Status == 200 && r.ErrorCode() == 0
	}) {
		t.Fatalf("the session did not work again after the restart: %s", r)
	}
	back = time.Since(down)
	t.Logf("redis restart: %d requests failed fast during the outage; service back %s after the stop", failed, back.Round(time.Millisecond))
	for i := 0; i < 2; i++ {
		cl.Call(30+i, "ping", nil) // on both frontends
	}
}

// TestNATSRestart: while nats-server is down, requests fail fast; the
// processes reconnect by themselves and service resumes.
func TestNATSRestart(t *testing.T) {
	c := proxyCluster(t, false)
	cl := testenv.NewClient(t, c.ProxyURL)
	cl.Initialize(nil)
	mc := testenv.NewModernClient(t, c.ProxyURL)
	c.NATS.Kill()
	down := time.Now()
	failed := 0
	for i := 0; i < 4; i++ {
		start := time.Now()
		r := cl.Post(testenv.Request(10+i, "tools/call", callParams("echo", map[string]any{"text": "down"})), nil)
		if d := time.Since(start); d > testenv.HangGuard(6*time.Second) { // fails fast: a hang guard, not a latency target
			t.Fatalf("a request during the outage took %s", d)
		}
		if r.ErrorCode() == 0 {
			t.Fatalf("a request succeeded without NATS: %s", r)
		}
		failed++
		if r := modern(t, mc, 20+i, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "down"}}, nil, nil); r.ErrorCode() == 0 {
			t.Fatalf("a modern request succeeded without NATS: %s", r)
		}
		failed++
	}
	c.NATS = c.NATS.Restart(t)
	var back time.Duration
	var r, r2 *testenv.Reply
	if !testutil.WaitFor(testenv.HangGuard(20*time.Second), func() bool {
		r = cl.Post(testenv.Request(30, "tools/call", callParams("echo", map[string]any{"text": "after"})), nil)
		r2 = cl.Post(testenv.Request(31, "tools/call", callParams("echo", map[string]any{"text": "after"})), nil)
		return r.ErrorCode() == 0 && r.Status == 200 && r2.ErrorCode() == 0 && r2.Status == 200
	}) {
		t.Fatalf("service did not resume after the NATS restart: %s / %s", r, r2)
	}
	back = time.Since(down)
	t.Logf("nats restart: %d requests failed fast during the outage; service back %s after the kill", failed, back.Round(time.Millisecond))
	// Events flow again too.
	s, _ := openListen(t, mc, "after", map[string]any{"toolsListChanged": true})
	modern(t, mc, 40, "tools/call", map[string]any{"name": "test_trigger_tool_change"}, nil, nil)
	if _, m := s.NextMessage(t, 10*time.Second); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s", m.Method)
	}
}

// TestStalledReader: a client that stops reading its GET stream never
// delays other streams; its stream is closed when its bounded buffer
// overflows, and the metric counts it.
func TestStalledReader(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1})
	stalled := testenv.NewClient(t, c.URLs[0])
	stalled.Initialize(nil)
	const uri = "test://flood"
	stalled.Call(1, "resources/subscribe", map[string]any{"uri": uri})
	reader := testenv.NewClient(t, c.URLs[0])
	reader.Initialize(nil)
	reader.Call(2, "resources/subscribe", map[string]any{"uri": uri})
	g := reader.OpenGet(nil)

	// The stalled client opens its GET stream on a connection with a tiny
	// receive buffer and never reads from it.
	host := strings.TrimSuffix(strings.TrimPrefix(c.URLs[0], "http://"), "/mcp")
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	conn, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", host, stalled.SessionID)
	testutil.Poll(t, "the stalled GET stream to be registered", func() bool {
		return metric(t, scrape(t, c.Frontends[0].AdminURL(t)), `mcpfleet_frontend_open_streams{kind="get"}`) >= 2
	})

	nc, err := nats.Connect(c.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": map[string]any{"uri": uri, "pad": strings.Repeat("x", 16000)}})
	got := 0
	deadline := time.Now().Add(60 * time.Second)
	const burst = 50 // each round a burst the reading client takes in stride
	for round := 0; ; round++ {
		// As a worker raises them: session events, logged by the
		// frontend for each subscribed session.
		evs := make([]bus.SessionEvent, burst)
		for i := range evs {
			evs[i] = bus.SessionEvent{Key: fmt.Sprintf("flood.%d.%d", round, i), URI: uri, Kind: bus.FrameNotification, Msg: note}
		}
		batch, err := bus.EncodeSessionEvents(evs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Request("mcp.sevt", batch, testenv.HangGuard(10*time.Second)); err != nil {
			t.Fatalf("session events: %v", err)
		}
		// The reading client keeps getting its events promptly.
		for got < (round+1)*burst {
			select {
			case ev, ok := <-g.Events:
				if !ok {
					t.Fatal("the reading client's stream closed")
				}
				if ev.Data != "" {
					got++
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the reading client stalled at %d events", got)
			}
		}
		if droppedGet(t, c.Frontends[0].AdminURL(t)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled stream was never closed")
		}
	}
	// The stalled connection is closed by the server.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the stalled connection was not closed: %v", err)
	}
}

// droppedGet reads the dropped GET streams of the admin listener at admin.
func droppedGet(t *testing.T, admin string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`mcpfleet_frontend_dropped_streams_total\{kind="get"\} (\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	var n float64
	fmt.Sscan(string(m[1]), &n)
	return n
}
