package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// hangGuard bounds a wait for an event that should come at once: a test
// that waits longer fails rather than hangs.
const hangGuard = 10 * time.Second

// steps records what middleware and handlers did, in order.
type steps struct {
	mu  sync.Mutex
	got []string
}

func (tr *steps) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, s)
}

func (tr *steps) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	got := tr.got
	tr.got = nil
	return got
}

// traced is request middleware that records name> before and <name after.
func traced(tr *steps, name string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			tr.add(name + ">")
			defer tr.add("<" + name)
			return next(ctx, req, params)
		}
	}
}

// tracedTool is tool middleware that records name> before and <name after.
func tracedTool(tr *steps, name string) mcp.ToolMiddleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			tr.add(name + ">")
			defer tr.add("<" + name)
			return next(ctx, req, args)
		}
	}
}

func TestMiddlewareOrder(t *testing.T) {
	s := newServer(t, nil)
	tr := &steps{}
	if err := s.AddTool(&protocol.Tool{Name: "t"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		tr.add("handler")
		return mcp.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s.AddMiddleware(traced(tr, "a"), nil, traced(tr, "b"))
	s.AddMiddleware(traced(tr, "c"))
	s.AddToolMiddleware(tracedTool(tr, "x"), tracedTool(tr, "y"))
	s.AddToolMiddleware(nil, tracedTool(tr, "z"))
	mustResult(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"t"}`)
	want := []string{"a>", "b>", "c>", "x>", "y>", "z>", "handler", "<z", "<y", "<x", "<c", "<b", "<a"}
	if got := tr.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("order = %q, want %q (first added outermost, request middleware around tool middleware)", got, want)
	}
}

func TestMiddlewareRefuses(t *testing.T) {
	s := newServer(t, nil)
	calls := 0
	if err := s.AddTool(&protocol.Tool{Name: "secret"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		calls++
		return mcp.TextResult("the secret"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			if req.Principal() != "alice" {
				return nil, protocol.NewError(protocol.CodeInvalidRequest, "forbidden: %s may not call %s", req.Principal(), req.Name())
			}
			return next(ctx, req, params)
		}
	})
	as := func(principal string) *mcp.Request {
		in := legacyInit(protocol.MethodToolsCall)
		in.Principal = principal
		return mcp.NewRequest(in)
	}
	e := mustError(t, s, as("bob"), `{"name":"secret"}`, protocol.CodeInvalidRequest)
	if e.Message != "forbidden: bob may not call secret" {
		t.Errorf("refusal = %q, want the middleware's", e.Message)
	}
	if calls != 0 {
		t.Fatalf("the handler ran %d times for a refused request", calls)
	}
	mustResult(t, s, as("alice"), `{"name":"secret"}`)
	if calls != 1 {
		t.Errorf("the handler ran %d times for an allowed request, want 1", calls)
	}

	// Tool middleware refuses the same ways a tool handler fails: a
	// protocol error is a JSON-RPC error, another error a tool error.
	s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			var a struct{ Mode string }
			_ = json.Unmarshal(args, &a)
			switch a.Mode {
			case "protocol":
				return nil, protocol.NewError(protocol.CodeInvalidParams, "refused by tool middleware")
			case "plain":
				return nil, errors.New("refused by tool middleware")
			}
			return next(ctx, req, args)
		}
	})
	mustError(t, s, as("alice"), `{"name":"secret","arguments":{"Mode":"protocol"}}`, protocol.CodeInvalidParams)
	raw := mustResult(t, s, as("alice"), `{"name":"secret","arguments":{"Mode":"plain"}}`)
	if res := decode[callResult](t, raw); !res.IsError || len(res.Content) != 1 || res.Content[0].Text != "refused by tool middleware" {
		t.Errorf("a plain error of tool middleware gave %s, want a tool error carrying it", raw)
	}
	if calls != 1 {
		t.Errorf("the handler ran for requests the tool middleware refused (%d runs, want 1)", calls)
	}
}

// TestMiddlewareSeesRequest checks that middleware sees the target, the
// session and the principal of each method that runs handlers, and that
// tool middleware sees the validated arguments.
func TestMiddlewareSeesRequest(t *testing.T) {
	s := newServer(t, nil)
	tr := &steps{}
	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			tr.add(fmt.Sprintf("request %s %s session=%s principal=%s", req.Method(), req.Name(), req.SessionID(), req.Principal()))
			return next(ctx, req, params)
		}
	})
	s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			tr.add(fmt.Sprintf("tool %s session=%s principal=%s args=%s", req.Name(), req.SessionID(), req.Principal(), args))
			return next(ctx, req, args)
		}
	})
	addTools(t, s, "echo")
	if err := s.AddPrompt(&protocol.Prompt{Name: "greet"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://doc/{id}", Name: "doc"}, func(_ context.Context, _ *mcp.Request, uri string, _ map[string]string) (*protocol.ReadResourceResult, error) {
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, Text: "x"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, params string }{
		{protocol.MethodToolsCall, `{"name":"echo","arguments":{"x":1}}`},
		{protocol.MethodPromptsGet, `{"name":"greet"}`},
		{protocol.MethodResourcesRead, `{"uri":"test://doc/7"}`},
	} {
		in := legacyInit(c.method)
		in.Principal = "alice"
		mustResult(t, s, mcp.NewRequest(in), c.params)
	}
	want := []string{
		"request tools/call echo session=sess-1 principal=alice",
		`tool echo session=sess-1 principal=alice args={"x":1}`,
		"request prompts/get greet session=sess-1 principal=alice",
		"request resources/read test://doc/7 session=sess-1 principal=alice",
	}
	if got := tr.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("middleware saw\n\t%q\nwant\n\t%q", got, want)
	}
}

// TestToolMiddlewareAppliesToEveryTool checks that tool middleware wraps
// tools added before and after it, typed tools and replaced ones alike.
func TestToolMiddlewareAppliesToEveryTool(t *testing.T) {
	s := newServer(t, nil)
	addTools(t, s, "before", "replaced")
	s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			res, err := next(ctx, req, args)
			if err == nil && len(res.Content) == 1 {
				res = mcp.TextResult("wrapped " + res.Content[0].(*protocol.TextContent).Text)
			}
			return res, err
		}
	})
	addTools(t, s, "after", "replaced")
	if err := mcp.AddTool(s, &protocol.Tool{Name: "typed"}, func(context.Context, *mcp.Request, struct{}) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult("typed"), nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"before", "after", "replaced", "typed"} {
		if res := callTool(t, s, name, ""); len(res.Content) != 1 || res.Content[0].Text != "wrapped "+name {
			t.Errorf("tool %s: %+v, want the middleware's wrapped text", name, res)
		}
	}
}

// taskHost is an mcp.TaskHost that keeps one task in memory and reports
// its outcome on finished.
type taskHost struct {
	finished chan taskOutcome
}

type taskOutcome struct {
	id  string
	res protocol.Result
	err *protocol.Error
}

func (h *taskHost) Create(context.Context, *mcp.Request) (*protocol.CreateTaskResult, context.Context, error) {
	return &protocol.CreateTaskResult{Task: protocol.Task{TaskID: "task-1", Status: protocol.TaskWorking}}, context.Background(), nil
}

func (h *taskHost) Inputs(context.Context, string, map[string]*protocol.InputRequest) (map[string]json.RawMessage, error) {
	return nil, errors.New("taskHost: no inputs")
}

func (h *taskHost) Finish(_ context.Context, id string, res protocol.Result, e *protocol.Error) {
	h.finished <- taskOutcome{id, res, e}
}

// TestToolMiddlewareAroundTask checks that tool middleware runs around a
// task tool's handler in the task's goroutine: the client has its
// CreateTaskResult while the middleware still runs, and the middleware's
// answer is the task's outcome.
func TestToolMiddlewareAroundTask(t *testing.T) {
	s := newServer(t, nil)
	release := make(chan struct{})
	tr := &steps{}
	if err := s.AddTool(&protocol.Tool{Name: "slow"}, textTool("done"), mcp.WithTasks(mcp.TaskRequired)); err != nil {
		t.Fatal(err)
	}
	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			res, err := next(ctx, req, params)
			tr.add(fmt.Sprintf("request answered with %T", res))
			return res, err
		}
	})
	s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			<-release // the request is answered meanwhile
			tr.add("tool middleware in task " + req.TaskID())
			res, err := next(ctx, req, args)
			if err == nil {
				res = mcp.TextResult("wrapped " + res.Content[0].(*protocol.TextContent).Text)
			}
			return res, err
		}
	})
	host := &taskHost{finished: make(chan taskOutcome, 1)}
	in := modernInit(protocol.MethodToolsCall)
	in.TaskHost = host
	in.Features.Tasks = true
	in.ClientCapabilities = &protocol.ClientCapabilities{Extensions: map[string]json.RawMessage{protocol.ExtensionTasks: json.RawMessage(`{}`)}}
	type answer struct {
		res protocol.Result
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := s.Handle(context.Background(), mcp.NewRequest(in), json.RawMessage(`{"name":"slow"}`))
		answered <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(hangGuard):
		close(release)
		t.Fatal("tools/call of a task tool waited for the tool middleware")
	}
	if _, ok := a.res.(*protocol.CreateTaskResult); !ok || a.err != nil {
		t.Fatalf("answer %#v, %v; want a CreateTaskResult", a.res, a.err)
	}
	close(release)
	var o taskOutcome
	select {
	case o = <-host.finished:
	case <-time.After(hangGuard):
		t.Fatal("the task never finished")
	}
	res, ok := o.res.(*protocol.CallToolResult)
	if o.id != "task-1" || o.err != nil || !ok || res.Content[0].(*protocol.TextContent).Text != "wrapped done" {
		t.Fatalf("task outcome %+v, want the tool middleware's result", o)
	}
	want := []string{"request answered with *protocol.CreateTaskResult", "tool middleware in task task-1"}
	if got := tr.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// TestMiddlewarePanics checks that a middleware can recover a handler's
// panic into its own answer, and that without one Handle recovers any
// panic, a middleware's own included, into -32603.
func TestMiddlewarePanics(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "boom"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		panic("boom")
	}); err != nil {
		t.Fatal(err)
	}
	mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"boom"}`, protocol.CodeInternalError)

	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (res protocol.Result, err error) {
			defer func() {
				if p := recover(); p != nil {
					res, err = nil, protocol.NewError(-32000, "recovered %s: %v", req.Name(), p)
				}
			}()
			return next(ctx, req, params)
		}
	})
	if e := mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"boom"}`, -32000); e.Message != "recovered boom: boom" {
		t.Errorf("recovered panic = %q, want the middleware's answer", e.Message)
	}

	p := newServer(t, nil)
	addTools(t, p, "fine")
	p.AddMiddleware(func(mcp.MethodHandler) mcp.MethodHandler {
		return func(context.Context, *mcp.Request, json.RawMessage) (protocol.Result, error) { panic("middleware bug") }
	})
	mustError(t, p, legacyReq(protocol.MethodToolsCall), `{"name":"fine"}`, protocol.CodeInternalError)
}

// TestCatalogMethodsBypassMiddleware checks that the catalog methods are
// answered without middleware (as a frontend answers them from the
// catalogs) and that every other method runs through it.
func TestCatalogMethodsBypassMiddleware(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{ResourceSubscriptions: true})
	addTools(t, s, "t")
	if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: "test://r", Text: "x"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var through []string
	s.AddMiddleware(func(mcp.MethodHandler) mcp.MethodHandler {
		return func(_ context.Context, req *mcp.Request, _ json.RawMessage) (protocol.Result, error) {
			mu.Lock()
			through = append(through, req.Method())
			mu.Unlock()
			return nil, protocol.NewError(protocol.CodeInvalidRequest, "refused by middleware")
		}
	})
	catalog := []struct {
		req    *mcp.Request
		params string
	}{
		{legacyReq(protocol.MethodInitialize), initParams(protocol.Version20251125)},
		{modernReq(protocol.MethodServerDiscover), `{}`},
		{legacyReq(protocol.MethodToolsList), `{}`},
		{legacyReq(protocol.MethodPromptsList), `{}`},
		{legacyReq(protocol.MethodResourcesList), `{}`},
		{legacyReq(protocol.MethodResourcesTemplatesList), `{}`},
	}
	catalogNames := map[string]bool{}
	for _, c := range catalog {
		catalogNames[c.req.Method()] = true
		if !mcp.IsCatalogMethod(c.req.Method()) {
			t.Errorf("IsCatalogMethod(%q) = false", c.req.Method())
		}
		if _, perr := handle(t, s, c.req, c.params); perr != nil && strings.Contains(perr.Message, "middleware") {
			t.Errorf("%s went through middleware: %v", c.req.Method(), perr)
		}
	}
	others := []string{
		protocol.MethodPing, protocol.MethodToolsCall, protocol.MethodPromptsGet, protocol.MethodResourcesRead,
		protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe,
		protocol.MethodCompletionComplete, protocol.MethodLoggingSetLevel,
	}
	for _, m := range others {
		if mcp.IsCatalogMethod(m) {
			t.Errorf("IsCatalogMethod(%q) = true", m)
		}
		mustError(t, s, legacyReq(m), `{}`, protocol.CodeInvalidRequest)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(through, others) {
		t.Errorf("middleware saw %q, want exactly the non-catalog methods %q", through, others)
	}
	// Of all methods of either era, exactly those listed above are catalog
	// methods.
	for _, era := range []protocol.Era{protocol.EraLegacy, protocol.EraModern} {
		for _, m := range protocol.EraMethods(era) {
			if want := catalogNames[m]; mcp.IsCatalogMethod(m) != want {
				t.Errorf("IsCatalogMethod(%q) = %v, want %v", m, !want, want)
			}
		}
	}
}

// TestMiddlewareSeesInputRequired checks what an MRTR round that asks the
// client for input looks like to middleware: an error matching
// ErrInputRequired, which, returned unchanged, becomes the input_required
// result; the retry that has the answer completes normally.
func TestMiddlewareSeesInputRequired(t *testing.T) {
	f := newMRTRFixture(t, nil)
	tr := &steps{}
	outcome := func(err error) string {
		switch {
		case errors.Is(err, mcp.ErrInputRequired):
			return "input required"
		case err != nil:
			return "error " + err.Error()
		}
		return "ok"
	}
	f.s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			res, err := next(ctx, req, params)
			tr.add("request: " + outcome(err))
			return res, err
		}
	})
	f.s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			res, err := next(ctx, req, args)
			tr.add("tool: " + outcome(err))
			return res, err
		}
	})
	params := `{"name":"ask"}`
	state := f.firstRound(t, protocol.MethodToolsCall, params, "alice")
	f.wantAccepted(t, protocol.MethodToolsCall, params, state, "alice", "tools/call ask")
	want := []string{"tool: input required", "request: input required", "tool: ok", "request: ok"}
	if got := tr.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("middleware saw %q, want %q", got, want)
	}
}

// TestAddMiddlewareWhileServing adds middleware while requests run (for
// the race detector) and checks that requests started afterwards go
// through all of it.
func TestAddMiddlewareWhileServing(t *testing.T) {
	s := newServer(t, nil)
	addTools(t, s, "t")
	var mu sync.Mutex
	counts := map[string]int{}
	counting := func(key string) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
				mu.Lock()
				counts[key]++
				mu.Unlock()
				return next(ctx, req, params)
			}
		}
	}
	const adders = 8
	var wg sync.WaitGroup
	for i := range adders {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.AddMiddleware(counting(fmt.Sprint("m", i)))
		}()
		go func() {
			defer wg.Done()
			s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler { return next })
			callTool(t, s, "t", "")
		}()
	}
	wg.Wait()
	mu.Lock()
	clear(counts)
	mu.Unlock()
	callTool(t, s, "t", "")
	mu.Lock()
	defer mu.Unlock()
	if len(counts) != adders {
		t.Errorf("a request after the adds ran %d middlewares (%v), want all %d", len(counts), counts, adders)
	}
}
