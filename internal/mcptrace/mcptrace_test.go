package mcptrace

import (
	"context"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestSpanContext checks the traceparent reading against the SDK's own
// W3C propagator, valid and malformed values alike.
func TestSpanContext(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cases := []string{
		"00-" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-00",
		"00-" + tid + "-" + sid + "-03",      // only the sampled flag is kept
		"01-" + tid + "-" + sid + "-01-more", // a later version may have more fields
		"01-" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid + "-01-more", // version 00 may not
		"01-" + tid + "-" + sid + "-01x",
		"ff-" + tid + "-" + sid + "-01",
		"00-00000000000000000000000000000000-" + sid + "-01",
		"00-" + tid + "-0000000000000000-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-" + sid + "-01", // upper case
		"00-" + tid + "-" + sid + "-0g",
		"00_" + tid + "-" + sid + "-01",
		"00-" + tid + "-" + sid,
		"",
		"garbage",
	}
	for _, tp := range cases {
		for _, ts := range []string{"", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "not a tracestate,,=="} {
			c := propagation.MapCarrier{"traceparent": tp}
			if ts != "" {
				c["tracestate"] = ts
			}
			want := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
			if got := SpanContext(tp, ts); !got.Equal(want) {
				t.Errorf("SpanContext(%q, %q) = %v, the propagator reads %v", tp, ts, got, want)
			}
		}
	}
}

// TestFormat checks that Format writes what the propagator writes, and
// that SpanContext reads it back.
func TestFormat(t *testing.T) {
	ts, _ := trace.ParseTraceState("a=1,b=2")
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1, 2, 3}, SpanID: [8]byte{4, 5}, TraceFlags: flags, TraceState: ts})
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
		tp, gotTS := Format(sc)
		if tp != c["traceparent"] || gotTS != c["tracestate"] {
			t.Fatalf("Format = %q %q, the propagator writes %q %q", tp, gotTS, c["traceparent"], c["tracestate"])
		}
		if back := SpanContext(tp, gotTS); !back.Equal(sc.WithRemote(true)) {
			t.Fatalf("read back %v, want %v", back, sc)
		}
	}
	if tp, ts := Format(trace.SpanContext{}); tp != "" || ts != "" {
		t.Fatalf("Format of an invalid span context = %q %q", tp, ts)
	}
}

// TestCallerSpan checks the tracing-off span: the caller's context, not
// recording, its strings kept verbatim; nothing for an invalid one. No
// allocation but the span itself.
func TestCallerSpan(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s := NewCallerSpan(tp, "k=v")
	if !s.SpanContext().IsValid() || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !s.SpanContext().IsRemote() {
		t.Fatalf("span context %v", s.SpanContext())
	}
	if s.IsRecording() || s.Traceparent != tp || s.Tracestate != "k=v" {
		t.Fatalf("recording %v, strings %q %q", s.IsRecording(), s.Traceparent, s.Tracestate)
	}
	s.End() // a no-op
	if bad := NewCallerSpan("nope", "k=v"); bad.SpanContext().IsValid() || bad.Traceparent != "" {
		t.Fatalf("an invalid traceparent gave %v %q", bad.SpanContext(), bad.Traceparent)
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewCallerSpan(tp, "k=v") }); n > 1 {
		t.Fatalf("NewCallerSpan allocates %v times, want at most 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = SpanContext(tp, "") }); n != 0 {
		t.Fatalf("SpanContext without tracestate allocates %v times", n)
	}
}

func TestNameAndTarget(t *testing.T) {
	for _, tc := range []struct{ method, tool, prompt, want string }{
		{"tools/call", "echo", "", "tools/call echo"},
		{"prompts/get", "", "greet", "prompts/get greet"},
		{"resources/read", "", "", "resources/read"},
	} {
		if got := Name(tc.method, tc.tool, tc.prompt); got != tc.want {
			t.Errorf("Name(%q, %q, %q) = %q, want %q", tc.method, tc.tool, tc.prompt, got, tc.want)
		}
	}
	attrs := Target(nil, "tools/call", "echo", "", "", protocol.StringID("a-1"))
	got := map[string]string{}
	for _, kv := range attrs {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "a-1"}
	if len(got) != len(want) {
		t.Fatalf("Target = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if a := Target(nil, "resources/read", "", "", "file:///x", protocol.Int64ID(3)); len(a) != 3 {
		t.Errorf("resources/read's attributes %v", a)
	}
	if a := Target(nil, "notifications/initialized", "", "", "", protocol.ID{}); len(a) != 1 {
		t.Errorf("a notification's attributes %v (no request id)", a)
	}
}

func TestOff(t *testing.T) {
	if !Off(noop.NewTracerProvider()) {
		t.Error("the no-op provider is not off")
	}
	if Off(trace.NewNoopTracerProvider()) { //nolint:staticcheck // the deprecated one is not the noop package's
		t.Error("trace.NewNoopTracerProvider is counted as off")
	}
}
