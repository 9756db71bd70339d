package loadgen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/loadgen"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

func TestRunBothProtocols(t *testing.T) {
	env := testenv.StartInProc(t, testenv.InProcOptions{})
	for _, proto := range []loadgen.Proto{loadgen.Legacy, loadgen.Modern} {
		t.Run(string(proto), func(t *testing.T) {
			var progress bytes.Buffer
			res, err := loadgen.Run(context.Background(), loadgen.Config{
				URLs: []string{env.URL, env.URL}, Proto: proto, Concurrency: 4, Sessions: 2,
				Duration: time.Second, Warmup: 200 * time.Millisecond,
				PIDs:     []int{os.Getpid()}, // the server runs in this process
				Progress: &progress, ProgressInterval: 300 * time.Millisecond, Label: "inproc", Round: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK == 0 || res.Errors != 0 {
				t.Fatalf("ok=%d errors=%d %v %v", res.OK, res.Errors, res.ErrorsByKind, res.ErrorSamples)
			}
			want := loadgen.LegacyVersion
			if proto == loadgen.Modern {
				want = loadgen.ModernVersion
			}
			if res.Negotiated != want {
				t.Errorf("negotiated %q, want %q", res.Negotiated, want)
			}
			if proto == loadgen.Legacy && res.Sessions != 2 {
				t.Errorf("sessions = %d, want 2", res.Sessions)
			}
			if res.Server == nil || res.Server.RSSAfterMiB <= 0 || res.Server.Threads <= 0 || res.Server.SwitchesPerReq <= 0 {
				t.Errorf("server stats missing: %+v", res.Server)
			}
			if res.Round != 2 {
				t.Errorf("round %d, want 2", res.Round)
			}
			if res.JSONResponses+res.SSEResponses < res.OK {
				t.Errorf("replies %d+%d < ok %d", res.JSONResponses, res.SSEResponses, res.OK)
			}
			if res.P50Ms <= 0 || res.P50Ms > res.P99Ms || res.P99Ms > res.MaxMs {
				t.Errorf("percentiles out of order: p50=%v p99=%v max=%v", res.P50Ms, res.P99Ms, res.MaxMs)
			}
			if !strings.Contains(progress.String(), "req/s") {
				t.Errorf("no progress line: %q", progress.String())
			}
			var text bytes.Buffer
			res.WriteText(&text)
			if !strings.HasPrefix(text.String(), "RESULT label=inproc proto="+string(proto)) || !strings.Contains(text.String(), "server_cpu_us_per_req=") {
				t.Errorf("summary: %s", text.String())
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := loadgen.ReadRecords(bytes.NewReader(b))
			if err != nil || len(recs.Loads) != 1 || recs.Loads[0].OK != res.OK {
				t.Fatalf("round trip: %v %+v", err, recs)
			}
		})
	}
}

func TestRunClassifiesServerErrors(t *testing.T) {
	env := testenv.StartInProc(t, testenv.InProcOptions{})
	cases := []struct {
		tool, args, kind string
	}{
		{"no_such_tool", `{}`, "rpc_-32602"},
		{"touch_resource", `{}`, loadgen.KindToolError}, // "uri is required"
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := loadgen.Run(context.Background(), loadgen.Config{
				URLs: []string{env.URL}, Proto: loadgen.Modern, Concurrency: 2, Duration: 300 * time.Millisecond,
				Tool: tc.tool, Args: json.RawMessage(tc.args),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != 0 || res.Errors == 0 || res.ErrorsByKind[tc.kind] != res.Errors {
				t.Fatalf("ok=%d errors=%d by kind %v (want all %s)", res.OK, res.Errors, res.ErrorsByKind, tc.kind)
			}
			if res.ErrorSamples[tc.kind] == "" {
				t.Errorf("no sample message for %s", tc.kind)
			}
		})
	}
}

func TestRunClassifies404(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	// Legacy: no session can be initialized, which is fatal.
	_, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{hs.URL + "/mcp"}, Duration: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "http_404") {
		t.Fatalf("legacy against 404: %v", err)
	}
	// Modern: every request fails and is counted as http_404.
	res, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{hs.URL + "/mcp"}, Proto: loadgen.Modern, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Errors == 0 || res.ErrorsByKind["http_404"] != res.Errors {
		t.Fatalf("ok=%d errors=%d %v", res.OK, res.Errors, res.ErrorsByKind)
	}
}

// fake answers every POST with what reply writes.
func fake(t *testing.T, reply func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		reply(w, m.ID)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func runModern(t *testing.T, u string, timeout time.Duration) *loadgen.Result {
	t.Helper()
	res, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{u}, Proto: loadgen.Modern, Concurrency: 2,
		Duration: 300 * time.Millisecond, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunReadsSSE(t *testing.T) {
	u := fake(t, func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\ndata:\n\n: a comment\r\n")
		io.WriteString(w, `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`+"\n\n")
		io.WriteString(w, "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":"+string(id)+",\"result\":{\"content\":[]}}\r\n\r\n")
	})
	res := runModern(t, u, 0)
	if res.OK == 0 || res.Errors != 0 || res.SSEResponses == 0 {
		t.Fatalf("ok=%d errors=%d sse=%d %v", res.OK, res.Errors, res.SSEResponses, res.ErrorSamples)
	}
}

func TestRunClassifiesBadReplies(t *testing.T) {
	cases := map[string]struct {
		reply   func(w http.ResponseWriter, id json.RawMessage)
		timeout time.Duration
		kind    string
	}{
		"content type": {func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		}, 0, loadgen.KindBadResponse},
		"sse without response": {func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		}, 0, loadgen.KindBadResponse},
		"wrong id": {func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":"other","result":{}}`)
		}, 0, loadgen.KindBadResponse},
		"rpc error": {func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32601,"message":"no"}}`)
		}, 0, "rpc_-32601"},
		"http error with rpc body": {func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32020,"message":"header mismatch"}}`)
		}, 0, "http_400:rpc_-32020"},
		"timeout": {func(w http.ResponseWriter, id json.RawMessage) {
			time.Sleep(300 * time.Millisecond) // the behaviour under test: a server slower than the client's timeout
		}, 50 * time.Millisecond, loadgen.KindTimeout},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := runModern(t, fake(t, tc.reply), tc.timeout)
			if res.OK != 0 || res.Errors == 0 || res.ErrorsByKind[tc.kind] != res.Errors {
				t.Fatalf("ok=%d errors=%d by kind %v (want all %s) %v", res.OK, res.Errors, res.ErrorsByKind, tc.kind, res.ErrorSamples)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	u := hs.URL + "/mcp"
	hs.Close() // nothing listens there any more
	res := runModern(t, u, 0)
	if res.OK != 0 || res.ErrorsByKind[loadgen.KindTransport] == 0 {
		t.Fatalf("ok=%d %v", res.OK, res.ErrorsByKind)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://192.0.2.1/mcp", "http://example.com/mcp", "https://127.0.0.1/mcp", "ftp://localhost/mcp", "http://127.0.0.1.example.com/mcp"} {
		_, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{u}, Duration: time.Second})
		if err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	_, err := loadgen.Run(context.Background(), loadgen.Config{URLs: []string{"http://192.0.2.1:8080/mcp"}})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("want a loopback refusal, got %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:1/mcp", "http://localhost:1/mcp", "http://[::1]:1/mcp", "http://127.1.2.3/mcp"} {
		if err := loadgen.CheckURLs([]string{u}); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := loadgen.MeasureFanOut(context.Background(), loadgen.ScaleConfig{URLs: []string{"http://192.0.2.1/mcp"}, N: 1}); err == nil {
		t.Error("fan-out accepted a remote URL")
	}
	if _, err := loadgen.RedisUsedMemory(context.Background(), "redis://192.0.2.1:6379"); err == nil {
		t.Error("a remote Redis was accepted")
	}
}

func TestConfigBounds(t *testing.T) {
	u := []string{"http://127.0.0.1:1/mcp"}
	bad := []loadgen.Config{
		{URLs: u, Duration: loadgen.MaxDuration + time.Second},
		{URLs: u, Proto: "v3"},
		{URLs: u, Args: json.RawMessage(`[1]`)},
		{URLs: u, Args: json.RawMessage(`{`)},
		{URLs: u, PIDs: []int{-1}},
		{URLs: u, Concurrency: loadgen.MaxConcurrency + 1},
		{},
	}
	for i, c := range bad {
		if _, err := loadgen.Run(context.Background(), c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
}

func TestScaleHelpers(t *testing.T) {
	env := testenv.StartInProc(t, testenv.InProcOptions{})
	ctx := context.Background()

	s, err := loadgen.MeasureIdleSessions(ctx, loadgen.ScaleConfig{URLs: []string{env.URL}, N: 30, PIDs: []int{os.Getpid()}, Settle: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.OK != 30 || len(s.Errors) != 0 || s.RSSPerItemKiB == nil {
		t.Fatalf("sessions: %+v", s)
	}
	// No metrics URL: said so, not fatal.
	if s.GoroutinesPer != nil || len(s.Notes) == 0 {
		t.Errorf("goroutines without /metrics: %+v", s.Footprint)
	}

	l, err := loadgen.MeasureIdleListens(ctx, loadgen.ScaleConfig{URLs: []string{env.URL}, N: 25, PIDs: []int{os.Getpid()}, Settle: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if l.Open != 25 || len(l.Errors) != 0 || l.Lost != 0 || l.RSSPerItemKiB == nil {
		t.Fatalf("listens: %+v", l)
	}

	f, err := loadgen.MeasureFanOut(ctx, loadgen.ScaleConfig{URLs: []string{env.URL, env.URL}, N: 40, Events: 3, Gap: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !f.AllDelivered || f.Delivered != 120 || f.Streams != 40 || len(f.LastMs) != 3 || f.CallErrors != 0 {
		t.Fatalf("fan-out: %+v", f)
	}
	if f.PerURL[0] != 20 || f.PerURL[1] != 20 {
		t.Errorf("per URL %v", f.PerURL)
	}
	var b bytes.Buffer
	f.WriteText(&b)
	if !strings.Contains(b.String(), "delivered=120/120 all_delivered=true") {
		t.Errorf("fan-out summary: %s", b.String())
	}
}

func TestListenErrors(t *testing.T) {
	// A server that is not MCP: every stream fails, counted by kind.
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	l, err := loadgen.MeasureIdleListens(context.Background(), loadgen.ScaleConfig{URLs: []string{hs.URL + "/mcp"}, N: 3, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if l.Open != 0 || l.Errors["http_404"] != 3 {
		t.Fatalf("%+v", l)
	}
	if _, err := loadgen.MeasureFanOut(context.Background(), loadgen.ScaleConfig{URLs: []string{hs.URL + "/mcp"}, N: 2}); err == nil {
		t.Fatal("fan-out without streams did not fail")
	}
}

func TestMetricsAndRedisProbes(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines_total 9\ngo_goroutines 42\n")
	}))
	defer hs.Close()
	g, err := loadgen.Goroutines(context.Background(), hs.URL+"/metrics")
	if err != nil || g != 42 {
		t.Fatalf("goroutines %d %v", g, err)
	}
	if _, err := loadgen.ScrapeGauge(context.Background(), hs.URL+"/metrics", "nope"); err == nil {
		t.Error("a missing metric was found")
	}
}

// TestRunAlternates: with -alternate, every message of a legacy session
// after the first goes to the other URL than the one before it, and the
// sessions start on both; modern requests split evenly.
func TestRunAlternates(t *testing.T) {
	var mu sync.Mutex
	seq := map[string][]string{} // session id -> the servers of its messages, in order
	perServer := map[string]int{}
	var nextSession atomic.Int64
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &m)
			sid := r.Header.Get("Mcp-Session-Id")
			if m.Method == "initialize" {
				sid = fmt.Sprint("s", nextSession.Add(1))
				w.Header().Set("Mcp-Session-Id", sid)
			}
			mu.Lock()
			if sid != "" {
				seq[sid] = append(seq[sid], name)
			}
			perServer[name]++
			mu.Unlock()
			if m.ID == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25","content":[]}}`)
		})
	}
	a, b := httptest.NewServer(handler("a")), httptest.NewServer(handler("b"))
	defer a.Close()
	defer b.Close()
	urls := []string{a.URL + "/mcp", b.URL + "/mcp"}
	res, err := loadgen.Run(context.Background(), loadgen.Config{URLs: urls, Alternate: true, Concurrency: 4, Sessions: 6,
		Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || res.Errors != 0 || !res.Alternate {
		t.Fatalf("ok=%d errors=%d alternate=%v %v", res.OK, res.Errors, res.Alternate, res.ErrorSamples)
	}
	mu.Lock()
	if len(seq) != 6 {
		t.Fatalf("%d sessions", len(seq))
	}
	first := map[string]int{}
	for sid, s := range seq {
		first[s[0]]++
		if len(s) < 3 {
			t.Errorf("session %s: only %v", sid, s)
		}
		for i := 1; i < len(s); i++ {
			if s[i] == s[i-1] {
				t.Errorf("session %s: message %d went to %s again: %v", sid, i, s[i], s)
				break
			}
		}
	}
	if first["a"] != 3 || first["b"] != 3 {
		t.Errorf("sessions started on %v, want 3 and 3", first)
	}
	clear(perServer)
	mu.Unlock()

	res, err = loadgen.Run(context.Background(), loadgen.Config{URLs: urls, Alternate: true, Proto: loadgen.Modern, Concurrency: 3,
		Duration: 200 * time.Millisecond})
	if err != nil || res.OK == 0 || res.Errors != 0 {
		t.Fatalf("modern: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each client alternates, so the two servers differ by at most one
	// request per client (plus the last ones, cut by the end of the run).
	if d := perServer["a"] - perServer["b"]; d < -6 || d > 6 {
		t.Errorf("modern split %v", perServer)
	}
}

// TestRunByKindAndRedis: a load with PID kinds and a (real) Redis URL has
// the CPU of each kind and the Redis counters of the window; the
// counters leave out the samples' own commands.
func TestRunByKindAndRedis(t *testing.T) {
	_, redisURL := testenv.StartRedisServer(t)
	ctx := context.Background()
	addr := strings.TrimSuffix(strings.TrimPrefix(redisURL, "redis://"), "/0")

	// Exactly 15 PINGs and one EVAL running one SET, on a connection left
	// open until after the second sample.
	before, err := loadgen.ReadRedisCounters(ctx, redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(cmd string) {
		if _, err := io.WriteString(c, cmd); err != nil {
			t.Fatal(err)
		}
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	for range 15 {
		send("*1\r\n$4\r\nPING\r\n")
	}
	script := "redis.call('set','k','v') return 1"
	send(fmt.Sprintf("*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n", len(script), script))
	after, err := loadgen.ReadRedisCounters(ctx, redisURL)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.Total() != 17 || d.Calls["ping"] != 15 || d.Calls["eval"] != 1 || d.Calls["set"] != 1 || d.Processed != 17 || d.Reads != 16 {
		t.Errorf("window: %+v (want 15 ping, 1 eval, 1 set; 17 processed, 16 reads)", d)
	}

	env := testenv.StartInProc(t, testenv.InProcOptions{})
	res, err := loadgen.Run(ctx, loadgen.Config{URLs: []string{env.URL}, Concurrency: 2, Duration: 300 * time.Millisecond,
		PIDs: []int{os.Getpid(), os.Getpid()}, PIDKinds: []string{"frontend", "worker"}, RedisURL: redisURL,
		Features: "durable delivery on", Label: "kinds"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Server == nil || len(res.Server.Kinds) != 2 || res.Server.Kinds[0].Kind != "frontend" || res.Server.Kinds[1].Kind != "worker" {
		t.Fatalf("kinds: %+v", res.Server)
	}
	// The same process twice (read at slightly different moments, so the
	// two kinds may differ by a clock tick): the kinds add up to the total.
	if k := res.Server.Kinds; math.Abs(k[0].CPUS+k[1].CPUS-res.Server.CPUS) > 1e-9 || len(k[0].PIDs) != 1 {
		t.Errorf("kinds %+v, total %v s", k, res.Server.CPUS)
	}
	// The in-process server keeps nothing in this Redis.
	if res.Redis == nil || res.Redis.Commands != 0 || res.Redis.Reads != 0 || res.Features != "durable delivery on" {
		t.Errorf("redis %+v features %q", res.Redis, res.Features)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "cpu_us_per_req[frontend]=") || !strings.Contains(text.String(), "redis_commands_per_req=0.00") {
		t.Errorf("summary: %s", text.String())
	}
	if _, err := loadgen.Run(ctx, loadgen.Config{URLs: []string{env.URL}, PIDs: []int{1}, PIDKinds: []string{"a", "b"}}); err == nil {
		t.Error("more kinds than PIDs accepted")
	}
}
