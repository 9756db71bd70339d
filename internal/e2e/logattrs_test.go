package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// logLines decodes the JSON log lines of out (other lines are skipped).
func logLines(out string) []map[string]any {
	var ls []map[string]any
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		m := map[string]any{}
		if json.Unmarshal([]byte(l), &m) == nil {
			ls = append(ls, m)
		}
	}
	return ls
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHandlerLogAttributes: a line a handler logs with its context, on a
// logger built with mcpfleet.LogHandler, carries the request's method,
// id, session and tool, and the trace and span ids of the caller's
// traceparent (tracing is off: the caller's context is propagated).
func TestHandlerLogAttributes(t *testing.T) {
	var buf syncBuffer
	log := slog.New(mcpfleet.LogHandler(slog.NewJSONHandler(&buf, nil)))
	srv := mcp.NewServer(protocol.Implementation{Name: "logs-test", Version: "1"}, &mcp.ServerOptions{Logger: quiet})
	if err := srv.AddTool(&protocol.Tool{Name: "log_line"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		log.InfoContext(ctx, "handler line", "call", req.ID().String())
		return mcp.TextResult("logged"), nil
	}); err != nil {
		t.Fatal(err)
	}
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: srv})
	const (
		tp      = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		traceID = "0af7651916cd43dd8448eb211c80319c"
		spanID  = "b7ad6b7169203331"
	)
	line := func(call string) map[string]any {
		for _, l := range logLines(buf.String()) {
			if l["msg"] == "handler line" && l["call"] == call {
				return l
			}
		}
		t.Fatalf("no handler line for call %s in %q", call, buf.String())
		return nil
	}
	legacy := testenv.NewClient(t, ip.URL)
	legacy.Initialize(nil)
	if r := legacy.Post(testenv.Request(7, "tools/call", callParams("log_line", nil)), map[string]string{"Traceparent": tp}); r.Status != 200 {
		t.Fatalf("legacy tools/call: %s", r)
	}
	checkAttrs(t, "legacy", line("7"), map[string]any{"method": "tools/call", "rpc_id": 7.0, "session": legacy.SessionID[:8],
		"tool": "log_line", "trace_id": traceID, "span_id": spanID})

	mc := testenv.NewModernClient(t, ip.URL)
	meta := map[string]any{"name": "log_line", "_meta": map[string]any{"traceparent": tp}}
	if r := modern(t, mc, "m-8", "tools/call", meta, nil, nil); r.Status != 200 {
		t.Fatalf("modern tools/call: %s", r)
	}
	checkAttrs(t, "modern", line(`"m-8"`), map[string]any{"method": "tools/call", "rpc_id": "m-8", "session": nil,
		"tool": "log_line", "trace_id": traceID, "span_id": spanID})

	// Without a traceparent: the request's attributes, no trace ids.
	if r := legacy.Post(testenv.Request(9, "tools/call", callParams("log_line", nil)), nil); r.Status != 200 {
		t.Fatalf("legacy tools/call: %s", r)
	}
	checkAttrs(t, "no traceparent", line("9"), map[string]any{"rpc_id": 9.0, "tool": "log_line", "trace_id": nil, "span_id": nil})
}

func checkAttrs(t *testing.T, what string, l map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := l[k]
		if (v == nil && ok) || (v != nil && got != v) {
			t.Errorf("%s: %s = %v, want %v (line %v)", what, k, got, v, l)
		}
	}
}
