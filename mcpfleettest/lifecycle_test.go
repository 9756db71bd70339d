package mcpfleettest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/mcpfleettest"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestOptionsValidation(t *testing.T) {
	_, ts := newTestServer(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		url  string
		opts *mcpfleettest.ClientOptions
		want string
	}{
		{"unknown era", ts.URL, &mcpfleettest.ClientOptions{Era: 7}, "unknown era 7"},
		{"version of the other era", ts.URL, &mcpfleettest.ClientOptions{Era: protocol.EraModern, ProtocolVersion: protocol.Version20251125}, "not a 2026-07-28-era version"},
		{"unknown version", ts.URL, &mcpfleettest.ClientOptions{ProtocolVersion: "1.0"}, "not a legacy version"},
		{"log level", ts.URL, &mcpfleettest.ClientOptions{LogLevel: "loud"}, "unknown log level"},
		{"rounds", ts.URL, &mcpfleettest.ClientOptions{MaxInputRounds: -1}, "MaxInputRounds"},
		{"not a URL", "localhost:1/mcp", nil, "not an http(s) URL"},
		{"not an MCP endpoint", strings.TrimSuffix(ts.URL, "/mcp") + "/healthz", nil, "initialize: HTTP 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := mcpfleettest.NewClient(ctx, tc.url, tc.opts)
			if err == nil {
				_ = c.Close(ctx)
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
	c := ts.Connect(t, nil)
	if c.Era() != protocol.EraLegacy || c.ProtocolVersion() != protocol.Version20251125 || c.SessionID() == "" || c.ServerInfo().Name != "bank" {
		t.Errorf("the zero options: era %v, version %q, session %q, server %+v", c.Era(), c.ProtocolVersion(), c.SessionID(), c.ServerInfo())
	}
	if _, err := c.Listen(ctx, nil); err == nil {
		t.Error("Listen(nil) succeeded")
	}
	m := ts.Connect(t, &mcpfleettest.ClientOptions{Era: protocol.EraModern})
	if m.ServerInfo().Name != "bank" || m.ServerCapabilities().Tools == nil || m.SessionID() != "" {
		t.Errorf("modern: server %+v, capabilities %+v", m.ServerInfo(), m.ServerCapabilities())
	}
	if err := m.Subscribe(ctx, "note://a"); err == nil || !strings.Contains(err.Error(), "Listen") {
		t.Errorf("modern Subscribe: %v", err)
	}
}

func TestCloseDeletesTheSession(t *testing.T) {
	_, ts := newTestServer(t)
	ctx := testContext(t)
	c := ts.Connect(t, nil)
	s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("the stream after Close: %v", err)
	}
	if _, err := c.ListTools(ctx); !errors.Is(err, mcpfleettest.ErrClosed) {
		t.Fatalf("a call after Close: %v", err)
	}
	// The server no longer knows the session.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.SessionID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the deleted session: HTTP %d", resp.StatusCode)
	}
}

func TestLegacyHasOneListenStream(t *testing.T) {
	_, ts := newTestServer(t)
	ctx := testContext(t)
	c := ts.Connect(t, nil)
	s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Listen(ctx, &protocol.SubscriptionFilter{PromptsListChanged: true}); err == nil || !strings.Contains(err.Error(), "one GET stream") {
		t.Fatalf("a second legacy stream: %v", err)
	}
	s.Close()
	s2, err := c.Listen(ctx, &protocol.SubscriptionFilter{PromptsListChanged: true})
	if err != nil {
		t.Fatalf("after closing the first: %v", err)
	}
	s2.Close()
}

func TestListenEndsWithItsContext(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		lctx, cancel := context.WithCancel(testContext(t))
		s, err := c.Listen(lctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := s.Next(testContext(t)); !errors.Is(err, io.EOF) {
			t.Fatalf("Next after the context ended: %v", err)
		}
		// The client goes on; a new stream can open.
		s, err = c.Listen(testContext(t), &protocol.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
}

func TestShutdownEndsStreams(t *testing.T) {
	srv := mcp.NewServer(protocol.Implementation{Name: "s", Version: "1"}, nil)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		ts, err := mcpfleettest.StartServer(ctx, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		c, err := mcpfleettest.NewClient(ctx, ts.URL, &mcpfleettest.ClientOptions{Era: era})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("Next after the shutdown: %v", err)
		}
	})
}

// A legacy stream the server closes mid-call (SSE polling, SEP-1699) is
// resumed, and a server-to-client request on the resumed stream answered,
// also when the handler asks at once, so that the request reaches the
// frontend with the close (a frontend once dropped what came in the same
// batch as the close).
func TestLegacyStreamResumed(t *testing.T) {
	srv := mcp.NewServer(protocol.Implementation{Name: "s", Version: "1"}, nil)
	if err := mcp.AddTool(srv, &protocol.Tool{Name: "poll"}, func(ctx context.Context, req *mcp.Request, _ struct{}) (*protocol.CallToolResult, any, error) {
		if err := req.CloseSSEStream(ctx, 10*time.Millisecond); err != nil {
			return nil, nil, err
		}
		res, err := req.Elicit(ctx, &protocol.ElicitParams{Message: "still there?", RequestedSchema: []byte(`{"type":"object","properties":{}}`)})
		if err != nil {
			return nil, nil, err
		}
		return mcp.TextResult(res.Action), nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	ts := mcpfleettest.NewServer(t, srv, nil)
	c := ts.Connect(t, &mcpfleettest.ClientOptions{
		Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
			return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{}}, nil
		}})
	for i := 0; i < 20; i++ { // the close and the request share a batch in most rounds
		res, err := c.CallTool(testContext(t), "poll", nil)
		if err != nil || text(res.Content) != protocol.ElicitAccept {
			t.Fatalf("round %d: got %+v, %v", i, res, err)
		}
	}
}

func TestInputRoundsAreBounded(t *testing.T) {
	srv := mcp.NewServer(protocol.Implementation{Name: "s", Version: "1"}, nil)
	if err := mcp.AddTool(srv, &protocol.Tool{Name: "endless"}, func(ctx context.Context, req *mcp.Request, _ struct{}) (*protocol.CallToolResult, any, error) {
		for {
			if _, err := req.Elicit(ctx, &protocol.ElicitParams{Message: "again?", RequestedSchema: []byte(`{"type":"object","properties":{}}`)}); err != nil {
				return nil, nil, err
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	ts := mcpfleettest.NewServer(t, srv, nil)
	asked := 0
	c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: protocol.EraModern, MaxInputRounds: 3,
		Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
			asked++
			return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{}}, nil
		}})
	_, err := c.CallTool(testContext(t), "endless", nil)
	if err == nil || !strings.Contains(err.Error(), "after 3 rounds") || asked != 3 {
		t.Fatalf("got %v after %d answers", err, asked)
	}
}

func TestMissingHandler(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		// Declared, but nothing to answer with.
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era, Capabilities: &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}}})
		_, err := c.CallTool(testContext(t), "confirm", confirmIn{Action: "x"})
		if err == nil || !strings.Contains(err.Error(), "ClientOptions.Elicit") {
			t.Fatalf("got %v", err)
		}
	})
}
