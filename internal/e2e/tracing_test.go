package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracedServer serves the tools of the tracing tests: "lookup" starts a
// child span of its own from its context (as docs/authoring.md shows) and
// answers the trace id its context carries; "broken" answers a tool
// error; "refuse" a JSON-RPC error (-32602); "typed" takes {n: integer}.
func tracedServer(t *testing.T) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(protocol.Implementation{Name: "traced", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddTool(&protocol.Tool{Name: "lookup"}, func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		ctx, span := otel.Tracer("example.com/lookup").Start(ctx, "db.query")
		defer span.End()
		span.SetAttributes(attribute.String("db.system.name", "postgresql"))
		return mcp.TextResult(trace.SpanContextFromContext(ctx).TraceID().String()), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(&protocol.Tool{Name: "broken"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.ToolError("it broke"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(&protocol.Tool{Name: "refuse"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return nil, protocol.NewError(protocol.CodeInvalidParams, "invalid params: refused")
	}); err != nil {
		t.Fatal(err)
	}
	type typedArgs struct {
		N int `json:"n"`
	}
	if err := mcp.AddTool(s, &protocol.Tool{Name: "typed"}, func(_ context.Context, _ *mcp.Request, in typedArgs) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult("ok"), nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// recordingProvider is an SDK tracer provider that keeps every ended
// span, installed as the global provider too (what handlers reach with
// otel.Tracer) until the test ends. Tests using it must not be parallel.
func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return tp, rec
}

// spansOf waits until the recorder holds the n spans of trace tid (ended
// spans only) and returns them by kind and name ("server tools/call x").
func spansOf(t *testing.T, rec *tracetest.SpanRecorder, tid trace.TraceID, n int) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	var got map[string]sdktrace.ReadOnlySpan
	testutil.Poll(t, "the spans of trace "+tid.String(), func() bool {
		got = map[string]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == tid {
				got[s.SpanKind().String()+" "+s.Name()] = s
			}
		}
		return len(got) >= n
	})
	if len(got) != n {
		names := []string{}
		for k := range got {
			names = append(names, k)
		}
		t.Fatalf("trace %s has spans %v, want %d", tid, names, n)
	}
	return got
}

func attrOf(s sdktrace.ReadOnlySpan, key string) (string, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

// wantAttrs fails the test unless span s has each attribute of want (""
// means present with any value).
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := attrOf(s, k)
		if !ok || (v != "" && got != v) {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name(), k, got, ok, v)
		}
	}
}

// wantChild fails the test unless child's parent is parent.
func wantChild(t *testing.T, child, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q's parent is %s, want %q (%s)", child.Name(), child.Parent().SpanID(), parent.Name(), parent.SpanContext().SpanID())
	}
}

const (
	clientTrace   = "0af7651916cd43dd8448eb211c80319c"
	clientSpan    = "b7ad6b7169203331"
	clientTP      = "00-" + clientTrace + "-" + clientSpan + "-01"
	metaTrace     = "4bf92f3577b34da6a3ce929d0e0e4736"
	metaSpan      = "00f067aa0ba902b7"
	metaTP        = "00-" + metaTrace + "-" + metaSpan + "-01"
	legacyVer     = "2025-11-25"
	modernVer     = "2026-07-28"
	lookupSubject = "mcp.req.tools/call.lookup"
)

// TestTracingSpans checks the spans of a tools/call in the all-in-one
// with an SDK tracer provider: the frontend's SERVER span, parented on the
// client's traceparent header, then the bus hop's PRODUCER span, the
// worker's CONSUMER span, the handler's INTERNAL span and the span the
// tool itself starts from its context, one trace, each with the
// attributes of the semantic conventions; legacy and modern, on the
// embedded NATS server and on the in-process bus (whose messaging.system
// is bus.LocalSystem).
func TestTracingSpans(t *testing.T) {
	for _, b := range []struct {
		name   string
		local  bool
		system string
	}{{"nats", false, "nats"}, {"local", true, bus.LocalSystem}} {
		t.Run(b.name, func(t *testing.T) { testTracingSpans(t, b.local, b.system) })
	}
}

func testTracingSpans(t *testing.T, localBus bool, system string) {
	tp, rec := recordingProvider(t)
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: tracedServer(t), TracerProvider: tp, LocalBus: localBus})
	legacy := testenv.NewClient(t, ip.URL)
	legacy.Initialize(nil)
	modernClient := testenv.NewModernClient(t, ip.URL)
	tid, _ := trace.TraceIDFromHex(clientTrace)

	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			rec.Reset()
			hdr := map[string]string{"Traceparent": clientTP, "Tracestate": "vendor=x"}
			var r *testenv.Reply
			version, session := legacyVer, legacy.SessionID
			if era == "legacy" {
				r = legacy.Post(testenv.Request(7, "tools/call", map[string]any{"name": "lookup"}), hdr)
			} else {
				version, session = modernVer, ""
				r = modern(t, modernClient, 7, "tools/call", map[string]any{"name": "lookup"}, nil, hdr)
			}
			if got := toolText(t, r); got != clientTrace {
				t.Fatalf("the tool's context carries trace %s, want the client's %s", got, clientTrace)
			}
			spans := spansOf(t, rec, tid, 5)
			fe, pub, con := spans["server tools/call lookup"], spans["producer publish "+lookupSubject], spans["consumer process "+lookupSubject]
			h, own := spans["internal tools/call lookup"], spans["internal db.query"]
			if fe == nil || pub == nil || con == nil || h == nil || own == nil {
				t.Fatalf("spans %v: want the frontend's, the publish, the process, the handler's and the tool's", spans)
			}
			for s, kind := range map[sdktrace.ReadOnlySpan]trace.SpanKind{fe: trace.SpanKindServer, pub: trace.SpanKindProducer, con: trace.SpanKindConsumer, h: trace.SpanKindInternal} {
				if s.SpanKind() != kind {
					t.Errorf("span %q is %v, want %v", s.Name(), s.SpanKind(), kind)
				}
			}
			if fe.Parent().SpanID().String() != clientSpan || !fe.Parent().IsRemote() {
				t.Errorf("the frontend span's parent is %v, want the client's span %s", fe.Parent(), clientSpan)
			}
			wantChild(t, pub, fe)
			wantChild(t, con, pub)
			wantChild(t, h, con)
			wantChild(t, own, h)
			mcpAttrs := map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "7", "mcp.protocol.version": version,
			}
			if session != "" {
				mcpAttrs["mcp.session.id"] = session
			}
			wantAttrs(t, fe, mcpAttrs)
			wantAttrs(t, h, mcpAttrs)
			wantAttrs(t, fe, map[string]string{
				"network.transport": "tcp", "network.protocol.name": "http", "network.protocol.version": "1.1",
				"http.request.method": "POST", "http.response.status_code": "200", "url.path": "/mcp", "url.scheme": "http",
				"server.address": "127.0.0.1", "server.port": "", "client.address": "127.0.0.1", "user_agent.original": "",
			})
			if session == "" {
				if v, ok := attrOf(fe, "mcp.session.id"); ok {
					t.Errorf("a modern request's span has mcp.session.id %q", v)
				}
			}
			for _, s := range []sdktrace.ReadOnlySpan{fe, h} {
				if _, ok := attrOf(s, "error.type"); ok || s.Status().Code == codes.Error {
					t.Errorf("span %q of a successful call: error.type set or status %v", s.Name(), s.Status())
				}
			}
			wantAttrs(t, pub, map[string]string{"messaging.system": system, "messaging.destination.name": lookupSubject,
				"messaging.operation.type": "send", "messaging.operation.name": "publish", "messaging.message.body.size": ""})
			wantAttrs(t, con, map[string]string{"messaging.system": system, "messaging.destination.name": lookupSubject,
				"messaging.operation.type": "process", "messaging.consumer.group.name": bus.WorkerQueue})
			wantAttrs(t, own, map[string]string{"db.system.name": "postgresql"})
			// Never the message's contents, never the Authorization header.
			for _, s := range spans {
				for _, kv := range s.Attributes() {
					if strings.Contains(string(kv.Key), "authorization") || strings.Contains(kv.Value.Emit(), "Bearer") {
						t.Errorf("span %q carries %s", s.Name(), kv.Key)
					}
				}
			}
			if fe.Resource() == nil || fe.InstrumentationScope().Name != "github.com/mcpfleet/mcpfleet/pkg/frontend" {
				t.Errorf("the frontend span's scope is %q", fe.InstrumentationScope().Name)
			}
		})
	}
}

// TestTracingMetaParent checks that a request's _meta.traceparent is the
// parent of the frontend's span (the MCP convention), and that the
// traceparent header, when it differs, is linked.
func TestTracingMetaParent(t *testing.T) {
	tp, rec := recordingProvider(t)
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: tracedServer(t), TracerProvider: tp})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)
	params := map[string]any{"name": "lookup", "_meta": map[string]any{"traceparent": metaTP, "tracestate": "vendor=meta"}}
	if got := toolText(t, c.Post(testenv.Request(3, "tools/call", params), map[string]string{"Traceparent": clientTP})); got != metaTrace {
		t.Fatalf("the tool's context carries trace %s, want the _meta's %s", got, metaTrace)
	}
	tid, _ := trace.TraceIDFromHex(metaTrace)
	spans := spansOf(t, rec, tid, 5)
	var fe sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindServer {
			fe = s
		}
	}
	if fe == nil || fe.Parent().SpanID().String() != metaSpan {
		t.Fatalf("the frontend span's parent is not the _meta's span %s: %v", metaSpan, fe)
	}
	if l := fe.Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != clientTrace || l[0].SpanContext.SpanID().String() != clientSpan {
		t.Fatalf("the frontend span's links are %v, want the traceparent header's context", l)
	}
}

// TestTracingErrors checks error.type and the span status: a JSON-RPC
// error answered by the worker (-32602), a tool error (tool_error), and a
// request refused by the frontend before its body is read (406), whose
// span is made at its end.
func TestTracingErrors(t *testing.T) {
	tp, rec := recordingProvider(t)
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: tracedServer(t), TracerProvider: tp})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)

	find := func(t *testing.T, tid trace.TraceID, kind trace.SpanKind) sdktrace.ReadOnlySpan {
		t.Helper()
		var got sdktrace.ReadOnlySpan
		testutil.Poll(t, "a span of kind "+kind.String(), func() bool {
			for _, s := range rec.Ended() {
				if s.SpanContext().TraceID() == tid && s.SpanKind() == kind {
					got = s
				}
			}
			return got != nil
		})
		return got
	}
	tests := []struct {
		name, tool, traceID string
		args                any
		errType             string
	}{
		{"a JSON-RPC error", "refuse", "11111111111111111111111111111111", nil, "-32602"},
		{"a tool error", "broken", "22222222222222222222222222222222", nil, "tool_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"name": tc.tool}
			if tc.args != nil {
				params["arguments"] = tc.args
			}
			r := c.Post(testenv.Request(9, "tools/call", params), map[string]string{"Traceparent": "00-" + tc.traceID + "-1111111111111111-01"})
			if r.Status != 200 {
				t.Fatalf("tools/call %s: %s", tc.tool, r)
			}
			tid, _ := trace.TraceIDFromHex(tc.traceID)
			for _, kind := range []trace.SpanKind{trace.SpanKindServer, trace.SpanKindInternal} {
				s := find(t, tid, kind)
				wantAttrs(t, s, map[string]string{"error.type": tc.errType, "gen_ai.tool.name": tc.tool})
				if s.Status().Code != codes.Error || s.Status().Description == "" {
					t.Errorf("span %q (%v): status %v, want Error with a description", s.Name(), kind, s.Status())
				}
				if strings.Contains(s.Status().Description, "it broke") {
					t.Errorf("span %q's status carries the tool's message: %q", s.Name(), s.Status().Description)
				}
				if tc.errType != "tool_error" {
					wantAttrs(t, s, map[string]string{"rpc.response.status_code": tc.errType})
				}
			}
		})
	}
	t.Run("an unknown tool", func(t *testing.T) {
		const traceID = "55555555555555555555555555555555"
		r := c.Post(testenv.Request(10, "tools/call", map[string]any{"name": "made_up_name"}), map[string]string{"Traceparent": "00-" + traceID + "-1111111111111111-01"})
		if r.ErrorCode() != protocol.CodeInvalidParams {
			t.Fatalf("an unknown tool: %s", r)
		}
		tid, _ := trace.TraceIDFromHex(traceID)
		s := find(t, tid, trace.SpanKindServer)
		if s.Name() != "tools/call" {
			t.Errorf("span name %q: a made-up tool name must stay out of span names", s.Name())
		}
		wantAttrs(t, s, map[string]string{"gen_ai.tool.name": "made_up_name", "error.type": "-32602"})
	})
	t.Run("refused before the body", func(t *testing.T) {
		const traceID = "33333333333333333333333333333333"
		r := c.Do("POST", ip.URL, []byte(`{}`), map[string]string{"Accept": "application/json", "Content-Type": "application/json", "Traceparent": "00-" + traceID + "-1111111111111111-01"})
		if r.Status != 406 {
			t.Fatalf("POST with Accept: application/json only: %s, want 406", r)
		}
		tid, _ := trace.TraceIDFromHex(traceID)
		s := find(t, tid, trace.SpanKindServer)
		if s.Name() != "POST" {
			t.Errorf("span name %q, want POST", s.Name())
		}
		wantAttrs(t, s, map[string]string{"http.response.status_code": "406", "error.type": ""})
		if _, ok := attrOf(s, "mcp.method.name"); ok {
			t.Error("a request refused before its body has mcp.method.name")
		}
	})
}

// TestTracingHTTPMethods checks the span of an exchange without an MCP
// method, made at its end: a DELETE of a legacy session is named after the
// HTTP method, parented on the traceparent header, with the session id.
func TestTracingHTTPMethods(t *testing.T) {
	tp, rec := recordingProvider(t)
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: tracedServer(t), TracerProvider: tp})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)
	const traceID = "44444444444444444444444444444444"
	r := c.Do("DELETE", ip.URL, nil, map[string]string{"Mcp-Session-Id": c.SessionID, "Mcp-Protocol-Version": legacyVer, "Traceparent": "00-" + traceID + "-4444444444444444-01"})
	if r.Status != 200 && r.Status != 204 {
		t.Fatalf("DELETE: %s", r)
	}
	tid, _ := trace.TraceIDFromHex(traceID)
	spans := spansOf(t, rec, tid, 1)
	s := spans["server DELETE"]
	if s == nil {
		t.Fatalf("spans %v, want one server span DELETE", spans)
	}
	if s.Parent().SpanID().String() != "4444444444444444" {
		t.Errorf("parent %v", s.Parent())
	}
	wantAttrs(t, s, map[string]string{"http.request.method": "DELETE", "mcp.session.id": c.SessionID, "http.response.status_code": ""})
	if _, ok := attrOf(s, "mcp.method.name"); ok {
		t.Error("a DELETE has mcp.method.name")
	}
}

// TestTracingOff checks that with the no-op provider (tracing off, as the
// binaries run without OTEL_* variables) no span is made and the handler
// still sees the caller's trace context, from the header or the _meta.
func TestTracingOff(t *testing.T) {
	_, rec := recordingProvider(t) // the global one: nothing may reach it
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: tracedServer(t), TracerProvider: noop.NewTracerProvider()})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)
	if got := toolText(t, c.Post(testenv.Request(1, "tools/call", map[string]any{"name": "typed", "arguments": map[string]any{"n": 1}}), map[string]string{"Traceparent": clientTP})); got != "ok" {
		t.Fatalf("typed: %q", got)
	}
	mc := testenv.NewModernClient(t, ip.URL)
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		meta map[string]any
		want string
	}{
		{"header", map[string]string{"Traceparent": clientTP}, nil, clientTrace},
		{"_meta", map[string]string{"Traceparent": clientTP}, map[string]any{"traceparent": metaTP}, metaTrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"name": "lookup"}
			if tc.meta != nil {
				params["_meta"] = tc.meta
			}
			if got := toolText(t, c.Post(testenv.Request(2, "tools/call", params), tc.hdr)); got != tc.want {
				t.Errorf("legacy: the handler saw trace %s, want %s", got, tc.want)
			}
			if got := toolText(t, modern(t, mc, 2, "tools/call", params, nil, tc.hdr)); got != tc.want {
				t.Errorf("modern: the handler saw trace %s, want %s", got, tc.want)
			}
		})
	}
	// Only the tool's own span (made with the global provider) exists.
	for _, s := range rec.Ended() {
		if s.Name() != "db.query" {
			t.Errorf("tracing off made span %q (%v)", s.Name(), s.SpanKind())
		}
	}
}
