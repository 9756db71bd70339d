package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestRequestLog(t *testing.T) {
	tests := []struct {
		name      string
		threshold protocol.LoggingLevel
		level     protocol.LoggingLevel
		wantSent  bool
	}{
		{"no threshold sends nothing", "", protocol.LevelEmergency, false},
		{"below the threshold", protocol.LevelWarning, protocol.LevelInfo, false},
		{"debug below info", protocol.LevelInfo, protocol.LevelDebug, false},
		{"at the threshold", protocol.LevelWarning, protocol.LevelWarning, true},
		{"above the threshold", protocol.LevelInfo, protocol.LevelError, true},
		{"debug threshold passes debug", protocol.LevelDebug, protocol.LevelDebug, true},
		{"unknown message level", protocol.LevelDebug, "loud", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &recorder{}
			req := mcp.NewRequest(&mcp.RequestInit{LogLevel: tt.threshold, Out: out})
			if err := req.Log(context.Background(), tt.level, "db", map[string]any{"rows": 3}); err != nil {
				t.Fatalf("Log: %v", err)
			}
			got := out.notifications()
			if !tt.wantSent {
				if len(got) != 0 {
					t.Errorf("sent %v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[0].Method != protocol.NotificationMessage {
				t.Fatalf("sent %v, want one notifications/message", got)
			}
			wantJSON(t, got[0].Params, `{"level":"`+string(tt.level)+`","logger":"db","data":{"rows":3}}`)
			validate(t, protocol.Version20251125, "LoggingMessageNotification",
				[]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":`+string(got[0].Params)+`}`))
		})
	}
	t.Run("nil Out", func(t *testing.T) {
		req := mcp.NewRequest(&mcp.RequestInit{LogLevel: protocol.LevelDebug})
		if err := req.Log(context.Background(), protocol.LevelError, "", "x"); err != nil {
			t.Errorf("Log without Out: %v", err)
		}
	})
}

func TestRequestProgress(t *testing.T) {
	tests := []struct {
		name  string
		meta  string // the params' _meta, "" for none
		steps []struct {
			progress, total float64
			message         string
		}
		want []string
	}{
		{
			name: "string token, increasing values, totals omitted when <= 0",
			meta: `{"progressToken":"tok"}`,
			want: []string{
				`{"progressToken":"tok","progress":1,"total":10,"message":"first"}`,
				`{"progressToken":"tok","progress":2.5}`,
				`{"progressToken":"tok","progress":3}`,
			},
		},
		{
			name: "integer token",
			meta: `{"progressToken":7}`,
			want: []string{
				`{"progressToken":7,"progress":1,"total":10,"message":"first"}`,
				`{"progressToken":7,"progress":2.5}`,
				`{"progressToken":7,"progress":3}`,
			},
		},
		{name: "no _meta", meta: ``},
		{name: "no token", meta: `{"other":1}`},
		{name: "null token", meta: `{"progressToken":null}`},
	}
	steps := []struct {
		progress, total float64
		message         string
	}{
		{1, 10, "first"},
		{1, 10, "same value: dropped"},
		{0.5, 10, "lower value: dropped"},
		{2.5, 0, ""},
		{3, -1, ""},
		{3, 5, "same again: dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, nil)
			if err := s.AddTool(&protocol.Tool{Name: "work"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
				for _, st := range steps {
					if err := req.Progress(ctx, st.progress, st.total, st.message); err != nil {
						return nil, err
					}
				}
				return mcp.TextResult("done"), nil
			}); err != nil {
				t.Fatal(err)
			}
			params := `{"name":"work"}`
			if tt.meta != "" {
				params = `{"name":"work","_meta":` + tt.meta + `}`
			}
			out := &recorder{}
			in := legacyInit(protocol.MethodToolsCall)
			in.Out = out
			req := mcp.NewRequest(in)
			mustResult(t, s, req, params)
			got := out.notifications()
			if len(got) != len(tt.want) {
				t.Fatalf("sent %d notifications %v, want %d", len(got), got, len(tt.want))
			}
			for i, n := range got {
				if n.Method != protocol.NotificationProgress {
					t.Errorf("notification %d is %s, want notifications/progress", i, n.Method)
				}
				wantJSON(t, n.Params, tt.want[i])
				validate(t, protocol.Version20251125, "ProgressNotification",
					[]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":`+string(n.Params)+`}`))
			}
			if tt.meta == `{"progressToken":"tok"}` && string(req.ProgressToken()) != `"tok"` {
				t.Errorf("ProgressToken() = %s, want \"tok\"", req.ProgressToken())
			}
		})
	}
}

func TestRequestSample(t *testing.T) {
	msg := []*protocol.SamplingMessage{{Role: "user", Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.TextContent{Text: "hi"}}}}}
	tests := []struct {
		name    string
		caps    *protocol.ClientCapabilities
		params  *protocol.CreateMessageParams
		wantCap bool // want an ErrCapability error and no call
	}{
		{"no capabilities", nil, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10}, true},
		{"no sampling", &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10}, true},
		{"includeContext thisServer without sampling.context", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, IncludeContext: "thisServer"}, true},
		{"includeContext allServers without sampling.context", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, IncludeContext: "allServers"}, true},
		{"tools without sampling.tools", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{Context: &struct{}{}}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, Tools: []*protocol.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, true},
		{"toolChoice without sampling.tools", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, ToolChoice: &protocol.ToolChoice{Mode: "auto"}}, true},
		{"plain sampling", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10}, false},
		{"includeContext none needs nothing more", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, IncludeContext: "none"}, false},
		{"includeContext with sampling.context", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{Context: &struct{}{}}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, IncludeContext: "thisServer"}, false},
		{"tools with sampling.tools", &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{Tools: &struct{}{}}}, &protocol.CreateMessageParams{Messages: msg, MaxTokens: 10, Tools: []*protocol.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}, ToolChoice: &protocol.ToolChoice{Mode: "required"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m-1","stopReason":"endTurn"}`), nil
			}}
			req := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: tt.caps, Out: out})
			res, err := req.Sample(context.Background(), tt.params)
			calls := out.requests()
			if tt.wantCap {
				if !errors.Is(err, mcp.ErrCapability) {
					t.Errorf("err = %v, want one wrapping ErrCapability", err)
				}
				if len(calls) != 0 {
					t.Errorf("the client was asked %v despite the missing capability", calls)
				}
				return
			}
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			if len(calls) != 1 || calls[0].Method != protocol.MethodSamplingCreateMessage {
				t.Fatalf("calls = %v, want one sampling/createMessage", calls)
			}
			want, _ := json.Marshal(tt.params)
			wantJSON(t, calls[0].Params, string(want))
			validate(t, protocol.Version20251125, "CreateMessageRequest",
				[]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":`+string(calls[0].Params)+`}`))
			if res.Model != "m-1" || res.Role != "assistant" || res.StopReason != "endTurn" || len(res.Content.Blocks) != 1 {
				t.Fatalf("result = %+v, want the client's answer decoded", res)
			}
			if tc, ok := res.Content.Blocks[0].(*protocol.TextContent); !ok || tc.Text != "hello" {
				t.Errorf("content = %#v, want text \"hello\"", res.Content.Blocks[0])
			}
		})
	}
}

func TestRequestElicit(t *testing.T) {
	form := &protocol.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
	url := &protocol.ElicitParams{Mode: protocol.ElicitModeURL, Message: "Log in", URL: "https://example.com/login", ElicitationID: "e-1"}
	tests := []struct {
		name    string
		caps    *protocol.ClientCapabilities
		params  *protocol.ElicitParams
		wantCap bool
	}{
		{"no elicitation", &protocol.ClientCapabilities{}, form, true},
		{"url mode without elicitation.url", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}}, url, true},
		{"url mode with only form", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{Form: &struct{}{}}}, url, true},
		{"form mode with only url", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{URL: &struct{}{}}}, form, true},
		{"form mode with elicitation {}", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}}, form, false},
		{"explicit form mode with form", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{Form: &struct{}{}}}, &protocol.ElicitParams{Mode: protocol.ElicitModeForm, Message: form.Message, RequestedSchema: form.RequestedSchema}, false},
		{"url mode with url", &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{URL: &struct{}{}}}, url, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
			}}
			req := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: tt.caps, Out: out})
			res, err := req.Elicit(context.Background(), tt.params)
			calls := out.requests()
			if tt.wantCap {
				if !errors.Is(err, mcp.ErrCapability) || len(calls) != 0 {
					t.Errorf("err = %v, calls = %v; want ErrCapability and no call", err, calls)
				}
				return
			}
			if err != nil {
				t.Fatalf("Elicit: %v", err)
			}
			if len(calls) != 1 || calls[0].Method != protocol.MethodElicitationCreate {
				t.Fatalf("calls = %v, want one elicitation/create", calls)
			}
			want, _ := json.Marshal(tt.params)
			wantJSON(t, calls[0].Params, string(want))
			validate(t, protocol.Version20251125, "ElicitRequest",
				[]byte(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":`+string(calls[0].Params)+`}`))
			if res.Action != protocol.ElicitAccept || !reflect.DeepEqual(res.Content, map[string]any{"name": "Ada"}) {
				t.Errorf("result = %+v, want the client's answer decoded", res)
			}
		})
	}
}

func TestRequestListRoots(t *testing.T) {
	t.Run("without roots", func(t *testing.T) {
		out := &recorder{}
		req := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: &protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}, Out: out})
		if _, err := req.ListRoots(context.Background()); !errors.Is(err, mcp.ErrCapability) {
			t.Errorf("err = %v, want ErrCapability", err)
		}
		if calls := out.requests(); len(calls) != 0 {
			t.Errorf("calls = %v, want none", calls)
		}
	})
	t.Run("with roots", func(t *testing.T) {
		out := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":[{"uri":"file:///src","name":"src"}]}`), nil
		}}
		req := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}}, Out: out})
		res, err := req.ListRoots(context.Background())
		if err != nil {
			t.Fatalf("ListRoots: %v", err)
		}
		calls := out.requests()
		if len(calls) != 1 || calls[0].Method != protocol.MethodRootsList {
			t.Fatalf("calls = %v, want one roots/list", calls)
		}
		wantJSON(t, calls[0].Params, `{}`)
		if len(res.Roots) != 1 || res.Roots[0].URI != "file:///src" || res.Roots[0].Name != "src" {
			t.Errorf("roots = %+v", res.Roots)
		}
	})
}

func TestRequestCallErrors(t *testing.T) {
	caps := &protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}}
	t.Run("client error is returned as is", func(t *testing.T) {
		clientErr := protocol.NewError(protocol.CodeMethodNotFound, "no roots here")
		out := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) { return nil, clientErr }}
		_, err := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: caps, Out: out}).ListRoots(context.Background())
		if !errors.Is(err, protocol.ErrMethodNotFound) {
			t.Errorf("err = %v, want the client's -32601", err)
		}
	})
	t.Run("undecodable answer", func(t *testing.T) {
		out := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":"nope"}`), nil
		}}
		if _, err := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: caps, Out: out}).ListRoots(context.Background()); err == nil {
			t.Error("a malformed roots/list answer was accepted")
		}
	})
	t.Run("no Outbound", func(t *testing.T) {
		if _, err := mcp.NewRequest(&mcp.RequestInit{ClientCapabilities: caps}).ListRoots(context.Background()); !errors.Is(err, mcp.ErrNoOutbound) {
			t.Errorf("err = %v, want ErrNoOutbound", err)
		}
	})
}

func TestHandleDefaultsClientCapabilities(t *testing.T) {
	s := newServer(t, nil)
	var got *protocol.ClientCapabilities
	if err := s.AddTool(&protocol.Tool{Name: "caps"}, func(_ context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		got = req.ClientCapabilities()
		if req.Server() != s {
			t.Error("req.Server() is not the handling server")
		}
		_, err := req.Sample(context.Background(), &protocol.CreateMessageParams{MaxTokens: 1})
		if !errors.Is(err, mcp.ErrCapability) {
			t.Errorf("Sample on a request that declared nothing: %v, want ErrCapability", err)
		}
		return mcp.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	mustResult(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"caps"}`)
	if got == nil {
		t.Error("ClientCapabilities is nil inside the handler")
	}
}

// A progressToken is a string or a number; anything else is -32602.
func TestProgressTokenType(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "work"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{`{"a":1}`, `[1]`, `true`} {
		mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"work","_meta":{"progressToken":`+tok+`}}`, protocol.CodeInvalidParams)
	}
	for _, tok := range []string{`"t"`, `7`, `-1.5`, `null`} {
		mustResult(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"work","_meta":{"progressToken":`+tok+`}}`)
	}
}
