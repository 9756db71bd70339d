package mcp_test

import (
	"context"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func initParams(version string) string {
	return `{"protocolVersion":` + quote(version) + `,"capabilities":{},"clientInfo":{"name":"client","version":"0.1"}}`
}

func TestInitializeNegotiatesVersion(t *testing.T) {
	tests := []struct {
		name, requested, want string
	}{
		{"2025-11-25 is echoed", "2025-11-25", "2025-11-25"},
		{"2025-06-18 is echoed", "2025-06-18", "2025-06-18"},
		{"2025-03-26 is echoed", "2025-03-26", "2025-03-26"},
		{"2024-11-05 is echoed", "2024-11-05", "2024-11-05"},
		{"unknown version gets the latest legacy", "1999-01-01", "2025-11-25"},
		{"modern version gets the latest legacy", "2026-07-28", "2025-11-25"},
	}
	s := newServer(t, &mcp.ServerOptions{Instructions: "use the tools wisely"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := mustResult(t, s, legacyReq(protocol.MethodInitialize), initParams(tt.requested))
			validate(t, protocol.Version20251125, "InitializeResult", raw)
			got := decode[protocol.InitializeResult](t, raw)
			if got.ProtocolVersion != tt.want {
				t.Errorf("protocolVersion = %q, want %q", got.ProtocolVersion, tt.want)
			}
			if got.ServerInfo.Name != serverInfo.Name || got.ServerInfo.Version != serverInfo.Version {
				t.Errorf("serverInfo = %+v, want %+v", got.ServerInfo, serverInfo)
			}
			if got.Instructions != "use the tools wisely" {
				t.Errorf("instructions = %q, want %q", got.Instructions, "use the tools wisely")
			}
		})
	}
}

func TestInitializeCapabilities(t *testing.T) {
	noopPrompt := func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}
	noopResource := func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, mcp.ErrResourceNotFound
	}
	tests := []struct {
		name  string
		opts  *mcp.ServerOptions
		setup func(t *testing.T, s *mcp.Server)
		want  string
	}{
		{
			name: "nothing registered",
			want: `{"logging":{},"tools":{"listChanged":true}}`,
		},
		{
			name:  "a tool",
			setup: func(t *testing.T, s *mcp.Server) { addTools(t, s, "t") },
			want:  `{"logging":{},"tools":{"listChanged":true}}`,
		},
		{
			name: "a prompt declares prompts and completions",
			setup: func(t *testing.T, s *mcp.Server) {
				if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, noopPrompt); err != nil {
					t.Fatal(err)
				}
			},
			want: `{"logging":{},"tools":{"listChanged":true},"prompts":{"listChanged":true},"completions":{}}`,
		},
		{
			name: "a plain resource declares resources without completions",
			setup: func(t *testing.T, s *mcp.Server) {
				if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, noopResource); err != nil {
					t.Fatal(err)
				}
			},
			want: `{"logging":{},"tools":{"listChanged":true},"resources":{"listChanged":true}}`,
		},
		{
			name: "a resource template declares resources and completions",
			setup: func(t *testing.T, s *mcp.Server) {
				if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, noopResource); err != nil {
					t.Fatal(err)
				}
			},
			want: `{"logging":{},"tools":{"listChanged":true},"resources":{"listChanged":true},"completions":{}}`,
		},
		{
			name: "a completion handler declares completions",
			setup: func(t *testing.T, s *mcp.Server) {
				s.SetCompletionHandler(func(context.Context, *mcp.Request, *protocol.CompleteParams) (*protocol.Completion, error) {
					return nil, nil
				})
			},
			want: `{"logging":{},"tools":{"listChanged":true},"completions":{}}`,
		},
		{
			name: "resource subscriptions declare resources.subscribe",
			opts: &mcp.ServerOptions{ResourceSubscriptions: true},
			setup: func(t *testing.T, s *mcp.Server) {
				if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, noopResource); err != nil {
					t.Fatal(err)
				}
			},
			want: `{"logging":{},"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			raw := mustResult(t, s, legacyReq(protocol.MethodInitialize), initParams("2025-11-25"))
			validate(t, protocol.Version20251125, "InitializeResult", raw)
			wantJSON(t, members(t, raw)["capabilities"], tt.want)
		})
	}
	t.Run("a transport without a session stream declares no push", func(t *testing.T) {
		s := newServer(t, &mcp.ServerOptions{ResourceSubscriptions: true})
		if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, noopPrompt); err != nil {
			t.Fatal(err)
		}
		in := legacyInit(protocol.MethodInitialize)
		in.Features = mcp.Features{Listen: true} // listen streams serve modern clients only
		raw := mustResult(t, s, mcp.NewRequest(in), initParams("2025-11-25"))
		validate(t, protocol.Version20251125, "InitializeResult", raw)
		wantJSON(t, members(t, raw)["capabilities"], `{"logging":{},"tools":{},"prompts":{},"resources":{},"completions":{}}`)
	})
}

func TestInitializeInvalidParams(t *testing.T) {
	tests := []struct {
		name, params string
	}{
		{"missing protocolVersion", `{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`},
		{"empty protocolVersion", `{"protocolVersion":"","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`},
		{"missing capabilities", `{"protocolVersion":"2025-11-25","clientInfo":{"name":"c","version":"1"}}`},
		{"null capabilities", `{"protocolVersion":"2025-11-25","capabilities":null,"clientInfo":{"name":"c","version":"1"}}`},
		{"missing clientInfo", `{"protocolVersion":"2025-11-25","capabilities":{}}`},
		{"clientInfo without name", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"version":"1"}}`},
		{"protocolVersion of the wrong type", `{"protocolVersion":20251125,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`},
		{"no params", ``},
	}
	s := newServer(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustError(t, s, legacyReq(protocol.MethodInitialize), tt.params, protocol.CodeInvalidParams)
		})
	}
}

func TestUnknownMethod(t *testing.T) {
	s := newServer(t, nil)
	for _, era := range []func(string) *mcp.Request{legacyReq, modernReq} {
		mustError(t, s, era("tools/frobnicate"), `{}`, protocol.CodeMethodNotFound)
	}
	// Params that are not an object are invalid params, whatever the method.
	if _, perr := handle(t, s, legacyReq(protocol.MethodPing), `[1]`); perr == nil || perr.Code != protocol.CodeInvalidParams {
		t.Errorf("ping with array params: got %v, want -32602", perr)
	}
	raw := mustResult(t, s, legacyReq(protocol.MethodPing), ``)
	wantJSON(t, raw, `{}`)
}
