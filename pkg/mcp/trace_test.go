package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceContext checks that the W3C trace context of a request (from
// its _meta, else from the transport) reaches the handler's context.
func TestTraceContext(t *testing.T) {
	s := mcp.NewServer(protocol.Implementation{Name: "t", Version: "1"}, nil)
	var got trace.SpanContext
	if err := s.AddTool(&protocol.Tool{Name: "trace"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		got = trace.SpanContextFromContext(ctx)
		return mcp.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	const (
		fromMeta   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		fromHeader = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	tests := []struct {
		name, params, header, wantTrace string
	}{
		{"from _meta", `{"name":"trace","_meta":{"traceparent":"` + fromMeta + `"}}`, fromHeader, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"from the transport", `{"name":"trace"}`, fromHeader, "0af7651916cd43dd8448eb211c80319c"},
		{"none", `{"name":"trace"}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = trace.SpanContext{}
			req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy, Traceparent: tc.header})
			if _, err := s.Handle(context.Background(), req, json.RawMessage(tc.params)); err != nil {
				t.Fatal(err)
			}
			if tc.wantTrace == "" {
				if got.IsValid() {
					t.Fatalf("a span context without a traceparent: %v", got)
				}
				return
			}
			if !got.IsRemote() || got.TraceID().String() != tc.wantTrace {
				t.Fatalf("trace id %s (remote %v), want %s", got.TraceID(), got.IsRemote(), tc.wantTrace)
			}
		})
	}
}

// TestTraceContextSpanWins checks that a span context already in the
// context given to Handle (the worker's span) stays the handler's parent:
// the request's _meta.traceparent does not replace it.
func TestTraceContextSpanWins(t *testing.T) {
	s := mcp.NewServer(protocol.Implementation{Name: "t", Version: "1"}, nil)
	var got trace.SpanContext
	if err := s.AddTool(&protocol.Tool{Name: "trace"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		got = trace.SpanContextFromContext(ctx)
		return mcp.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	own := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{7}, SpanID: [8]byte{7}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), own)
	req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraLegacy,
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	params := `{"name":"trace","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`
	if _, err := s.Handle(ctx, req, json.RawMessage(params)); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(own) {
		t.Fatalf("the handler's span context is %v, want the one in Handle's context %v", got, own)
	}
}
