package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// TestRequestHasNoExportedFields keeps transport plumbing out of the
// handler's API: what a transport knows goes in through RequestInit and is
// read through methods.
func TestRequestHasNoExportedFields(t *testing.T) {
	typ := reflect.TypeFor[mcp.Request]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("mcp.Request has the exported field %s", f.Name)
		}
	}
}

// TestNewRequestCopiesInit checks that every RequestInit field reaches its
// accessor and that NewRequest copies init (a transport may reuse it).
func TestNewRequestCopiesInit(t *testing.T) {
	info := &protocol.Implementation{Name: "client", Version: "9"}
	caps := &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}}
	in := &mcp.RequestInit{
		Method: protocol.MethodToolsCall, ID: protocol.StringID("r-7"), Era: protocol.EraLegacy,
		ProtocolVersion: protocol.Version20251125, SessionID: "sess-9", ClientInfo: info, ClientCapabilities: caps,
		LogLevel: protocol.LevelWarning, Principal: "alice",
	}
	req := mcp.NewRequest(in)
	*in = mcp.RequestInit{Method: "changed"}
	got := []any{req.Method(), req.ID(), req.Era(), req.ProtocolVersion(), req.SessionID(), req.ClientInfo(), req.ClientCapabilities(), req.LogLevel(), req.Principal()}
	want := []any{protocol.MethodToolsCall, protocol.StringID("r-7"), protocol.EraLegacy, protocol.Version20251125, "sess-9", info, caps, protocol.LevelWarning, "alice"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("accessors = %v, want %v", got, want)
	}
	if n := mcp.NewRequest(nil); n.Method() != "" || n.ClientCapabilities() != nil || n.Name() != "" {
		t.Errorf("NewRequest(nil) = method %q, caps %v, name %q; want the zero request", n.Method(), n.ClientCapabilities(), n.Name())
	}
}

// TestNewRequestAllocations holds NewRequest to the cost of the struct
// literal it replaced: one allocation, the Request (init stays on the
// caller's stack).
func TestNewRequestAllocations(t *testing.T) {
	caps := &protocol.ClientCapabilities{}
	var sink *mcp.Request
	allocs := testing.AllocsPerRun(100, func() {
		sink = mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraModern, ClientCapabilities: caps})
	})
	if allocs != 1 {
		t.Errorf("NewRequest allocates %v times, want 1", allocs)
	}
	_ = sink
}

// TestRequestName checks Request.Name as handlers and middleware see it:
// the target of tools/call, prompts/get and the resource methods, "" for
// the others, decoded as JSON (escapes) and never failing a request whose
// params give name or uri another type.
func TestRequestName(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{ResourceSubscriptions: true})
	var seen string
	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			seen = req.Name()
			return next(ctx, req, params)
		}
	})
	var inHandler string
	if err := s.AddTool(&protocol.Tool{Name: "café"}, func(_ context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		inHandler = req.Name()
		return mcp.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	addTools(t, s, "echo")
	if err := s.AddPrompt(&protocol.Prompt{Name: "greet"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResource(&protocol.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: "test://doc", Text: "x"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, params, want string
	}{
		{protocol.MethodToolsCall, `{"name":"echo"}`, "echo"},
		{protocol.MethodToolsCall, `{"name":"caf\u00e9"}`, "café"},
		{protocol.MethodPromptsGet, `{"name":"greet"}`, "greet"},
		{protocol.MethodResourcesRead, `{"uri":"test://doc"}`, "test://doc"},
		{protocol.MethodResourcesSubscribe, `{"uri":"test://doc"}`, "test://doc"},
		{protocol.MethodResourcesUnsubscribe, `{"uri":"test://doc"}`, "test://doc"},
		{protocol.MethodCompletionComplete, `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"a","value":""}}`, ""},
		{protocol.MethodPing, `{"name":"not a target","uri":"test://doc"}`, ""},
		{protocol.MethodPing, `{"name":5,"uri":[1]}`, ""},
	}
	for _, tt := range tests {
		seen = "unset"
		mustResult(t, s, legacyReq(tt.method), tt.params)
		if seen != tt.want {
			t.Errorf("%s %s: Name() = %q, want %q", tt.method, tt.params, seen, tt.want)
		}
	}
	if inHandler != "café" {
		t.Errorf("the tool handler saw Name() = %q, want %q", inHandler, "café")
	}
	// A name of another type is refused by the method itself, as before
	// Name existed.
	e := mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":5}`, protocol.CodeInvalidParams)
	if want := "CallToolParams.name"; !strings.Contains(e.Message, want) {
		t.Errorf("tools/call with a numeric name: %q, want the decode error naming %s", e.Message, want)
	}
}
