package clienttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const goSDKVersion = "v1.8.0"

// goRun drives the Go SDK client (github.com/modelcontextprotocol/go-sdk)
// through the scenarios of one era: "legacy" pins ProtocolVersion
// 2025-11-25 (initialize, a session); "modern" uses the client's default,
// which probes server/discover and speaks 2026-07-28. Every HTTP request
// goes through a wireLog, which alternates between the target's URLs.
type goRun struct {
	era  string
	urls []string
	wire *wireLog
	logs bytes.Buffer // the SDK's own log, shown on failure
	lmu  sync.Mutex

	client *mcp.Client
	cs     *mcp.ClientSession

	logMsgs      waiter[*mcp.LoggingMessageParams]
	updated      waiter[string]
	toolsChanged waiter[struct{}]
	acks         waiter[mcp.NotificationSubscriptions]

	pmu      sync.Mutex
	progress map[string][]*mcp.ProgressNotificationParams

	sampling, elicitation atomic.Int32
	tokens                atomic.Int64
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (g *goRun) sdkLog() string {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	return g.logs.String()
}

// newClient builds a Go SDK client whose handlers feed g.
func (g *goRun) newClient() *mcp.Client {
	logger := slog.New(slog.NewTextHandler(lockedWriter{&g.lmu, &g.logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-clienttest-go-sdk", Version: goSDKVersion}, &mcp.ClientOptions{
		Logger:       logger,
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			g.sampling.Add(1)
			var prompt []string
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					prompt = append(prompt, tc.Text)
				}
			}
			p := strings.Join(prompt, " ")
			text := "sampled: " + p
			if strings.Contains(p, "capital of France") {
				text = "Paris"
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "mcpfleet-test-model", StopReason: "endTurn", Content: &mcp.TextContent{Text: text}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			g.elicitation.Add(1)
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			b, _ := json.Marshal(req.Params.RequestedSchema)
			_ = json.Unmarshal(b, &schema)
			values := map[string]any{"name": "Ada", "color": "teal", "username": "ada", "email": "ada@example.com", "context": "ctx-from-client", "ok": true}
			content := map[string]any{}
			for k := range schema.Properties {
				if v, ok := values[k]; ok {
					content[k] = v
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) { g.logMsgs.push(req.Params) },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			g.updated.push(req.Params.URI)
		},
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) { g.toolsChanged.push(struct{}{}) },
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			g.pmu.Lock()
			defer g.pmu.Unlock()
			tok := fmt.Sprint(req.Params.ProgressToken)
			g.progress[tok] = append(g.progress[tok], req.Params)
		},
	})
	c.AddRoots(&mcp.Root{URI: rootURI, Name: "client-root"})
	// The Go client opens subscriptions/listen without waiting for the
	// server's acknowledgement; scenarios wait for it here before they
	// make the server announce anything.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
					g.acks.push(p.Notifications)
				}
			}
			return next(ctx, method, req)
		}
	})
	return c
}

// connectOpts returns the session options of g's era.
func (g *goRun) connectOpts() *mcp.ClientSessionOptions {
	if g.era == "legacy" {
		return &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion}
	}
	return nil // the default: 2026-07-28 via server/discover, falling back to initialize
}

func (g *goRun) transport(wire *wireLog) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: g.urls[0], HTTPClient: &http.Client{Transport: wire}, MaxRetries: -1}
}

func (g *goRun) newToken() string { return fmt.Sprintf("go-%s-%d", g.era, g.tokens.Add(1)) }

func (g *goRun) progressOf(tok string) []*mcp.ProgressNotificationParams {
	g.pmu.Lock()
	defer g.pmu.Unlock()
	return slices.Clone(g.progress[tok])
}

func (g *goRun) call(ctx context.Context, name string, args map[string]any, meta mcp.Meta) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("%s returned isError: %s", name, contentText(res.Content))
	}
	return contentText(res.Content), nil
}

func contentText(blocks []mcp.Content) string {
	var b strings.Builder
	for _, c := range blocks {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func want(got, want any, what string) error {
	if got != want {
		return fmt.Errorf("%s: got %#v, want %#v", what, got, want)
	}
	return nil
}

// goStep is one named scenario of a Go SDK run.
type goStep struct {
	name    string
	timeout time.Duration
	fn      func(ctx context.Context) (string, error)
}

// runGoClient runs every scenario of era as a subtest, in order, against
// urls, and returns the run for the report.
func runGoClient(t *testing.T, urls []string, era string) *clientRun {
	g := &goRun{era: era, urls: urls, wire: newWireLog(urls), progress: map[string][]*mcp.ProgressNotificationParams{}}
	run := &clientRun{Client: "go-sdk", Version: goSDKVersion, Era: era}
	steps := g.steps()
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	if a, b := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(scenariosFor(era))); !slices.Equal(a, b) {
		t.Errorf("the Go SDK scenarios %v differ from the common list %v", a, b)
	}
	defer func() {
		if g.cs != nil {
			_ = g.cs.Close()
		}
		if t.Failed() {
			t.Logf("Go SDK log:\n%s\nwire:\n%v", tail(g.sdkLog(), 40), g.wire.snapshot())
		}
	}()
	blocked := ""
	for _, s := range steps {
		res := scenarioResult{Client: run.Client, Version: run.Version, Era: era, Scenario: s.name}
		t.Run(s.name, func(t *testing.T) {
			if blocked != "" {
				res.Detail = "not run: " + blocked
				t.Error(res.Detail)
				return
			}
			d := s.timeout
			if d == 0 {
				d = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			start := time.Now()
			detail, err := s.fn(ctx)
			res.Ms = time.Since(start).Milliseconds()
			if err != nil {
				res.Detail = err.Error()
				if s.name == "connect" {
					blocked = "connect failed"
				}
				t.Errorf("go-sdk %s %s: %v", era, s.name, err)
				return
			}
			res.OK, res.Detail = true, detail
			t.Logf("ok (%d ms) %s", res.Ms, detail)
		})
		run.Results = append(run.Results, res)
	}
	return run
}

func (g *goRun) getStreamOpen() error {
	if _, ok := g.wire.waitFor(0, 5*time.Second, func(e wireEntry) bool {
		return e.HTTP == "GET" && e.Status == 200 && e.Type == "text/event-stream"
	}); !ok {
		return fmt.Errorf("the client's GET stream is not open: %v", g.wire.snapshot())
	}
	return nil
}

func (g *goRun) steps() []goStep {
	legacy := g.era == "legacy"
	var s []goStep
	add := func(name string, fn func(ctx context.Context) (string, error)) {
		s = append(s, goStep{name: name, fn: fn})
	}

	add("connect", func(ctx context.Context) (string, error) {
		g.client = g.newClient()
		cs, err := g.client.Connect(ctx, g.transport(g.wire), g.connectOpts())
		if err != nil {
			return "", err
		}
		g.cs = cs
		ir := cs.InitializeResult()
		wantV := modernVersion
		if legacy {
			wantV = legacyVersion
		}
		if err := want(ir.ProtocolVersion, wantV, "negotiated protocol version"); err != nil {
			return "", err
		}
		if ir.ServerInfo == nil || ir.ServerInfo.Name != expectedServer {
			return "", fmt.Errorf("server info %+v, want %s", ir.ServerInfo, expectedServer)
		}
		if ir.Capabilities == nil || ir.Capabilities.Tools == nil || ir.Capabilities.Prompts == nil || ir.Capabilities.Resources == nil {
			return "", fmt.Errorf("server capabilities lack tools/prompts/resources: %+v", ir.Capabilities)
		}
		w := g.wire.snapshot()
		_, initialized := find(w, func(e wireEntry) bool { return e.RPC == "initialize" })
		_, discovered := find(w, func(e wireEntry) bool { return e.RPC == "server/discover" && e.Status == 200 })
		if legacy {
			if cs.ID() == "" || !initialized {
				return "", fmt.Errorf("no initialize or no session id (%q): %v", cs.ID(), w)
			}
			return fmt.Sprintf("%s %s session %.8s", ir.ProtocolVersion, ir.ServerInfo.Name, cs.ID()), nil
		}
		if initialized || !discovered || cs.ID() != "" {
			return "", fmt.Errorf("want server/discover 200, no initialize and no session (id %q): %v", cs.ID(), w)
		}
		return fmt.Sprintf("%s %s via server/discover", ir.ProtocolVersion, ir.ServerInfo.Name), nil
	})

	add("list_tools", func(ctx context.Context) (string, error) {
		var names []string
		var echo *mcp.Tool
		for tl, err := range g.cs.Tools(ctx, nil) {
			if err != nil {
				return "", err
			}
			names = append(names, tl.Name)
			if tl.Name == "echo" {
				echo = tl
			}
		}
		for _, n := range []string{"echo", "sleep", "touch_resource", "test_tool_with_progress", "test_tool_with_logging", "test_trigger_tool_change", "test_sampling", "test_elicitation", "test_input_required_result_elicitation", "test_input_required_result_multi_round"} {
			if !slices.Contains(names, n) {
				return "", fmt.Errorf("tools/list lacks %s: %v", n, names)
			}
		}
		b, _ := json.Marshal(echo.InputSchema)
		if !strings.Contains(string(b), `"type":"object"`) || !strings.Contains(string(b), `"text"`) {
			return "", fmt.Errorf("echo inputSchema %s", b)
		}
		return fmt.Sprintf("%d tools", len(names)), nil
	})

	add("list_prompts", func(ctx context.Context) (string, error) {
		var names []string
		var args []string
		for p, err := range g.cs.Prompts(ctx, nil) {
			if err != nil {
				return "", err
			}
			names = append(names, p.Name)
			if p.Name == "test_prompt_with_arguments" {
				for _, a := range p.Arguments {
					args = append(args, fmt.Sprintf("%s:%v", a.Name, a.Required))
				}
			}
		}
		if !slices.Contains(names, "test_simple_prompt") {
			return "", fmt.Errorf("prompts/list lacks test_simple_prompt: %v", names)
		}
		if err := want(strings.Join(args, ","), "arg1:true,arg2:true", "test_prompt_with_arguments arguments"); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d prompts", len(names)), nil
	})

	add("list_resources", func(ctx context.Context) (string, error) {
		var uris []string
		for r, err := range g.cs.Resources(ctx, nil) {
			if err != nil {
				return "", err
			}
			uris = append(uris, r.URI)
		}
		for _, u := range []string{"test://static-text", "test://static-binary", watchedURI} {
			if !slices.Contains(uris, u) {
				return "", fmt.Errorf("resources/list lacks %s: %v", u, uris)
			}
		}
		return fmt.Sprintf("%d resources", len(uris)), nil
	})

	add("list_resource_templates", func(ctx context.Context) (string, error) {
		var ts []string
		for r, err := range g.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return "", err
			}
			ts = append(ts, r.URITemplate)
		}
		if !slices.Contains(ts, "test://template/{id}/data") {
			return "", fmt.Errorf("resources/templates/list lacks test://template/{id}/data: %v", ts)
		}
		return fmt.Sprintf("%d templates", len(ts)), nil
	})

	add("call_echo", func(ctx context.Context) (string, error) {
		text := fmt.Sprintf("hello from go %s %d", g.era, time.Now().UnixNano())
		got, err := g.call(ctx, "echo", map[string]any{"text": text}, nil)
		if err != nil {
			return "", err
		}
		return "echoed", want(got, text, "echo text")
	})

	add("progress_sleep", func(ctx context.Context) (string, error) {
		tok := g.newToken()
		got, err := g.call(ctx, "sleep", map[string]any{"ms": 450}, mcp.Meta{"progressToken": tok})
		if err != nil {
			return "", err
		}
		if err := want(got, "slept", "sleep result"); err != nil {
			return "", err
		}
		ps := g.progressOf(tok)
		if len(ps) < 2 {
			return "", fmt.Errorf("want >= 2 progress notifications, got %d", len(ps))
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].Progress <= ps[i-1].Progress {
				return "", fmt.Errorf("progress not increasing: %v then %v", ps[i-1].Progress, ps[i].Progress)
			}
		}
		return fmt.Sprintf("%d progress notifications", len(ps)), want(ps[0].Total, 450.0, "progress total")
	})

	add("progress_tool", func(ctx context.Context) (string, error) {
		tok := g.newToken()
		got, err := g.call(ctx, "test_tool_with_progress", nil, mcp.Meta{"progressToken": tok})
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(got, "Progress tool completed") {
			return "", fmt.Errorf("result %q", got)
		}
		// The Go client may hand back the result before its handler has
		// seen the last notification that preceded it on the stream.
		deadline := time.Now().Add(time.Second)
		for len(g.progressOf(tok)) < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
		}
		var vals []string
		for _, p := range g.progressOf(tok) {
			if p.Total != 100 {
				return "", fmt.Errorf("progress total %v, want 100", p.Total)
			}
			vals = append(vals, fmt.Sprint(p.Progress))
		}
		return "progress 0,50,100 of 100", want(strings.Join(vals, ","), "0,50,100", "progress values")
	})

	isToolLog := func(m *mcp.LoggingMessageParams) bool {
		s, _ := m.Data.(string)
		return m.Logger == "conformance" && strings.HasPrefix(s, "Tool ")
	}
	if legacy {
		add("logging", func(ctx context.Context) (string, error) {
			if err := g.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				return "", err
			}
			g.logMsgs.reset()
			got, err := g.call(ctx, "test_tool_with_logging", nil, nil)
			if err != nil {
				return "", err
			}
			if err := want(got, "Tool with logging executed successfully", "tool result"); err != nil {
				return "", err
			}
			if !g.logMsgs.waitCount(2*time.Second, 3, isToolLog) {
				return "", fmt.Errorf("got %d log messages at level info, want 3", g.logMsgs.count(isToolLog))
			}
			if err := g.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
				return "", err
			}
			g.logMsgs.reset()
			if _, err := g.call(ctx, "test_tool_with_logging", nil, nil); err != nil {
				return "", err
			}
			// A bounded wait, the behaviour under test being that no message
			// arrives (the Go client reports no event to mark its absence).
			time.Sleep(300 * time.Millisecond)
			if n := g.logMsgs.count(isToolLog); n != 0 {
				return "", fmt.Errorf("%d info messages after logging/setLevel error", n)
			}
			return "setLevel info: 3 messages; setLevel error: none", nil
		})
	} else {
		add("logging", func(ctx context.Context) (string, error) {
			g.logMsgs.reset()
			got, err := g.call(ctx, "test_tool_with_logging", nil, mcp.Meta{logLevelKey: "info"})
			if err != nil {
				return "", err
			}
			if err := want(got, "Tool with logging executed successfully", "tool result"); err != nil {
				return "", err
			}
			if !g.logMsgs.waitCount(2*time.Second, 3, isToolLog) {
				return "", fmt.Errorf("got %d log messages with _meta logLevel info, want 3", g.logMsgs.count(isToolLog))
			}
			g.logMsgs.reset()
			if _, err := g.call(ctx, "test_tool_with_logging", nil, mcp.Meta{logLevelKey: "error"}); err != nil {
				return "", err
			}
			if _, err := g.call(ctx, "test_tool_with_logging", nil, nil); err != nil {
				return "", err
			}
			// A bounded wait, the behaviour under test being that no message
			// arrives (the Go client reports no event to mark its absence).
			time.Sleep(300 * time.Millisecond)
			if n := g.logMsgs.count(isToolLog); n != 0 {
				return "", fmt.Errorf("%d info messages with logLevel error or without logLevel", n)
			}
			return "_meta logLevel info: 3 messages; error or absent: none", nil
		})
		add("logging_setlevel_rejected", func(ctx context.Context) (string, error) {
			n := g.wire.len()
			err := g.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
			if err == nil {
				return "", errors.New("logging/setLevel succeeded on a 2026-07-28 session")
			}
			e, ok := find(g.wire.since(n), func(e wireEntry) bool { return e.RPC == "logging/setLevel" })
			if !ok {
				return "", fmt.Errorf("the client did not send logging/setLevel: %v", err)
			}
			var we *jsonrpc.Error
			code := int64(0)
			if errors.As(err, &we) {
				code = we.Code
			}
			if e.Status != http.StatusNotFound || code != -32601 {
				return "", fmt.Errorf("logging/setLevel (no _meta, MCP-Protocol-Version %s) answered HTTP %d, JSON-RPC %d (%v); want 404 and -32601", modernVersion, e.Status, code, err)
			}
			return "404 -32601", nil
		})
	}

	add("read_static", func(ctx context.Context) (string, error) {
		res, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil {
			return "", err
		}
		if len(res.Contents) != 1 {
			return "", fmt.Errorf("%d contents", len(res.Contents))
		}
		return "static text read", want(res.Contents[0].Text, "This is the content of the static text resource.", "text")
	})

	add("read_template", func(ctx context.Context) (string, error) {
		uri := "test://template/4711/data"
		res, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			return "", fmt.Errorf("contents %+v", res.Contents)
		}
		var body struct{ ID, Data string }
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &body); err != nil {
			return "", err
		}
		if body.ID != "4711" || body.Data != "Data for ID: 4711" {
			return "", fmt.Errorf("template body %s", res.Contents[0].Text)
		}
		return "template read with id 4711", nil
	})

	add("resource_updated", func(ctx context.Context) (string, error) {
		g.updated.reset()
		if legacy {
			if err := g.getStreamOpen(); err != nil {
				return "", err
			}
		}
		if err := g.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: watchedURI}); err != nil {
			return "", err
		}
		if !legacy && !g.acks.waitCount(5*time.Second, 1, func(n mcp.NotificationSubscriptions) bool {
			return slices.Contains(n.ResourceSubscriptions, watchedURI)
		}) {
			return "", fmt.Errorf("no subscriptions/listen acknowledgement honouring %s", watchedURI)
		}
		got, err := g.call(ctx, "touch_resource", map[string]any{"uri": watchedURI}, nil)
		if err != nil {
			return "", err
		}
		if err := want(got, "touched", "touch_resource result"); err != nil {
			return "", err
		}
		if !g.updated.waitCount(5*time.Second, 1, func(u string) bool { return u == watchedURI }) {
			return "", errors.New("no notifications/resources/updated for " + watchedURI)
		}
		if err := g.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: watchedURI}); err != nil {
			return "", err
		}
		if legacy {
			return "resources/subscribe + GET stream: updated received", nil
		}
		return "subscriptions/listen: updated received", nil
	})

	add("tools_list_changed", func(ctx context.Context) (string, error) {
		if legacy {
			if err := g.getStreamOpen(); err != nil {
				return "", err
			}
		} else if !g.acks.waitCount(5*time.Second, 1, func(n mcp.NotificationSubscriptions) bool { return n.ToolsListChanged }) {
			// The client opened this listen at connect (it has a
			// ToolListChangedHandler and the server declares tools.listChanged).
			return "", errors.New("no subscriptions/listen acknowledgement honouring toolsListChanged")
		}
		g.toolsChanged.reset()
		got, err := g.call(ctx, "test_trigger_tool_change", nil, nil)
		if err != nil {
			return "", err
		}
		if err := want(got, "Tool list changed", "trigger result"); err != nil {
			return "", err
		}
		if !g.toolsChanged.waitCount(5*time.Second, 1, func(struct{}) bool { return true }) {
			return "", errors.New("no notifications/tools/list_changed")
		}
		found := false
		for tl, err := range g.cs.Tools(ctx, nil) {
			if err != nil {
				return "", err
			}
			found = found || tl.Name == "__transient_tool_for_list_changed"
		}
		if !found {
			return "", errors.New("the changed list lacks the new tool")
		}
		if legacy {
			return "list_changed on the GET stream", nil
		}
		return "list_changed on subscriptions/listen", nil
	})

	s = append(s, goStep{name: "cancel_sleep", timeout: 12 * time.Second, fn: func(ctx context.Context) (string, error) {
		tok := g.newToken()
		n := g.wire.len()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := g.cs.CallTool(cctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 5000}, Meta: mcp.Meta{"progressToken": tok}})
			done <- err
		}()
		deadline := time.Now().Add(3 * time.Second)
		for len(g.progressOf(tok)) == 0 {
			if time.Now().After(deadline) {
				return "", errors.New("no progress from sleep 5000 within 3 s")
			}
			time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
		}
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(4 * time.Second):
			return "", errors.New("the cancelled call did not return within 4 s")
		}
		took := time.Since(start)
		if err == nil {
			return "", errors.New("the cancelled sleep returned a result")
		}
		// The Go client cancels by closing the request's stream and, in
		// both eras, by POSTing notifications/cancelled: the server must
		// accept that notification (202).
		e, ok := g.wire.waitFor(n, 3*time.Second, func(e wireEntry) bool { return e.RPC == "notifications/cancelled" })
		if !ok {
			return "", errors.New("the client sent no notifications/cancelled")
		}
		if e.Status != http.StatusAccepted {
			return "", fmt.Errorf("notifications/cancelled answered HTTP %d, want 202", e.Status)
		}
		got, err := g.call(ctx, "echo", map[string]any{"text": "after cancel"}, nil)
		if err != nil {
			return "", fmt.Errorf("follow-up call: %w", err)
		}
		if err := want(got, "after cancel", "follow-up echo"); err != nil {
			return "", err
		}
		return fmt.Sprintf("cancelled after %s (%v); notifications/cancelled 202; follow-up echo ok", took.Round(time.Millisecond), err), nil
	}})

	add("prompt_with_args", func(ctx context.Context) (string, error) {
		res, err := g.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "alpha", "arg2": "beta"}})
		if err != nil {
			return "", err
		}
		if len(res.Messages) != 1 {
			return "", fmt.Errorf("%d messages", len(res.Messages))
		}
		tc, _ := res.Messages[0].Content.(*mcp.TextContent)
		if tc == nil {
			return "", fmt.Errorf("message content %T", res.Messages[0].Content)
		}
		return "prompt rendered", want(tc.Text, "Prompt with arguments: arg1='alpha', arg2='beta'", "prompt text")
	})

	add("completion", func(ctx context.Context) (string, error) {
		ref := &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}
		all, err := g.cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "test"}})
		if err != nil {
			return "", err
		}
		if err := want(strings.Join(all.Completion.Values, ","), "testValue1,testValue2,test-default", `completion of "test"`); err != nil {
			return "", err
		}
		some, err := g.cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "testV"}})
		if err != nil {
			return "", err
		}
		return "values completed", want(strings.Join(some.Completion.Values, ","), "testValue1,testValue2", `completion of "testV"`)
	})

	if legacy {
		add("ping", func(ctx context.Context) (string, error) {
			return "pong", g.cs.Ping(ctx, nil)
		})
		add("sampling", func(ctx context.Context) (string, error) {
			n := g.sampling.Load()
			got, err := g.call(ctx, "test_sampling", map[string]any{"prompt": "say hi"}, nil)
			if err != nil {
				return "", err
			}
			if err := want(g.sampling.Load()-n, int32(1), "sampling handler calls"); err != nil {
				return "", err
			}
			return "sampling/createMessage answered by the client handler", want(got, "LLM response: sampled: say hi", "sampling result")
		})
		add("elicitation", func(ctx context.Context) (string, error) {
			n := g.elicitation.Load()
			got, err := g.call(ctx, "test_elicitation", map[string]any{"message": "who are you?"}, nil)
			if err != nil {
				return "", err
			}
			if err := want(g.elicitation.Load()-n, int32(1), "elicitation handler calls"); err != nil {
				return "", err
			}
			if !strings.HasPrefix(got, "User response: action=accept") || !strings.Contains(got, `"username":"ada"`) || !strings.Contains(got, `"email":"ada@example.com"`) {
				return "", fmt.Errorf("elicitation result %q", got)
			}
			return "elicitation/create answered by the client handler", nil
		})
		add("session_delete", func(ctx context.Context) (string, error) {
			sid := g.cs.ID()
			n := g.wire.len()
			if err := g.cs.Close(); err != nil {
				return "", err
			}
			e, ok := find(g.wire.since(n), func(e wireEntry) bool { return e.HTTP == "DELETE" })
			if !ok {
				return "", errors.New("Close sent no DELETE")
			}
			if e.Status != http.StatusNoContent {
				return "", fmt.Errorf("DELETE answered %d, want 204", e.Status)
			}
			status, err := rawPost(ctx, g.urls[len(g.urls)-1], map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": legacyVersion}, `{"jsonrpc":"2.0","id":999,"method":"ping"}`)
			if err != nil {
				return "", err
			}
			return "DELETE 204, then 404", want(status, http.StatusNotFound, "status of a request on the deleted session")
		})
		return s
	}

	add("discover", func(ctx context.Context) (string, error) {
		ir := g.cs.InitializeResult()
		e, ok := find(g.wire.snapshot(), func(e wireEntry) bool { return e.RPC == "server/discover" })
		if !ok || e.Status != http.StatusOK || e.Type != "application/json" {
			return "", fmt.Errorf("server/discover exchange %+v", e)
		}
		if ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
			return "", fmt.Errorf("discovered capabilities %+v", ir.Capabilities)
		}
		return fmt.Sprintf("discovered %s %s", ir.ServerInfo.Name, ir.ProtocolVersion), nil
	})

	mrtr := func(name, tool string, check func(string) error, sampling, elicitation int32) {
		add(name, func(ctx context.Context) (string, error) {
			ns, ne := g.sampling.Load(), g.elicitation.Load()
			n := g.wire.len()
			got, err := g.call(ctx, tool, nil, nil)
			if err != nil {
				return "", err
			}
			if err := check(got); err != nil {
				return "", err
			}
			if err := want(g.sampling.Load()-ns, sampling, "sampling handler calls"); err != nil {
				return "", err
			}
			if err := want(g.elicitation.Load()-ne, elicitation, "elicitation handler calls"); err != nil {
				return "", err
			}
			rounds := 0
			for _, e := range g.wire.since(n) {
				if e.RPC == "tools/call" {
					rounds++
				}
				if e.RPC == "response" {
					return "", errors.New("the client POSTed a JSON-RPC response in 2026-07-28")
				}
			}
			if rounds < 2 {
				return "", fmt.Errorf("want >= 2 tools/call POSTs (input_required, then the retry), got %d", rounds)
			}
			return fmt.Sprintf("%s (%d rounds)", got, rounds), nil
		})
	}
	mrtr("mrtr_elicitation", "test_input_required_result_elicitation", func(s string) error { return want(s, "Hello, Ada!", "result") }, 0, 1)
	mrtr("mrtr_sampling", "test_input_required_result_sampling", func(s string) error { return want(s, "The model answered: Paris", "result") }, 1, 0)
	mrtr("mrtr_list_roots", "test_input_required_result_list_roots", func(s string) error { return want(s, "Client roots: "+rootURI, "result") }, 0, 0)
	mrtr("mrtr_multi_round", "test_input_required_result_multi_round", func(s string) error {
		if !strings.HasPrefix(s, "Completed both rounds:") || !strings.Contains(s, "Ada") || !strings.Contains(s, "teal") {
			return fmt.Errorf("result %q", s)
		}
		return nil
	}, 0, 2)
	mrtr("mrtr_multiple_inputs", "test_input_required_result_multiple_inputs", func(s string) error {
		if !strings.HasPrefix(s, "Got all inputs:") || !strings.Contains(s, "Ada") || !strings.Contains(s, "sampled: Generate a greeting") || !strings.Contains(s, rootURI) {
			return fmt.Errorf("result %q", s)
		}
		return nil
	}, 1, 1)

	add("auto_negotiation", func(ctx context.Context) (string, error) {
		// The Go client's default is the auto mode: server/discover first,
		// initialize only if the server is not modern.
		wire := newWireLog(g.urls)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-clienttest-go-auto", Version: goSDKVersion}, nil).Connect(ctx, g.transport(wire), nil)
		if err != nil {
			return "", err
		}
		defer cs.Close()
		w := wire.snapshot()
		if _, ok := find(w, func(e wireEntry) bool { return e.RPC == "initialize" }); ok {
			return "", fmt.Errorf("the default client fell back to initialize: %v", w)
		}
		if e, ok := find(w, func(e wireEntry) bool { return e.RPC == "server/discover" }); !ok || e.Status != http.StatusOK {
			return "", fmt.Errorf("server/discover exchange %+v", e)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return "", err
		}
		v := cs.InitializeResult().ProtocolVersion
		return "auto chose " + v, want(v, modernVersion, "negotiated version")
	})
	return s
}

// rawPost POSTs body with the standard headers plus hdr and returns the status.
func rawPost(ctx context.Context, url string, hdr map[string]string, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
