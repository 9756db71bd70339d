package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// allContent is one block of each type CallToolResult may carry.
func allContent() []protocol.Content {
	return []protocol.Content{
		&protocol.TextContent{Text: "hello", Annotations: &protocol.Annotations{Audience: []string{"user", "assistant"}, Priority: ptr(1.0)}},
		&protocol.TextContent{},
		&protocol.ImageContent{Data: "aGk=", MimeType: "image/png"},
		&protocol.AudioContent{Data: "aGk=", MimeType: "audio/wav"},
		&protocol.ResourceLink{Resource: protocol.Resource{URI: "file:///a.txt", Name: "a", Title: "A", Size: ptr(int64(2))}},
		&protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///a.txt", MimeType: "text/plain", Text: "hi"}},
		&protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///a.bin", Blob: []byte{0xff, 0}}},
	}
}

func tool() *protocol.Tool {
	return &protocol.Tool{
		Name:         "add",
		Title:        "Add",
		Description:  "adds two numbers",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}}}`),
		Annotations:  &protocol.ToolAnnotations{ReadOnlyHint: ptr(true), IdempotentHint: ptr(true)},
	}
}

func cache(ttl int64, scope string) protocol.CacheHints {
	return protocol.CacheHints{TTLMs: &ttl, CacheScope: scope}
}

var complete = protocol.ResultBase{ResultType: protocol.ResultTypeComplete}

func serverInfo() protocol.Implementation {
	return protocol.Implementation{Name: "mcpfleet", Version: "1.2.3", Title: "MCP fleet"}
}

func TestResultsMatchSchema(t *testing.T) {
	tests := []struct {
		name    string
		version string
		def     string
		result  any
	}{
		{"call tool: every content type", legacyVersion, "CallToolResult",
			&protocol.CallToolResult{Content: allContent(), StructuredContent: map[string]any{"sum": 3}}},
		{"call tool: nil content", legacyVersion, "CallToolResult", &protocol.CallToolResult{}},
		{"call tool: tool error", legacyVersion, "CallToolResult",
			&protocol.CallToolResult{IsError: true, Content: []protocol.Content{&protocol.TextContent{Text: "boom"}}}},
		{"call tool: modern", modernVersion, "CallToolResult",
			&protocol.CallToolResult{ResultBase: complete, Content: allContent()}},
		{"get prompt", legacyVersion, "GetPromptResult", &protocol.GetPromptResult{
			Description: "a prompt",
			Messages: []*protocol.PromptMessage{
				{Role: "user", Content: &protocol.TextContent{Text: "hi"}},
				{Role: "assistant", Content: &protocol.ImageContent{Data: "aGk=", MimeType: "image/png"}},
				{Role: "user", Content: &protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///x", Text: "x"}}},
				{Role: "user", Content: &protocol.ResourceLink{Resource: protocol.Resource{URI: "file:///y", Name: "y"}}},
			},
		}},
		{"get prompt: modern", modernVersion, "GetPromptResult", &protocol.GetPromptResult{ResultBase: complete,
			Messages: []*protocol.PromptMessage{{Role: "user", Content: &protocol.TextContent{Text: "hi"}}}}},
		{"read resource", legacyVersion, "ReadResourceResult", &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{
			{URI: "file:///a.txt", MimeType: "text/plain", Text: "hello"},
			{URI: "file:///a.bin", Blob: []byte("bin")},
			{URI: "file:///empty"},
		}}},
		{"read resource: modern", modernVersion, "ReadResourceResult", &protocol.ReadResourceResult{
			ResultBase: complete, CacheHints: cache(0, protocol.CacheScopePrivate),
			Contents: []*protocol.ResourceContents{{URI: "file:///a.txt", Text: "hello"}}}},
		{"list tools", legacyVersion, "ListToolsResult",
			&protocol.ListToolsResult{Tools: []*protocol.Tool{tool(), {Name: "t2", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: &protocol.ToolExecution{TaskSupport: "optional"}}}, NextCursor: ptr("c2")}},
		{"list tools: empty", legacyVersion, "ListToolsResult", &protocol.ListToolsResult{Tools: []*protocol.Tool{}}},
		{"list tools: modern with cache hints", modernVersion, "ListToolsResult", &protocol.ListToolsResult{
			ResultBase: complete, CacheHints: cache(60000, protocol.CacheScopePublic), Tools: []*protocol.Tool{tool()}}},
		{"initialize", legacyVersion, "InitializeResult", &protocol.InitializeResult{
			ProtocolVersion: legacyVersion,
			Capabilities: protocol.ServerCapabilities{
				Logging: &struct{}{}, Completions: &struct{}{},
				Prompts:   &protocol.PromptsCapability{ListChanged: true},
				Resources: &protocol.ResourcesCapability{Subscribe: true, ListChanged: true},
				Tools:     &protocol.ToolsCapability{ListChanged: true},
			},
			ServerInfo:   serverInfo(),
			Instructions: "be nice",
		}},
		{"initialize: no capabilities", legacyVersion, "InitializeResult", &protocol.InitializeResult{ProtocolVersion: "2025-06-18", ServerInfo: serverInfo()}},
		{"create message: single block", legacyVersion, "CreateMessageResult", &protocol.CreateMessageResult{
			Role: "assistant", Model: "m1", StopReason: "endTurn",
			Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.TextContent{Text: "hi"}}}}},
		{"create message: list with tool use", legacyVersion, "CreateMessageResult", &protocol.CreateMessageResult{
			Role: "assistant", Model: "m1", StopReason: "toolUse",
			Content: protocol.SingleOrList{List: true, Blocks: []protocol.Content{
				&protocol.TextContent{Text: "calling"},
				&protocol.ToolUseContent{ID: "u1", Name: "add", Input: map[string]any{"a": 1, "b": 2}},
			}}}},
		{"create message: tool result", legacyVersion, "CreateMessageResult", &protocol.CreateMessageResult{
			Role: "user", Model: "m1",
			Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.ToolResultContent{
				ToolUseID: "u1", Content: protocol.ContentList{&protocol.TextContent{Text: "3"}}, StructuredContent: map[string]any{"sum": 3}}}}}},
		{"elicit: accept", legacyVersion, "ElicitResult", &protocol.ElicitResult{
			Action: protocol.ElicitAccept, Content: map[string]any{"name": "x", "age": 3, "ok": true, "tags": []string{"a"}}}},
		{"elicit: decline", legacyVersion, "ElicitResult", &protocol.ElicitResult{Action: protocol.ElicitDecline}},
		{"elicit: cancel", legacyVersion, "ElicitResult", &protocol.ElicitResult{Action: protocol.ElicitCancel}},
		{"discover", modernVersion, "DiscoverResult", &protocol.DiscoverResult{
			ResultBase:        protocol.ResultBase{ResultType: protocol.ResultTypeComplete, Meta: protocol.Meta{protocol.MetaServerInfo: serverInfo()}},
			CacheHints:        cache(300000, protocol.CacheScopePublic),
			SupportedVersions: protocol.SupportedVersions(),
			Capabilities: protocol.ServerCapabilities{
				Tools: &protocol.ToolsCapability{ListChanged: true}, Logging: &struct{}{},
				Extensions: map[string]json.RawMessage{"io.modelcontextprotocol/tasks": json.RawMessage(`{}`)},
			},
			Instructions: "hello",
		}},
		{"empty: modern", modernVersion, "EmptyResult", &protocol.EmptyResult{ResultBase: complete}},
		{"empty: legacy", legacyVersion, "EmptyResult", &protocol.EmptyResult{}},
		{"complete", legacyVersion, "CompleteResult", &protocol.CompleteResult{Completion: protocol.Completion{Values: []string{"a", "b"}, Total: ptr(2)}}},
		{"list roots", legacyVersion, "ListRootsResult", &protocol.ListRootsResult{Roots: []*protocol.Root{{URI: "file:///home", Name: "home"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.result)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			validate(t, tc.version, tc.def, raw)
			validate(t, tc.version, "JSONRPCResultResponse", protocol.AppendResponse(nil, protocol.Int64ID(1), raw))
		})
	}
}

// TestResultsSchemaCanFail shows the validations above are not vacuous:
// results our types can produce when misused are rejected.
func TestResultsSchemaCanFail(t *testing.T) {
	tests := []struct {
		name    string
		version string
		def     string
		result  any
	}{
		{"modern list without cache hints", modernVersion, "ListToolsResult",
			&protocol.ListToolsResult{ResultBase: complete, Tools: []*protocol.Tool{}}},
		{"modern list without resultType", modernVersion, "ListToolsResult",
			&protocol.ListToolsResult{CacheHints: cache(1, protocol.CacheScopePublic), Tools: []*protocol.Tool{}}},
		{"modern list with a bad cache scope", modernVersion, "ListToolsResult",
			&protocol.ListToolsResult{ResultBase: complete, CacheHints: cache(1, "shared"), Tools: []*protocol.Tool{}}},
		{"discover without cache hints", modernVersion, "DiscoverResult",
			&protocol.DiscoverResult{ResultBase: complete, SupportedVersions: []string{modernVersion}}},
		{"discover with a non-object serverInfo", modernVersion, "DiscoverResult", &protocol.DiscoverResult{
			ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete, Meta: protocol.Meta{protocol.MetaServerInfo: "mcpfleet"}},
			CacheHints: cache(1, protocol.CacheScopePublic), SupportedVersions: []string{modernVersion}}},
		{"call tool with a text block lacking text", legacyVersion, "CallToolResult",
			json.RawMessage(`{"content":[{"type":"text"}]}`)},
		{"list tools with a non-object input schema", legacyVersion, "ListToolsResult",
			&protocol.ListToolsResult{Tools: []*protocol.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)}}}},
		{"elicit with an unknown action", legacyVersion, "ElicitResult", &protocol.ElicitResult{Action: "maybe"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.result)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if err := testenv.SchemasFor(t, tc.version).Validate(tc.def, raw); err == nil {
				t.Errorf("%s %s accepted %s", tc.version, tc.def, raw)
			}
		})
	}
}
