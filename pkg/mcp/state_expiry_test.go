package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// mrtrFixture is a server whose tools "ask" and "other" and prompt "ask"
// each ask the client for the same input (MRTR key "answer"), so a
// requestState issued by one of them would carry an answer the others
// could use if the state were not bound to its request.
type mrtrFixture struct {
	s *mcp.Server

	mu       sync.Mutex
	answered []string // "tools/call ask", "prompts/get ask", ... for every run that got the answer
}

const mrtrAnswer = `{"action":"accept","content":{"v":"42"}}`

func newMRTRFixture(t *testing.T, opts *mcp.ServerOptions) *mrtrFixture {
	t.Helper()
	f := &mrtrFixture{s: newServer(t, opts)}
	ask := func(ctx context.Context, req *mcp.Request, what string) (json.RawMessage, error) {
		raw, err := req.Input(ctx, "answer", protocol.MethodElicitationCreate, map[string]any{"message": "value?"})
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.answered = append(f.answered, req.Method()+" "+what)
		f.mu.Unlock()
		return raw, nil
	}
	for _, name := range []string{"ask", "other"} {
		if err := f.s.AddTool(&protocol.Tool{Name: name}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			raw, err := ask(ctx, req, name)
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("got " + string(raw)), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.AddPrompt(&protocol.Prompt{Name: "ask"}, func(ctx context.Context, req *mcp.Request, _ map[string]string) (*protocol.GetPromptResult, error) {
		raw, err := ask(ctx, req, "ask")
		if err != nil {
			return nil, err
		}
		return &protocol.GetPromptResult{Messages: []*protocol.PromptMessage{
			{Role: "user", Content: &protocol.TextContent{Text: "got " + string(raw)}},
		}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// mrtrReq is a modern request of method by principal from a client that
// declared elicitation (what the handlers ask for).
func mrtrReq(method, principal string) *mcp.Request {
	in := modernInit(method)
	in.Principal = principal
	in.ClientCapabilities = &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}}
	return mcp.NewRequest(in)
}

func (f *mrtrFixture) takeAnswered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.answered
	f.answered = nil
	return got
}

// firstRound runs the first round of method with params (a JSON object
// without requestState) as principal and returns the requestState of its
// InputRequiredResult.
func (f *mrtrFixture) firstRound(t *testing.T, method, params, principal string) string {
	t.Helper()
	req := mrtrReq(method, principal)
	raw := mustResult(t, f.s, req, params)
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil || ir.ResultType != "input_required" || ir.InputRequests["answer"] == nil || ir.RequestState == "" {
		t.Fatalf("%s %s: first round %s, want input_required asking for \"answer\" with a requestState", method, params, raw)
	}
	if got := f.takeAnswered(); len(got) != 0 {
		t.Fatalf("first round: a handler got an answer: %v", got)
	}
	return ir.RequestState
}

// retryParams adds the answer and state to params (a JSON object).
func retryParams(t *testing.T, params, state string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(params), &m); err != nil {
		t.Fatal(err)
	}
	m["requestState"], _ = json.Marshal(state)
	m["inputResponses"] = json.RawMessage(`{"answer":` + mrtrAnswer + `}`)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantRefused checks that a retry of method with params carrying state is
// refused with -32602 naming the requestState, before any handler got the
// answer the state carries.
func (f *mrtrFixture) wantRefused(t *testing.T, method, params, state, principal, why string) {
	t.Helper()
	f.takeAnswered() // what an earlier failed check left
	req := mrtrReq(method, principal)
	e := mustError(t, f.s, req, retryParams(t, params, state), protocol.CodeInvalidParams)
	if !strings.Contains(e.Message, "requestState") || !strings.Contains(e.Message, why) {
		t.Errorf("%s %s: error %q, want one saying the requestState %s", method, params, e.Message, why)
	}
	if got := f.takeAnswered(); len(got) != 0 {
		t.Errorf("%s %s: a refused retry reached a handler with the answer: %v", method, params, got)
	}
}

// wantAccepted checks that a retry of method with params carrying state
// completes and that the handler named want got the answer.
func (f *mrtrFixture) wantAccepted(t *testing.T, method, params, state, principal, want string) {
	t.Helper()
	f.takeAnswered() // what an earlier failed check left
	req := mrtrReq(method, principal)
	raw := mustResult(t, f.s, req, retryParams(t, params, state))
	if rt := string(members(t, raw)["resultType"]); rt != `"complete"` || !strings.Contains(string(raw), `\"v\":\"42\"`) {
		t.Fatalf("%s %s: retry got %s, want a complete result carrying the answer", method, params, raw)
	}
	if got := f.takeAnswered(); len(got) != 1 || got[0] != want {
		t.Fatalf("%s %s: handlers that got the answer %v, want [%s]", method, params, got, want)
	}
}

// TestRequestStateExpiry checks that a requestState is refused (-32602)
// once ServerOptions.StateTTL has passed since it was issued, while the
// same wait leaves a state of a server with the default TTL (10 minutes)
// valid.
func TestRequestStateExpiry(t *testing.T) {
	const (
		ttl    = time.Millisecond
		wait   = 50 * time.Millisecond
		params = `{"name":"ask"}`
	)
	short := newMRTRFixture(t, &mcp.ServerOptions{StateTTL: ttl})
	long := newMRTRFixture(t, nil)
	shortState := short.firstRound(t, protocol.MethodToolsCall, params, "")
	longState := long.firstRound(t, protocol.MethodToolsCall, params, "")
	time.Sleep(wait) // the behaviour under test: the short state TTL passes

	short.wantRefused(t, protocol.MethodToolsCall, params, shortState, "", "expired")
	long.wantAccepted(t, protocol.MethodToolsCall, params, longState, "", "tools/call ask")
	// Expiry does not depend on which server opens the state: sealed
	// with the same key, the long-lived server refuses the expired one
	// too.
	key := mcp.RandomStateKey()
	short = newMRTRFixture(t, &mcp.ServerOptions{StateTTL: ttl, StateKey: key})
	long = newMRTRFixture(t, &mcp.ServerOptions{StateKey: key})
	shortState = short.firstRound(t, protocol.MethodToolsCall, params, "")
	time.Sleep(wait) // the behaviour under test: the short state TTL passes
	long.wantRefused(t, protocol.MethodToolsCall, params, shortState, "", "expired")
}

// TestRequestStateBinding checks that a requestState only works for the
// request it was issued for: the same method, tool or prompt name and
// arguments, and principal. Replayed on anything else it is refused with
// -32602 and no handler gets the answer it carries.
func TestRequestStateBinding(t *testing.T) {
	f := newMRTRFixture(t, nil)
	const (
		askTool   = `{"name":"ask"}`
		askPrompt = `{"name":"ask"}` // the same params: only the method tells them apart
	)
	toolState := f.firstRound(t, protocol.MethodToolsCall, askTool, "alice")
	promptState := f.firstRound(t, protocol.MethodPromptsGet, askPrompt, "alice")

	t.Run("on its own request", func(t *testing.T) {
		f.wantAccepted(t, protocol.MethodToolsCall, askTool, toolState, "alice", "tools/call ask")
		f.wantAccepted(t, protocol.MethodPromptsGet, askPrompt, promptState, "alice", "prompts/get ask")
	})
	t.Run("a tools/call state on prompts/get with the same params", func(t *testing.T) {
		f.wantRefused(t, protocol.MethodPromptsGet, askPrompt, toolState, "alice", "another request")
	})
	t.Run("a prompts/get state on tools/call with the same params", func(t *testing.T) {
		f.wantRefused(t, protocol.MethodToolsCall, askTool, promptState, "alice", "another request")
	})
	t.Run("a tools/call state on another tool", func(t *testing.T) {
		f.wantRefused(t, protocol.MethodToolsCall, `{"name":"other"}`, toolState, "alice", "another request")
	})
	t.Run("a tools/call state on the same tool with other arguments", func(t *testing.T) {
		f.wantRefused(t, protocol.MethodToolsCall, `{"name":"ask","arguments":{"x":1}}`, toolState, "alice", "another request")
	})
	t.Run("a tools/call state presented by another principal", func(t *testing.T) {
		f.wantRefused(t, protocol.MethodToolsCall, askTool, toolState, "bob", "another principal")
		f.wantRefused(t, protocol.MethodToolsCall, askTool, toolState, "", "another principal")
	})
}
