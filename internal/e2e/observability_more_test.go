package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probe GETs url and returns the status and body.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitStatus polls url until it answers want (and a body containing
// contains), or fails after timeout.
func waitStatus(t *testing.T, url string, want int, contains string, timeout time.Duration) {
	t.Helper()
	timeout = testenv.HangGuard(timeout)
	var code int
	var body string
	if !testutil.WaitFor(timeout, func() bool {
		code, body = probe(t, url)
		return code == want && strings.Contains(body, contains)
	}) {
		t.Fatalf("%s: HTTP %d %q, want %d with %q within %s", url, code, strings.TrimSpace(body), want, contains, timeout)
	}
}

// TestReadyzRedisDown checks a frontend process's /readyz against its
// session store: 200 with Redis up, 503 naming the store while the
// redis-server is stopped (/healthz stays 200), 200 again once Redis is
// back.
func TestReadyzRedisDown(t *testing.T) {
	_, natsURL := testenv.StartNATSServer(t)
	redisProc, redisURL := testenv.StartRedisServer(t)
	fe, _ := testenv.StartFrontend(t, natsURL, redisURL)
	base := fe.AdminURL(t)

	waitStatus(t, base+"/readyz", 200, "ready", 10*time.Second)
	redisProc.Stop(5 * time.Second)
	waitStatus(t, base+"/readyz", 503, "session store", 10*time.Second)
	if code, body := probe(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz with Redis down: HTTP %d %q, want 200 (alive)", code, body)
	}
	redisProc.Restart(t)
	waitStatus(t, base+"/readyz", 200, "ready", 20*time.Second)
}

// gaugeFrontend is an in-process deployment whose server has a tool,
// "block", that runs until the test releases it (sending one progress
// notification first when the client asked for progress, so its response
// becomes an SSE stream), and whose frontend records metrics served, with
// /readyz, by its Admin handler at Base (Router serves URL).
type gaugeFrontend struct {
	ip      *testenv.InProc
	URL     string // the MCP endpoint
	Base    string // the admin endpoints: /readyz, /metrics
	entered chan struct{}
	release chan struct{}
}

func startGaugeFrontend(t *testing.T) *gaugeFrontend {
	t.Helper()
	g := &gaugeFrontend{entered: make(chan struct{}, 16), release: make(chan struct{})}
	s := mcp.NewServer(protocol.Implementation{Name: "gauges", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddTool(&protocol.Tool{Name: "block"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		if err := req.Progress(ctx, 1, 0, "blocked"); err != nil {
			return nil, err
		}
		g.entered <- struct{}{}
		select {
		case <-g.release:
			return mcp.TextResult("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g.ip = testenv.StartInProc(t, testenv.InProcOptions{Server: s, Frontend: frontend.Options{Metrics: frontend.NewMetrics(reg, nil)}})
	hs := httptest.NewServer(g.ip.Frontend.Router("/mcp"))
	admin := httptest.NewServer(g.ip.Frontend.Admin(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		admin.Close()
	})
	g.Base, g.URL = admin.URL, hs.URL+"/mcp"
	t.Cleanup(g.unblock)
	return g
}

func (g *gaugeFrontend) unblock() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// waitEntered waits until a "block" call runs on the worker.
func (g *gaugeFrontend) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking tool did not start")
	}
}

// callBlock posts a modern tools/call of "block" from a goroutine (its
// JSON answer comes only when released) and returns a channel that gets
// the HTTP status and body.
func (g *gaugeFrontend) callBlock(t *testing.T, id int) <-chan string {
	t.Helper()
	msg, hdr := testenv.ModernRequest(id, "tools/call", map[string]any{"name": "block"}, nil)
	body, _ := json.Marshal(msg)
	req, err := http.NewRequest(http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	out := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- resp.Status + " " + resp.Header.Get("Content-Type") + " " + string(b)
	}()
	return out
}

// gauges scrapes the frontend's in-flight and open-stream gauges.
func (g *gaugeFrontend) gauges(t *testing.T) map[string]float64 {
	t.Helper()
	text := scrape(t, g.Base)
	out := map[string]float64{}
	for _, name := range []string{
		`mcpfleet_frontend_inflight_requests`,
		`mcpfleet_frontend_open_streams{kind="post"}`,
		`mcpfleet_frontend_open_streams{kind="listen"}`,
	} {
		out[name] = metric(t, text, name)
	}
	return out
}

// waitGauges polls the gauges until they equal want, or fails.
func (g *gaugeFrontend) waitGauges(t *testing.T, what string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	guard := testenv.HangGuard(10 * time.Second)
	if !testutil.WaitFor(guard, func() bool {
		got = g.gauges(t)
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("%s: gauges %v, want %v (within %s)", what, got, want, guard)
	}
}

const (
	gInflight = `mcpfleet_frontend_inflight_requests`
	gPost     = `mcpfleet_frontend_open_streams{kind="post"}`
	gListen   = `mcpfleet_frontend_open_streams{kind="listen"}`
)

// TestFrontendGauges checks that the in-flight gauge counts the requests a
// frontend is serving and the open-stream gauges its SSE response streams
// (kind post) and listen streams (kind listen), each going back down when
// the request or stream ends.
func TestFrontendGauges(t *testing.T) {
	g := startGaugeFrontend(t)
	idle := map[string]float64{gInflight: 0, gPost: 0, gListen: 0}
	g.waitGauges(t, "idle", idle)

	t.Run("a request answered with JSON is in flight, no stream", func(t *testing.T) {
		done := g.callBlock(t, 1)
		g.waitEntered(t)
		g.waitGauges(t, "while it runs", map[string]float64{gInflight: 1, gPost: 0, gListen: 0})
		g.release <- struct{}{} // not closed: later requests block again
		if got := <-done; !strings.Contains(got, "released") || strings.Contains(got, "event-stream") {
			t.Fatalf("the call answered %q, want a JSON result", got)
		}
		g.waitGauges(t, "after it ended", idle)
	})

	t.Run("a request answered with an SSE stream opens a post stream", func(t *testing.T) {
		c := testenv.NewModernClient(t, g.URL)
		msg, hdr := testenv.ModernRequest(2, "tools/call", map[string]any{"name": "block", "_meta": map[string]any{"progressToken": "p"}}, nil)
		s := c.PostStream(msg, hdr)
		if s.Status != 200 || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("tools/call with progress: HTTP %d %s, want an SSE stream", s.Status, s.Header.Get("Content-Type"))
		}
		g.waitEntered(t)
		g.waitGauges(t, "while it runs", map[string]float64{gInflight: 1, gPost: 1, gListen: 0})
		g.release <- struct{}{}
		if _, _, ended := s.Rest(10 * time.Second); !ended {
			t.Fatal("the response stream did not end")
		}
		g.waitGauges(t, "after it ended", idle)
	})

	t.Run("listen streams", func(t *testing.T) {
		c := testenv.NewModernClient(t, g.URL)
		a, _ := openListen(t, c, "a", map[string]any{"toolsListChanged": true})
		g.waitGauges(t, "one listen stream", map[string]float64{gListen: 1, gPost: 0})
		b, _ := openListen(t, c, "b", map[string]any{"toolsListChanged": true})
		g.waitGauges(t, "two listen streams", map[string]float64{gListen: 2, gPost: 0})
		a.Close()
		g.waitGauges(t, "one closed", map[string]float64{gListen: 1})
		b.Close()
		g.waitGauges(t, "both closed", idle)
	})
}

// TestReadyzDraining checks that /readyz of a frontend answers 503
// ("draining") from the moment Shutdown starts, while a request in flight
// keeps the drain going, and 200 before.
func TestReadyzDraining(t *testing.T) {
	g := startGaugeFrontend(t)
	waitStatus(t, g.Base+"/readyz", 200, "ready", 10*time.Second)

	done := g.callBlock(t, 1)
	g.waitEntered(t)
	// Still ready with a request in flight.
	if code, body := probe(t, g.Base+"/readyz"); code != 200 {
		t.Fatalf("/readyz with a request in flight: HTTP %d %q, want 200", code, body)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- g.ip.Frontend.Shutdown(ctx)
	}()
	waitStatus(t, g.Base+"/readyz", 503, "draining", 5*time.Second)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	if code, body := probe(t, g.Base+"/healthz"); code != 200 {
		t.Fatalf("/healthz while draining: HTTP %d %q, want 200 (alive)", code, body)
	}
	g.unblock()
	if got := <-done; !strings.Contains(got, "released") {
		t.Fatalf("the request in flight answered %q, want its result", got)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if code, body := probe(t, g.Base+"/readyz"); code != 503 {
		t.Fatalf("/readyz after Shutdown: HTTP %d %q, want 503", code, body)
	}
}
