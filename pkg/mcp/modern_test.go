package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// fullServer registers one of everything, so every result type can be
// produced.
func fullServer(t *testing.T, opts *mcp.ServerOptions) *mcp.Server {
	t.Helper()
	s := newServer(t, opts)
	type in struct {
		X int `json:"x"`
	}
	type out struct {
		Y int `json:"y"`
	}
	if err := mcp.AddTool(s, &protocol.Tool{Name: "double"}, func(_ context.Context, _ *mcp.Request, v in) (*protocol.CallToolResult, out, error) {
		return nil, out{Y: 2 * v.X}, nil
	}); err != nil {
		t.Fatal(err)
	}
	addTools(t, s, "plain")
	if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{Messages: []*protocol.PromptMessage{{Role: "user", Content: &protocol.TextContent{Text: "hi"}}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	read := func(_ context.Context, _ *mcp.Request, uri string, _ map[string]string) (*protocol.ReadResourceResult, error) {
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, Text: "x"}}}, nil
	}
	if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, read); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, read); err != nil {
		t.Fatal(err)
	}
	s.SetCompletionHandler(func(context.Context, *mcp.Request, *protocol.CompleteParams) (*protocol.Completion, error) {
		return &protocol.Completion{Values: []string{"a"}}, nil
	})
	return s
}

// resultCases are the requests of TestModernFinishing: method, params, the
// schema definition of the result and whether it is cacheable.
var resultCases = []struct {
	method, params, def string
	cacheable           bool
	modernOnly          bool
}{
	{protocol.MethodPing, `{}`, "EmptyResult", false, false},
	{protocol.MethodToolsList, `{}`, "ListToolsResult", true, false},
	{protocol.MethodToolsCall, `{"name":"double","arguments":{"x":21}}`, "CallToolResult", false, false},
	{protocol.MethodToolsCall, `{"name":"plain"}`, "CallToolResult", false, false},
	{protocol.MethodPromptsList, `{}`, "ListPromptsResult", true, false},
	{protocol.MethodPromptsGet, `{"name":"p"}`, "GetPromptResult", false, false},
	{protocol.MethodResourcesList, `{}`, "ListResourcesResult", true, false},
	{protocol.MethodResourcesTemplatesList, `{}`, "ListResourceTemplatesResult", true, false},
	{protocol.MethodResourcesRead, `{"uri":"test://r"}`, "ReadResourceResult", true, false},
	{protocol.MethodResourcesRead, `{"uri":"test://t/7"}`, "ReadResourceResult", true, false},
	{protocol.MethodCompletionComplete, `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}`, "CompleteResult", false, false},
	{protocol.MethodServerDiscover, `{}`, "DiscoverResult", true, true},
}

func TestModernFinishing(t *testing.T) {
	tests := []struct {
		name      string
		opts      *mcp.ServerOptions
		wantTTL   int64
		wantScope string
	}{
		{"defaults", nil, 0, "public"},
		{"configured", &mcp.ServerOptions{CacheTTL: 1500 * time.Millisecond, CacheScope: "private"}, 1500, "private"},
		{"negative TTL is zero", &mcp.ServerOptions{CacheTTL: -time.Second}, 0, "public"},
	}
	for _, tt := range tests {
		s := fullServer(t, tt.opts)
		for _, rc := range resultCases {
			t.Run(tt.name+"/"+rc.method+rc.params, func(t *testing.T) {
				raw := mustResult(t, s, modernReq(rc.method), rc.params)
				validate(t, protocol.Version20260728, rc.def, raw)
				m := members(t, raw)
				if string(m["resultType"]) != `"complete"` {
					t.Errorf("resultType = %s, want \"complete\"", m["resultType"])
				}
				meta := decode[map[string]json.RawMessage](t, m["_meta"])
				wantJSON(t, meta[protocol.MetaServerInfo], `{"name":"test-server","version":"1.2.3"}`)
				_, hasTTL := m["ttlMs"]
				_, hasScope := m["cacheScope"]
				if !rc.cacheable {
					if hasTTL || hasScope {
						t.Errorf("non-cacheable result carries caching hints: %s", raw)
					}
					return
				}
				if !hasTTL || decode[int64](t, m["ttlMs"]) != tt.wantTTL {
					t.Errorf("ttlMs = %s, want %d", m["ttlMs"], tt.wantTTL)
				}
				if !hasScope || decode[string](t, m["cacheScope"]) != tt.wantScope {
					t.Errorf("cacheScope = %s, want %q", m["cacheScope"], tt.wantScope)
				}
			})
		}
	}
}

func TestLegacyResultsAreNotFinished(t *testing.T) {
	s := fullServer(t, &mcp.ServerOptions{CacheTTL: time.Minute})
	for _, rc := range resultCases {
		if rc.modernOnly {
			continue
		}
		t.Run(rc.method+rc.params, func(t *testing.T) {
			raw := mustResult(t, s, legacyReq(rc.method), rc.params)
			validate(t, protocol.Version20251125, rc.def, raw)
			m := members(t, raw)
			for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
				if v, ok := m[k]; ok {
					t.Errorf("legacy result carries %s=%s", k, v)
				}
			}
			if v, ok := m["_meta"]; ok {
				if _, ok := decode[map[string]json.RawMessage](t, v)[protocol.MetaServerInfo]; ok {
					t.Errorf("legacy result carries the serverInfo _meta: %s", raw)
				}
			}
		})
	}
}

func TestModernKeepsHandlerMeta(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "meta"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		r := mcp.TextResult("x")
		r.Meta = protocol.Meta{"example.com/trace": "abc"}
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	raw := mustResult(t, s, modernReq(protocol.MethodToolsCall), `{"name":"meta"}`)
	validate(t, protocol.Version20260728, "CallToolResult", raw)
	wantJSON(t, members(t, raw)["_meta"], `{"example.com/trace":"abc","io.modelcontextprotocol/serverInfo":{"name":"test-server","version":"1.2.3"}}`)
}

func TestDiscover(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{Instructions: "be nice"})
	raw := mustResult(t, s, modernReq(protocol.MethodServerDiscover), `{}`)
	validate(t, protocol.Version20260728, "DiscoverResult", raw)
	got := decode[protocol.DiscoverResult](t, raw)
	if got.Instructions != "be nice" {
		t.Errorf("instructions = %q", got.Instructions)
	}
	if len(got.SupportedVersions) == 0 || got.SupportedVersions[0] != protocol.LatestVersion {
		t.Errorf("supportedVersions = %v, want the latest first", got.SupportedVersions)
	}
	wantJSON(t, members(t, raw)["capabilities"], `{"logging":{},"tools":{"listChanged":true}}`)
}

// TestModernHeadMembers: the MRTR members are checked where they mean
// something (tools/call, which also decodes them itself, on every era)
// and not by the head decode of other methods (ping), and a
// request given the head NewRequestParams decoded is answered as one
// without it.
func TestModernHeadMembers(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "ok"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return &protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: "fine"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, params := range []string{
		`{"name":"ok","requestState":5}`,
		`{"name":"ok","inputResponses":[1]}`,
		`{"name":"ok","inputResponses":{"a":1},"requestState":false}`,
	} {
		for _, withHead := range []bool{false, true} {
			req := modernReq(protocol.MethodToolsCall)
			if withHead {
				req = mcp.NewRequestParams(modernInit(protocol.MethodToolsCall), json.RawMessage(params))
			}
			if _, perr := handle(t, s, req, params); perr == nil || perr.Code != protocol.CodeInvalidParams {
				t.Errorf("modern tools/call %s (head %v): error %v, want -32602", params, withHead, perr)
			}
			if _, perr := handle(t, s, modernReq(protocol.MethodPing), params); perr != nil {
				t.Errorf("modern ping %s: %v, want a result (no MRTR on ping)", params, perr)
			}
		}
	}
}
