package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// accessLine is the access line of rec, ended 1.5 ms after its start,
// decoded from JSON.
func accessLine(t *testing.T, rec *httpx.Record) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.LogAttrs(context.Background(), slog.LevelInfo, "access", accessAttrs(nil, rec, rec.Start.Add(1500*time.Microsecond))...)
	m := map[string]any{}
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	return m
}

// Every field of the line, from a record with every field set: the
// session cut, the URI without its query, the trace id of the span.
func TestAccessAttrs(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
	})
	rec := &httpx.Record{
		Start: time.Now(), HTTPMethod: "POST", Method: protocol.MethodResourcesRead, ID: protocol.StringID("r-1"),
		Resource: "db://rows?password=SECRET", Session: "abcdefgh12345678", ProtocolVersion: "2025-11-25",
		Principal: "https://issuer#alice", Status: 200, ErrCode: -32002, Remote: "10.0.0.7:5555",
		Span: trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc)),
	}
	got := accessLine(t, rec)
	want := map[string]any{
		"msg": "access", "http_method": "POST", "method": "resources/read", "resource": "db://rows", "rpc_id": "r-1",
		"session": "abcdefgh", "principal": "https://issuer#alice", "protocol": "2025-11-25", "status": 200.0,
		"rpc_error": -32002.0, "error_type": "-32002", "outcome": "ok", "duration": 1.5,
		"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "remote": "10.0.0.7:5555",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != "time" && k != "level" {
			t.Errorf("unexpected field %s = %v", k, got[k])
		}
	}
}

// A bare record (a GET before anything is known): only the fields that
// are always there.
func TestAccessAttrsMinimal(t *testing.T) {
	got := accessLine(t, &httpx.Record{Start: time.Now(), HTTPMethod: "GET", Method: "GET", Remote: "[::1]:1"})
	for _, k := range []string{"tool", "prompt", "resource", "rpc_id", "session", "principal", "protocol", "rpc_error", "error_type", "trace_id"} {
		if _, ok := got[k]; ok {
			t.Errorf("unset %s logged: %v", k, got[k])
		}
	}
	if got["status"] != 0.0 || got["outcome"] != "ok" || got["method"] != "GET" || got["remote"] != "[::1]:1" {
		t.Errorf("line %v", got)
	}
	tool := accessLine(t, &httpx.Record{Start: time.Now(), Method: protocol.MethodToolsCall, Tool: strings.Repeat("x", 1000), ToolError: true, Status: 200})
	if s, _ := tool["tool"].(string); len(s) > maxLogName+len("…") {
		t.Errorf("a 1000-byte tool name logged as %d bytes", len(s))
	}
	if tool["error_type"] != "tool_error" {
		t.Errorf("error_type %v, want tool_error", tool["error_type"])
	}
}

// BenchmarkAccessLine is the cost of one access line of a tools/call,
// built and written as JSON (to io.Discard).
func BenchmarkAccessLine(b *testing.B) {
	f := &Frontend{log: slog.New(slog.NewJSONHandler(io.Discard, nil)).With("frontend", "0123456789ab")}
	rec := &httpx.Record{Start: time.Now(), HTTPMethod: "POST", Method: protocol.MethodToolsCall, ID: protocol.Int64ID(42),
		Tool: "echo", Session: "0123456789abcdef0123456789abcdef", ProtocolVersion: "2025-11-25", Status: 200, Remote: "127.0.0.1:54321"}
	b.ReportAllocs()
	for b.Loop() {
		f.accessLog(rec)
	}
}
