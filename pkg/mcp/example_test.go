package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
	req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy})
	res, err := s.Handle(context.Background(), req, json.RawMessage(`{"name":"add","arguments":{"a":2,"b":3}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))

	req = mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsList, ID: protocol.Int64ID(2), Era: protocol.EraLegacy})
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
	req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsList, ID: protocol.Int64ID(1), Era: protocol.EraModern})
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

// A per-tool logging middleware: every tool call is logged with its tool,
// caller and outcome, whichever tool it is and whenever it was added.
func ExampleServer_AddToolMiddleware() {
	// A logger without timestamps, so the output is reproducible.
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	s := mcp.NewServer(protocol.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			res, err := next(ctx, req, args)
			switch {
			case errors.Is(err, mcp.ErrInputRequired):
				// An MRTR round asking the client: not an outcome yet.
			case err != nil:
				log.Warn("tool call failed", "tool", req.Name(), "principal", req.Principal(), "err", err)
			default:
				log.Info("tool call", "tool", req.Name(), "principal", req.Principal(), "isError", res.IsError)
			}
			return res, err
		}
	})
	type divArgs struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	err := mcp.AddTool(s, &protocol.Tool{Name: "div"}, func(_ context.Context, _ *mcp.Request, in divArgs) (*protocol.CallToolResult, any, error) {
		if in.B == 0 {
			return nil, nil, errors.New("division by zero")
		}
		return mcp.TextResult(fmt.Sprint(in.A / in.B)), nil, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{`{"a":1,"b":4}`, `{"a":1,"b":0}`} {
		req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy, Principal: "alice"})
		if _, err := s.Handle(context.Background(), req, json.RawMessage(`{"name":"div","arguments":`+args+`}`)); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// level=INFO msg="tool call" tool=div principal=alice isError=false
	// level=WARN msg="tool call failed" tool=div principal=alice err="division by zero"
}

// newEchoServer is a server with one tool, echo, that returns its text.
func newEchoServer(b *testing.B) *mcp.Server {
	b.Helper()
	s := newServer(b, nil)
	type in struct {
		Text string `json:"text"`
	}
	if err := mcp.AddTool(s, &protocol.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.Request, v in) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult(v.Text), nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkHandleToolsCall(b *testing.B) {
	s := newEchoServer(b)
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy})
		if _, err := s.Handle(ctx, req, params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandleModernToolsCall is BenchmarkHandleToolsCall for a
// 2026-07-28 request built as a worker builds it (NewRequestParams, then
// Handle with the same params).
func BenchmarkHandleModernToolsCall(b *testing.B) {
	s := newEchoServer(b)
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}}}`)
	init := &mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraModern, ProtocolVersion: protocol.Version20260728}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := mcp.NewRequestParams(init, params)
		if _, err := s.Handle(ctx, req, params); err != nil {
			b.Fatal(err)
		}
	}
}
