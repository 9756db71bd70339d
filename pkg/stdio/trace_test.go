package stdio_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/stdio"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestServeSpans checks the stdio transport's SERVER span of each
// request: parented on its _meta.traceparent, named after the method and
// tool, with the MCP attributes and network.transport pipe, error.type for
// a tool error.
func TestServeSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"sleep","arguments":{"ms":-1}}}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := stdio.Serve(context.Background(), newServer(t, nil), strings.NewReader(in), &out, &stdio.Options{Logger: slog.New(slog.DiscardHandler), TracerProvider: tp}); err != nil {
		t.Fatal(err)
	}
	var spans []sdktrace.ReadOnlySpan
	testutil.Poll(t, "three spans", func() bool { spans = rec.Ended(); return len(spans) >= 3 })
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
		if s.SpanKind() != trace.SpanKindServer {
			t.Errorf("span %q is %v, want server", s.Name(), s.SpanKind())
		}
	}
	echo, sleep := byName["tools/call echo"], byName["tools/call sleep"]
	if byName["initialize"] == nil || echo == nil || sleep == nil {
		t.Fatalf("spans %v", byName)
	}
	if echo.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || echo.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("echo's span is not a child of the _meta's: trace %s parent %s", echo.SpanContext().TraceID(), echo.Parent().SpanID())
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	e := attrs(echo)
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "2", "network.transport": "pipe", "mcp.protocol.version": "2025-11-25"} {
		if e[k] != v {
			t.Errorf("echo's span: %s = %q, want %q", k, e[k], v)
		}
	}
	if e["mcp.session.id"] == "" {
		t.Error("echo's span has no mcp.session.id")
	}
	if _, ok := e["error.type"]; ok {
		t.Errorf("echo's span has error.type %q", e["error.type"])
	}
	if s := attrs(sleep); s["error.type"] != "tool_error" || s["jsonrpc.request.id"] != "three" {
		t.Errorf("sleep's span: error.type %q, jsonrpc.request.id %q", s["error.type"], s["jsonrpc.request.id"])
	}
	if sleep.Parent().IsValid() {
		t.Errorf("a request without _meta.traceparent has parent %v", sleep.Parent())
	}
}
