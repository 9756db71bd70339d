package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/prometheus/client_golang/prometheus"
)

// Hung and poisonous handlers, and the frontend's bounded resources (issue
// 18, points 5 and 6), through a real frontend, worker and NATS.

// handlersServer serves the demo tools, "hang" (ignores its context and
// blocks until the test ends: deadlocked, not dead) and "boom" (panics).
func handlersServer(t *testing.T) (*mcp.Server, <-chan struct{}) {
	t.Helper()
	s := mcp.NewServer(protocol.Implementation{Name: "handlers", Version: "0"}, &mcp.ServerOptions{Logger: quiet})
	if err := fixture.RegisterDemo(s, nil); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 16)
	forever := make(chan struct{})
	t.Cleanup(func() { close(forever) }) // registered first: runs after the worker's shutdown
	add := func(name string, h mcp.ToolHandler) {
		if err := s.AddTool(&protocol.Tool{Name: name}, h); err != nil {
			t.Fatal(err)
		}
	}
	add("hang", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		started <- struct{}{}
		<-forever
		return mcp.TextResult("too late"), nil
	})
	add("boom", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		panic("boom")
	})
	return s, started
}

// startHandlersRig starts an embedded NATS, a worker with wo and a frontend
// with fo (on a memory store with so when fo.Store is nil), and returns the
// MCP URL.
func startHandlersRig(t *testing.T, srv *mcp.Server, wo worker.Options, fo frontend.Options, so sessionstore.Options) string {
	t.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	fnc, err := e.Connect("fe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fnc.Close)
	wnc, err := e.Connect("w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	mem, err := sessionstore.NewMemory(&so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close(context.Background()) })
	wo.Logger = quiet
	w, err := worker.New(bus.NATS(wnc), srv, &wo)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
	fo.Store, fo.Logger = mem, quiet
	fe, err := frontend.New(bus.NATS(fnc), fo)
	if err != nil {
		t.Fatal(err)
	}
	if err := fe.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = fe.Shutdown(ctx)
	})
	hs := httptest.NewServer(fe.Router("/mcp"))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL + "/mcp"
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

func callTool(c *testenv.Client, id int, name string, args map[string]any) *testenv.Reply {
	return c.Post(testenv.Request(id, "tools/call", map[string]any{"name": name, "arguments": args}), nil)
}

// TestHungHandlerCostsItsRequest: with MaxInFlight 2, a handler that never
// returns gets its client the timeout error at the deadline, stays counted
// (stuck gauge 1) and leaves one slot, which other requests use; a second
// one fills the worker, which then says busy; a panicking handler gets
// -32603 and the worker keeps serving.
func TestHungHandlerCostsItsRequest(t *testing.T) {
	srv, started := handlersServer(t)
	reg := prometheus.NewRegistry()
	const timeout = 500 * time.Millisecond
	url := startHandlersRig(t, srv, worker.Options{MaxInFlight: 2, Metrics: worker.NewMetrics(reg)},
		frontend.Options{RequestTimeout: timeout}, sessionstore.Options{})
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	stuck := func() float64 { return gaugeValue(t, reg, "mcpfleet_worker_stuck_handlers") }

	hang := func(id int) {
		t.Helper()
		begin := time.Now()
		r := callTool(c, id, "hang", nil)
		select {
		case <-started:
		default:
			t.Fatal("the hung handler never started")
		}
		m := r.Response()
		if m == nil || m.Error == nil || m.Error.Code != protocol.CodeInternalError || !strings.Contains(m.Error.Message, "timed out") {
			t.Fatalf("hung call: HTTP %d %s; want a -32603 timeout", r.Status, r.Body)
		}
		if took := time.Since(begin); took < timeout-50*time.Millisecond {
			t.Errorf("answered after %v, before the %v deadline", took, timeout)
		}
	}
	hang(1)
	testutil.Poll(t, "the stuck gauge at 1", func() bool { return stuck() == 1 })
	for i := range 3 {
		if r := callTool(c, 10+i, "echo", map[string]any{"text": "hi"}); r.ErrorCode() != 0 || r.Status != 200 {
			t.Fatalf("echo beside a hung handler: HTTP %d %s", r.Status, r.Body)
		}
	}
	hang(2)
	testutil.Poll(t, "the stuck gauge at 2", func() bool { return stuck() == 2 })
	r := callTool(c, 20, "echo", map[string]any{"text": "hi"})
	if m := r.Response(); m == nil || m.Error == nil || !strings.Contains(m.Error.Message, "busy") {
		t.Fatalf("with both slots held by hung handlers: HTTP %d %s; want the worker's busy error", r.Status, r.Body)
	}

	// A panic costs its request only.
	srv2, _ := handlersServer(t)
	url2 := startHandlersRig(t, srv2, worker.Options{}, frontend.Options{}, sessionstore.Options{})
	c2 := testenv.NewClient(t, url2)
	c2.Initialize(nil)
	for i := range 3 {
		r := callTool(c2, 30+i, "boom", nil)
		if r.ErrorCode() != protocol.CodeInternalError {
			t.Fatalf("panicking tool: HTTP %d %s; want -32603", r.Status, r.Body)
		}
		if r := callTool(c2, 40+i, "echo", map[string]any{"text": "hi"}); r.ErrorCode() != 0 {
			t.Fatalf("echo after a panic: %s", r.Body)
		}
	}
}

// TestFrontendInFlightCap: without authentication, the frontend-wide cap
// holds: beyond it 503 with Retry-After, and the slot comes back when the
// request ends.
func TestFrontendInFlightCap(t *testing.T) {
	srv, _ := handlersServer(t)
	url := startHandlersRig(t, srv, worker.Options{}, frontend.Options{MaxInFlight: 1}, sessionstore.Options{})
	a := testenv.NewClient(t, url)
	a.Initialize(nil)
	b := testenv.NewClient(t, url)
	b.Initialize(nil)
	// The sleep holds the frontend's one slot while b is refused: the
	// duration is the scenario (a request in flight), the check below
	// does not wait for it.
	s := a.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": 1}}), nil)
	defer s.Close()
	s.NextMessage(t, 10*time.Second) // a progress notification: the request is in flight
	r := callTool(b, 2, "echo", map[string]any{"text": "hi"})
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || r.ErrorCode() != protocol.CodeInternalError {
		t.Fatalf("over the frontend's cap: HTTP %d %v %s; want 503 with Retry-After", r.Status, r.Header, r.Body)
	}
	if _, _, ended := s.Rest(10 * time.Second); !ended {
		t.Fatal("the sleep did not end")
	}
	testutil.Poll(t, "the slot back", func() bool {
		return callTool(b, 3, "echo", map[string]any{"text": "hi"}).Status == 200
	})
}

// TestDeliveredStreamEnds: a POST stream whose response the client got is
// ended in the store: with no grace its log is gone at once, so resuming it
// is a 404, and the session's stream bookkeeping does not keep it.
func TestDeliveredStreamEnds(t *testing.T) {
	srv, _ := handlersServer(t)
	url := startHandlersRig(t, srv, worker.Options{}, frontend.Options{}, sessionstore.Options{EndedStreamGrace: -1})
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	s := c.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 250}, "_meta": map[string]any{"progressToken": 1}}), nil)
	msgs, ids, ended := s.Rest(10 * time.Second)
	if !ended || len(msgs) < 2 || ids[0] == "" {
		t.Fatalf("the POST stream: %d messages, ids %v, ended %v", len(msgs), ids, ended)
	}
	g := c.OpenGet(map[string]string{"Last-Event-ID": ids[0]})
	defer g.Close()
	if g.Status != http.StatusNotFound {
		t.Fatalf("resuming a delivered, ended stream: HTTP %d; want 404 (its log is gone)", g.Status)
	}
}
