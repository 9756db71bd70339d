package mcpfleettest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/mcpfleettest"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestToolProgressAndLog(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		var logs []string
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era, LogLevel: protocol.LevelInfo,
			OnLog: func(p *protocol.LoggingMessageParams) { logs = append(logs, string(p.Level)+" "+p.Logger) }})
		var progress []string
		res, err := c.CallTool(ctx, "add", map[string]any{"a": 2, "b": 3, "steps": 3}, mcpfleettest.WithProgress(func(p *protocol.ProgressParams) {
			progress = append(progress, p.Message)
		}))
		if err != nil {
			t.Fatal(err)
		}
		var out addOut
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || out.Sum != 5 || res.IsError {
			t.Fatalf("result %+v (structured %s)", res, b)
		}
		// Delivered on the call's goroutine, before it returned.
		if want := []string{"step 1", "step 2", "step 3"}; !slices.Equal(progress, want) {
			t.Errorf("progress %q, want %q", progress, want)
		}
		if want := []string{"info add"}; !slices.Equal(logs, want) {
			t.Errorf("logs %q, want %q", logs, want)
		}
		// Without a progress callback, no token is sent: no progress.
		progress = nil
		if _, err := c.CallTool(ctx, "add", map[string]any{"a": 1, "b": 1, "steps": 2}); err != nil || progress != nil {
			t.Fatalf("without progress: %v %q", err, progress)
		}
	})
}

func TestElicitation(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		for _, tc := range []struct {
			name, action, want string
		}{
			{"accepted", protocol.ElicitAccept, "done: delete"},
			{"declined", protocol.ElicitDecline, "not done: decline"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var asked []string
				c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era,
					Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
						asked = append(asked, p.Message)
						res := &protocol.ElicitResult{Action: tc.action}
						if tc.action == protocol.ElicitAccept {
							res.Content = map[string]any{"confirm": true}
						}
						return res, nil
					}})
				res, err := c.CallTool(testContext(t), "confirm", confirmIn{Action: "delete"})
				if err != nil {
					t.Fatal(err)
				}
				if got := text(res.Content); got != tc.want || res.IsError {
					t.Errorf("result %q (isError %v), want %q", got, res.IsError, tc.want)
				}
				if !slices.Equal(asked, []string{"Really delete?"}) {
					t.Errorf("elicitations %q", asked)
				}
			})
		}
	})
}

func TestSamplingAndRoots(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era,
			Sample: func(ctx context.Context, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
				in := text(p.Messages[0].Content.Blocks)
				return &protocol.CreateMessageResult{Role: "assistant", Model: "test",
					Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.TextContent{Text: strings.ToUpper(in)}}}}, nil
			},
			Roots: []*protocol.Root{{URI: "file:///src"}, {URI: "file:///docs"}},
		})
		res, err := c.CallTool(ctx, "summarize", noteIn{Text: "long text"})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res.Content); got != "summary: SUMMARIZE: LONG TEXT" {
			t.Errorf("summarize: %q", got)
		}
		res, err = c.CallTool(ctx, "roots", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res.Content); got != "file:///src,file:///docs" {
			t.Errorf("roots: %q", got)
		}
	})
}

func TestHandlerErrorReachesServer(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era,
			Sample: func(ctx context.Context, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
				return nil, errors.New("no model today")
			}})
		res, err := c.CallTool(testContext(t), "summarize", noteIn{Text: "x"})
		var pe *protocol.Error
		switch era {
		case protocol.EraLegacy:
			// The error went back as a JSON-RPC error response (-32603):
			// the handler's Sample returned it, and the handler passed
			// the *protocol.Error on.
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInternalError || !strings.Contains(pe.Message, "no model today") {
				t.Fatalf("got %+v, %v", res, err)
			}
		case protocol.EraModern:
			// No error can travel in inputResponses: the call ends.
			if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "no model today") {
				t.Fatalf("got %+v, %v", res, err)
			}
		}
	})
}

func TestResourceSubscription(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		writer := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ResourceSubscriptions: []string{"note://a"}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if f := s.Filter(); !slices.Equal(f.ResourceSubscriptions, []string{"note://a"}) {
			t.Errorf("filter %+v", f)
		}
		for _, name := range []string{"b", "a"} { // b is not subscribed
			if _, err := writer.CallTool(ctx, "set_note", noteIn{Name: name, Text: "new " + name}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var p protocol.ResourceUpdatedParams
		if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != protocol.NotificationResourceUpdated || p.URI != "note://a" {
			t.Fatalf("got %s %s", n.Method, n.Params)
		}
		res, err := c.ReadResource(ctx, p.URI)
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "new a" {
			t.Fatalf("read: %+v %v", res, err)
		}
		tmpls, err := c.ListResourceTemplates(ctx)
		if err != nil || len(tmpls) != 1 || tmpls[0].URITemplate != "note://{name}" {
			t.Fatalf("templates: %+v %v", tmpls, err)
		}
		s.Close()
		if _, err := s.Next(ctx); err == nil {
			t.Fatal("Next after Close returned no error")
		}
	})
}

func TestToolsListChanged(t *testing.T) {
	srv, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		name := "late_" + era.String()
		if err := srv.AddTool(&protocol.Tool{Name: name}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			return mcp.TextResult("late"), nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WaitFor(ctx, protocol.NotificationToolsListChanged); err != nil {
			t.Fatal(err)
		}
		tools, err := c.ListTools(ctx)
		if err != nil || !slices.ContainsFunc(tools, func(t *protocol.Tool) bool { return t.Name == name }) {
			t.Fatalf("tools after the change: %v", err)
		}
		if res, err := c.CallTool(ctx, name, nil); err != nil || text(res.Content) != "late" {
			t.Fatalf("calling the new tool: %+v %v", res, err)
		}
	})
}

func TestPromptAndCompletion(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		prompts, err := c.ListPrompts(ctx)
		if err != nil || len(prompts) != 1 || prompts[0].Name != "greet" {
			t.Fatalf("prompts: %+v %v", prompts, err)
		}
		res, err := c.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
		if err != nil || len(res.Messages) != 1 || text([]protocol.Content{res.Messages[0].Content}) != "Greet Ada" {
			t.Fatalf("prompt: %+v %v", res, err)
		}
		comp, err := c.Complete(ctx, &protocol.CompleteParams{Ref: protocol.CompleteReference{Type: "ref/prompt", Name: "greet"},
			Argument: protocol.CompleteArgument{Name: "name", Value: "A"}})
		if err != nil || !slices.Equal(comp.Values, []string{"Ada", "Alan"}) {
			t.Fatalf("completion: %+v %v", comp, err)
		}
		if _, err := c.GetPrompt(ctx, "greet", nil); !errors.Is(err, protocol.ErrInvalidParams) {
			t.Fatalf("prompt without its required argument: %v", err)
		}
	})
}

func TestJSONRPCErrors(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		_, err := c.CallTool(ctx, "withdraw", nil)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != codeAccountLocked || pe.Message != "account locked" {
			t.Fatalf("withdraw: %v", err)
		}
		if _, err := c.CallTool(ctx, "no_such_tool", nil); !errors.Is(err, protocol.ErrInvalidParams) {
			t.Fatalf("unknown tool: %v", err)
		}
		if _, err := c.ReadResource(ctx, "note://missing"); !errors.As(err, &pe) {
			t.Fatalf("missing resource: %v", err)
		}
		// A method the era does not serve.
		if err := c.Call(ctx, "no/such/method", nil, nil); !errors.Is(err, protocol.ErrMethodNotFound) {
			t.Fatalf("unknown method: %v", err)
		}
	})
}

func TestStatusError(t *testing.T) {
	_, ts := newTestServer(t)
	c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: protocol.EraModern})
	// A _meta protocolVersion that differs from the header: 400 with -32020.
	err := c.Call(testContext(t), protocol.MethodToolsList, nil, nil, mcpfleettest.WithMeta(protocol.Meta{protocol.MetaProtocolVersion: "1999-01-01"}))
	var se *mcpfleettest.StatusError
	var pe *protocol.Error
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !errors.As(err, &pe) || pe.Code != protocol.CodeHeaderMismatch {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "-32020") {
		t.Errorf("message %q", err)
	}
}

func TestParamHeaders(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era})
		for _, region := range []string{"eu-west", "Zürich"} {
			res, err := c.CallTool(testContext(t), "where", regionIn{Region: region})
			if err != nil || text(res.Content) != "in "+region {
				t.Fatalf("%s: %+v %v", region, res, err)
			}
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	_, ts := newTestServer(t)
	forEachEra(t, func(t *testing.T, era protocol.Era) {
		ctx := testContext(t)
		var mu sync.Mutex
		progress := 0
		c := ts.Connect(t, &mcpfleettest.ClientOptions{Era: era, OnProgress: func(*protocol.ProgressParams) {
			mu.Lock()
			progress++
			mu.Unlock()
		}, Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
			return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{"confirm": true}}, nil
		}})
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 8 {
			wg.Go(func() {
				res, err := c.CallTool(ctx, "add", addIn{A: i, B: 1, Steps: 2})
				if err == nil && text(res.Content) != `{"sum":`+itoa(i+1)+`}` {
					err = errors.New("add: " + text(res.Content))
				}
				errs <- err
			})
			wg.Go(func() {
				res, err := c.CallTool(ctx, "confirm", confirmIn{Action: "x"})
				if err == nil && text(res.Content) != "done: x" {
					err = errors.New("confirm: " + text(res.Content))
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if progress != 16 {
			t.Errorf("%d progress notifications, want 16", progress)
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
