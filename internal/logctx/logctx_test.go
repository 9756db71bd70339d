package logctx

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// jsonLogger is a logger wrapped by NewHandler writing JSON lines to buf.
func jsonLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(NewHandler(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// lines decodes each JSON line of buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

var (
	traceID = trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	spanID  = trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}
)

func withSpan(ctx context.Context) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
}

// A line made with a request's context carries the record's attributes
// and the span context's ids; one made without is unchanged.
func TestRecordAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := jsonLogger(&buf)
	rec := &httpx.Record{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(7), Session: "0123456789abcdef0123", Tool: "echo"}
	ctx := withSpan(httpx.WithRecord(context.Background(), rec))
	log.InfoContext(ctx, "in the request", "k", "v")
	log.Info("outside")
	log.InfoContext(context.Background(), "no request")
	got := lines(t, &buf)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3", len(got))
	}
	want := map[string]any{"method": "tools/call", "rpc_id": 7.0, "session": "01234567", "tool": "echo",
		"trace_id": traceID.String(), "span_id": spanID.String(), "k": "v"}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, got[0][k], v, got[0])
		}
	}
	for _, l := range got[1:] {
		for _, k := range []string{"method", "rpc_id", "session", "tool", "trace_id", "span_id"} {
			if _, ok := l[k]; ok {
				t.Errorf("a line without a request context has %s: %v", k, l)
			}
		}
	}
}

// The record's span is the fallback when the context has no span.
func TestRecordSpan(t *testing.T) {
	var buf bytes.Buffer
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID})
	rec := &httpx.Record{Method: "GET", Span: trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc))}
	jsonLogger(&buf).InfoContext(httpx.WithRecord(context.Background(), rec), "x")
	l := lines(t, &buf)[0]
	if l["trace_id"] != traceID.String() || l["span_id"] != spanID.String() || l["method"] != "GET" {
		t.Errorf("line %v: want the record span's ids and method GET", l)
	}
	if _, ok := l["rpc_id"]; ok {
		t.Errorf("a record without an id gave rpc_id: %v", l)
	}
}

// request is what a worker hands WithRequest (*mcp.Request in the
// program).
type request struct {
	method, session, name string
	id                    protocol.ID
}

func (r request) Method() string    { return r.method }
func (r request) ID() protocol.ID   { return r.id }
func (r request) SessionID() string { return r.session }
func (r request) Name() string      { return r.name }

// Without a record, the Request of WithRequest gives the attributes: the
// target under its method's key, a URI without its query and fragment.
func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		req  request
		want map[string]any
		not  []string
	}{
		{request{method: "tools/call", id: protocol.StringID("a-1"), name: "greet"},
			map[string]any{"method": "tools/call", "rpc_id": "a-1", "tool": "greet"}, []string{"session", "prompt", "resource"}},
		{request{method: "prompts/get", id: protocol.Int64ID(3), session: "abc", name: "review"},
			map[string]any{"prompt": "review", "session": "abc"}, []string{"tool"}},
		{request{method: "resources/read", id: protocol.Int64ID(4), name: "file:///a/b?token=SECRET#frag"},
			map[string]any{"resource": "file:///a/b"}, []string{"tool"}},
		{request{method: "ping", id: protocol.Int64ID(5), name: "ignored"},
			map[string]any{"method": "ping"}, []string{"tool", "prompt", "resource"}},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		jsonLogger(&buf).InfoContext(WithRequest(context.Background(), tc.req), "x")
		l := lines(t, &buf)[0]
		for k, v := range tc.want {
			if l[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.req.method, k, l[k], v)
			}
		}
		for _, k := range tc.not {
			if _, ok := l[k]; ok {
				t.Errorf("%s: unexpected %s in %v", tc.req.method, k, l)
			}
		}
		if strings.Contains(buf.String(), "SECRET") {
			t.Errorf("a URI's query was logged: %s", buf.String())
		}
	}
	if WithRequest(context.Background(), nil) != context.Background() {
		t.Error("WithRequest(ctx, nil) is not ctx")
	}
}

// A key the record has already is not added a second time; client-chosen
// values are capped.
func TestNoDuplicatesAndCaps(t *testing.T) {
	var buf bytes.Buffer
	long := strings.Repeat("é", 200) // 400 bytes
	rec := &httpx.Record{Method: protocol.MethodToolsCall, ID: protocol.StringID(long), Tool: long}
	jsonLogger(&buf).InfoContext(httpx.WithRecord(context.Background(), rec), "x", "method", "mine")
	if n := strings.Count(buf.String(), `"method"`); n != 1 {
		t.Fatalf("method appears %d times: %s", n, buf.String())
	}
	l := lines(t, &buf)[0]
	if l["method"] != "mine" {
		t.Errorf("method = %v, want the call's own", l["method"])
	}
	for _, k := range []string{"tool", "rpc_id"} {
		s, _ := l[k].(string)
		if len(s) > maxName+len("…") || !strings.HasSuffix(s, "…") || !strings.HasPrefix(s, "éé") {
			t.Errorf("%s = %q (%d bytes): want at most %d bytes of é, cut with …", k, s, len(s), maxName)
		}
	}
}

// The wrapper survives WithAttrs and WithGroup, and is not stacked.
func TestDerivedHandlers(t *testing.T) {
	var buf bytes.Buffer
	h := NewHandler(slog.NewJSONHandler(&buf, nil))
	if NewHandler(h) != h {
		t.Error("wrapping a wrapped handler wrapped it again")
	}
	ctx := httpx.WithRecord(context.Background(), &httpx.Record{Method: "ping"})
	slog.New(h).With("a", 1).InfoContext(ctx, "x")
	slog.New(h).WithGroup("g").InfoContext(ctx, "y")
	got := lines(t, &buf)
	if got[0]["method"] != "ping" || got[0]["a"] != 1.0 {
		t.Errorf("With: %v", got[0])
	}
	if g, _ := got[1]["g"].(map[string]any); g["method"] != "ping" {
		t.Errorf("WithGroup: %v, want method in the group", got[1])
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"}, // not in the middle of é
	} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
