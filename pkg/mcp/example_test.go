package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// A typed tool: the input schema comes from the arguments struct, the
// output schema and structuredContent from the result struct.
func ExampleAddTool() {
	type addArgs struct {
		A int `json:"a" jsonschema:"the first addend"`
		B int `json:"b" jsonschema:"the second addend"`
	}
	type addResult struct {
		Sum int `json:"sum"`
	}
	s := mcp.NewServer(protocol.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	err := mcp.AddTool(s, &protocol.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.Request, in addArgs) (*protocol.CallToolResult, addResult, error) {
			return nil, addResult{Sum: in.A + in.B}, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A transport builds a Request per message and calls Handle.
	req := &mcp.Request{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy}
	res, err := s.Handle(context.Background(), req, json.RawMessage(`{"name":"add","arguments":{"a":2,"b":3}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))

	req = &mcp.Request{Method: protocol.MethodToolsList, ID: protocol.Int64ID(2), Era: protocol.EraLegacy}
	res, _ = s.Handle(context.Background(), req, nil)
	out, _ = json.Marshal(res.(*protocol.ListToolsResult).Tools[0].InputSchema)
	fmt.Println(string(out))
	// Output:
	// {"content":[{"type":"text","text":"{\"sum\":5}"}],"structuredContent":{"sum":5}}
	// {"type":"object","properties":{"a":{"type":"integer","description":"the first addend"},"b":{"type":"integer","description":"the second addend"}},"required":["a","b"]}
}

// On a modern (2026-07-28) request, Handle finishes the result: resultType,
// the serverInfo _meta and, for cacheable results, the caching hints.
func ExampleServer_Handle_modern() {
	s := mcp.NewServer(protocol.Implementation{Name: "calc", Version: "1.0.0"}, &mcp.ServerOptions{CacheTTL: time.Minute})
	req := &mcp.Request{Method: protocol.MethodToolsList, ID: protocol.Int64ID(1), Era: protocol.EraModern}
	res, err := s.Handle(context.Background(), req, json.RawMessage(`{}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	// Output:
	// {"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"calc","version":"1.0.0"}},"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[]}
}

func BenchmarkHandleToolsCall(b *testing.B) {
	s := newServer(b, nil)
	type in struct {
		Text string `json:"text"`
	}
	if err := mcp.AddTool(s, &protocol.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.Request, v in) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult(v.Text), nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := &mcp.Request{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy}
		if _, err := s.Handle(ctx, req, params); err != nil {
			b.Fatal(err)
		}
	}
}
