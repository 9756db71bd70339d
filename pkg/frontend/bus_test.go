package frontend

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// startNATSAt starts an embedded NATS server listening on addr.
func startNATSAt(t *testing.T, addr string) *bus.Embedded {
	t.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: addr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// busFrontend starts a frontend connected over TCP to a NATS server at a
// fixed loopback address, which the test may stop and start again.
func busFrontend(t *testing.T) (f *Frontend, nc *nats.Conn, addr string, e *bus.Embedded) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	_ = ln.Close()
	e = startNATSAt(t, addr)
	log := slog.New(slog.DiscardHandler)
	nc, err = bus.Connect("nats://"+addr, &bus.ConnectOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	f, err = New(bus.NATS(nc), Options{Store: store, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.Shutdown(ctx)
	})
	return f, nc, addr, e
}

// A lost NATS connection: the listen stream ends at once (ReasonBusLost),
// Ready fails, every request is answered 503 with Retry-After at once; when
// NATS is back the frontend is ready and opens streams again by itself.
func TestBusLossAndRecovery(t *testing.T) {
	f, nc, addr, e := busFrontend(t)
	ls, err := f.reg.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	srv := httptest.NewServer(f.Router("/mcp"))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	_ = e.Shutdown(ctx)
	cancel()
	select {
	case <-ls.Done():
	case <-time.After(testutil.DefaultHangGuard):
		t.Fatal("the listen stream outlived the NATS connection")
	}
	if ls.Reason() != listen.ReasonBusLost {
		t.Fatalf("reason %q, want %q", ls.Reason(), listen.ReasonBusLost)
	}
	if err := f.Ready(t.Context()); err == nil {
		t.Fatal("ready without NATS")
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, srv.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", "x")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s without NATS: %d (Retry-After %q), want 503 with Retry-After", method, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}

	e2 := startNATSAt(t, addr)
	defer func() { _ = e2.Shutdown(context.Background()) }()
	testutil.Poll(t, "the frontend to be ready again", func() bool { return f.Ready(t.Context()) == nil && nc.IsConnected() })
	ls2, err := f.reg.OpenListen("c", protocol.Int64ID(2), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatalf("a listen stream after recovery: %v", err)
	}
	ls2.Close()
}

// A blip (the connection is already back when its loss is seen: a
// reconnection to another node) still ends the streams, whose
// subscriptions nats.go resent; the frontend then serves again at once.
func TestBusBlipEndsStreams(t *testing.T) {
	f, nc, _, _ := busFrontend(t)
	ls, err := f.reg.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{ResourceSubscriptions: []string{"file:///a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	before := nc.Stats().Reconnects
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(testutil.DefaultHangGuard):
		t.Fatal("the listen stream outlived a reconnection")
	}
	testutil.Poll(t, "the reconnection and the frontend ready again", func() bool {
		return nc.Stats().Reconnects > before && f.Ready(t.Context()) == nil
	})
	// The loss seen only once the connection is back: streams still end.
	ls2, err := f.reg.OpenListen("c", protocol.Int64ID(2), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ls2.Close()
	f.checkBus(nats.RECONNECTING)
	if ls2.Reason() != listen.ReasonBusLost {
		t.Fatalf("a loss seen after the reconnection: reason %q, want %q", ls2.Reason(), listen.ReasonBusLost)
	}
	if err := f.Ready(t.Context()); err != nil {
		t.Fatalf("not ready once the connection is back: %v", err)
	}
}
