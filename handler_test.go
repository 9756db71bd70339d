package mcpfleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// newHandler starts the all-in-one endpoint for srv; stopped at cleanup.
func newHandler(t *testing.T, srv *mcp.Server, opts *mcpfleet.HandlerOptions) *mcpfleet.Handler {
	t.Helper()
	h, err := mcpfleet.NewHandler(t.Context(), srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// The endpoint mounted on a program's own http.ServeMux, at a path of its
// choosing, beside its own routes; its admin endpoints (Admin) on a
// server of their own.
func TestHandlerOnServeMux(t *testing.T) {
	h := newHandler(t, greeter(t), nil)
	mux := http.NewServeMux()
	mux.Handle("/api/mcp", h)
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "the program's own route") })
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	admin := httptest.NewServer(h.Admin())
	t.Cleanup(admin.Close)
	greetLegacy(t, hs.URL+"/api/mcp")
	greetModern(t, hs.URL+"/api/mcp")
	for url, want := range map[string]string{admin.URL + "/readyz": "ready", admin.URL + "/healthz": "ok",
		admin.URL + "/metrics": "mcpfleet_worker_requests_total", hs.URL + "/hello": "own route"} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		body := string(b)
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.200q", url, resp.StatusCode, body)
		}
	}
}

// The same on a gin engine, as a frontend only: the workers run
// elsewhere on the bus (here RunWorker inside "another service", on its
// own connection, stopped by its context).
func TestHandlerOnGinWithRunWorker(t *testing.T) {
	e, err := bus.StartEmbedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	wc, err := e.Connect("service")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wc.Close)
	fc, err := e.Connect("frontend")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fc.Close)

	ctx, stopWorker := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- mcpfleet.RunWorker(ctx, greeter(t), &mcpfleet.WorkerOptions{NATS: wc, StateKey: mcp.RandomStateKey(), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("RunWorker: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("RunWorker never became ready")
	}

	h := newHandler(t, nil, &mcpfleet.HandlerOptions{NATS: fc}) // no Server: a frontend; in-memory sessions
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.Any("/mcp", gin.WrapH(h))
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	// The frontend learns of the worker from its announcements.
	c := testenv.NewClient(t, hs.URL+"/mcp")
	c.Initialize(nil)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) { // the polling interval of a wait with a deadline for the event, not a synchronisation
		var res protocol.ListToolsResult
		if json.Unmarshal(c.Call(2, "tools/list", nil), &res) == nil && len(res.Tools) == 1 && res.Tools[0].Name == "greet" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frontend never listed the worker's tool")
		}
	}
	greetLegacy(t, hs.URL+"/mcp")
	greetModern(t, hs.URL+"/mcp")

	stopWorker()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunWorker after its context ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunWorker did not return after its context ended")
	}
	if !wc.IsConnected() {
		t.Error("RunWorker closed the connection it was given")
	}
}

// ExampleNewHandler mounts an all-in-one MCP endpoint on a program's own
// mux.
func ExampleNewHandler() {
	srv := mcp.NewServer(protocol.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	_ = mcp.AddTool(srv, &protocol.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.Request, in struct{ Name string }) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult("Hello, " + in.Name), nil, nil
	})
	h, err := mcpfleet.NewHandler(context.Background(), srv, nil)
	if err != nil {
		panic(err)
	}
	defer h.Shutdown(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	defer hs.Close()

	// A 2026-07-28 request: no session, everything in the request.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"Name":"Ada"},
	  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "greet")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result protocol.CallToolResult `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	fmt.Println(resp.StatusCode, msg.Result.Content[0].(*protocol.TextContent).Text)
	// Output: 200 Hello, Ada
}

// settledGoroutines waits until the goroutine count is back to at most
// want (a generous hang guard), and returns the count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
	return n
}

// Every way NewHandler can fail returns an error and leaves nothing
// running: no panic, no goroutine, no worker on the bus.
func TestNewHandlerErrors(t *testing.T) {
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	natsURL := e.ClientURL()
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		srv  *mcp.Server
		opts mcpfleet.HandlerOptions
		want string
	}{
		{"unreachable NATS", nil, mcpfleet.HandlerOptions{NATSURL: "nats://127.0.0.1:1", ConnectTimeout: -1}, "NATS"},
		{"unreachable NATS, retried", nil, mcpfleet.HandlerOptions{NATSURL: "nats://127.0.0.1:1", ConnectTimeout: 600 * time.Millisecond}, "gave up after"},
		{"unreachable Redis", greeter(t), mcpfleet.HandlerOptions{RedisURL: "redis://127.0.0.1:1/0", ConnectTimeout: -1}, "redis"},
		{"a Redis URL that is not one (not retried)", greeter(t), mcpfleet.HandlerOptions{RedisURL: "http://x", ConnectTimeout: time.Hour}, "redis"},
		{"a JWKS file that is not there", greeter(t), mcpfleet.HandlerOptions{Auth: &auth.Options{Issuer: "https://as", Audience: "https://x/mcp", JWKSFile: "/nonexistent/jwks.json"}}, "jwks"},
		{"no state key on an external NATS", greeter(t), mcpfleet.HandlerOptions{NATSURL: natsURL}, mcpfleet.StateKeyEnv},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			tc.opts.Logger = quiet
			h, err := mcpfleet.NewHandler(t.Context(), tc.srv, &tc.opts)
			if err == nil || h != nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Fatalf("NewHandler = %v, %v; want an error mentioning %q", h, err, tc.want)
			}
			if n := settledGoroutines(before); n > before {
				t.Errorf("%d goroutines after the failed start, %d before", n, before)
			}
		})
	}
}

// A taken address fails RunServe at once, before its worker joins the
// bus.
func TestRunServeAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = mcpfleet.RunServe(t.Context(), greeter(t), &mcpfleet.ServeOptions{Listen: ln.Addr().String(),
		HandlerOptions: mcpfleet.HandlerOptions{Logger: slog.New(slog.DiscardHandler)}})
	if err == nil || !strings.Contains(err.Error(), "listening on") {
		t.Fatalf("RunServe on a taken address: %v", err)
	}
}

// The all-in-one's bus: in-process without NATSListen (no NATS
// connection, so no mcpfleet_nats_* series), an embedded NATS server
// with it; both serve both protocol eras and are ready.
func TestAllInOneBus(t *testing.T) {
	for name, c := range map[string]struct {
		opts *mcpfleet.HandlerOptions
		nats bool
	}{
		"in-process": {nil, false},
		"nats-listen": {&mcpfleet.HandlerOptions{NATSListen: "127.0.0.1:-1",
			Logger: slog.New(slog.DiscardHandler)}, true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, greeter(t), c.opts)
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			greetLegacy(t, hs.URL)
			greetModern(t, hs.URL)
			if err := h.Ready(t.Context()); err != nil {
				t.Errorf("Ready: %v", err)
			}
			rec := httptest.NewRecorder()
			h.Metrics().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if got := strings.Contains(rec.Body.String(), "mcpfleet_nats_connected 1"); got != c.nats {
				t.Errorf("mcpfleet_nats_connected 1 in the metrics: %v, want %v", got, c.nats)
			}
		})
	}
}
