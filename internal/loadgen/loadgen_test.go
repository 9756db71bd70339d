package loadgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
				Progress: &progress, ProgressInterval: 300 * time.Millisecond, Label: "inproc",
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
			if res.Server == nil || res.Server.RSSAfterMiB <= 0 || res.Server.Threads <= 0 {
				t.Errorf("server stats missing: %+v", res.Server)
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
