package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ended waits until rec holds a span of trace tid with kind and name and
// returns it.
func ended(t *testing.T, rec *tracetest.SpanRecorder, tid trace.TraceID, kind trace.SpanKind, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var got sdktrace.ReadOnlySpan
	testutil.Poll(t, kind.String()+" span "+name, func() bool {
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == tid && s.SpanKind() == kind && s.Name() == name {
				got = s
			}
		}
		return got != nil
	})
	return got
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// TestSpans checks the worker's spans of a request: the CONSUMER span of
// its bus message, parented on the envelope's trace context, and the
// handler's INTERNAL span inside it, whose context the handler gets; a
// request that times out and one refused at once (the worker busy) carry
// error.type.
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newServer()
	handlerSpan := make(chan trace.SpanContext, 4)
	addTool(t, s, "quick", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		handlerSpan <- trace.SpanContextFromContext(ctx)
		return mcp.TextResult("quick"), nil
	})
	started := make(chan struct{}, 1)
	addTool(t, s, "wait", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	f := newFixture(t, s, &worker.Options{MaxInFlight: 1, HeartbeatInterval: -1, TracerProvider: tp})

	const traceID, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tid, _ := trace.TraceIDFromHex(traceID)
	hdr := legacy("s1")
	hdr.Traceparent = "00-" + traceID + "-" + parentSpan + "-01"
	if m := f.fe.callTool(t, hdr, protocol.Int64ID(1), "quick", "").response(t); m.Error != nil {
		t.Fatalf("quick: %+v", m.Error)
	}
	subject := f.subj.Request(protocol.MethodToolsCall, "quick")
	con := ended(t, rec, tid, trace.SpanKindConsumer, "process "+subject)
	h := ended(t, rec, tid, trace.SpanKindInternal, "tools/call quick")
	if con.Parent().SpanID().String() != parentSpan || !con.Parent().IsRemote() {
		t.Errorf("the consumer span's parent is %v, want the envelope's %s", con.Parent(), parentSpan)
	}
	if h.Parent().SpanID() != con.SpanContext().SpanID() {
		t.Errorf("the handler span's parent is %s, want the consumer span", h.Parent().SpanID())
	}
	if got := recv(t, handlerSpan, "the handler's span context"); got.SpanID() != h.SpanContext().SpanID() {
		t.Errorf("the handler's context carries span %s, want the handler span %s", got.SpanID(), h.SpanContext().SpanID())
	}
	for k, v := range map[string]string{"messaging.system": "nats", "messaging.destination.name": subject, "messaging.operation.type": "process",
		"messaging.consumer.group.name": "", "messaging.message.body.size": ""} {
		if got, ok := spanAttrs(con)[k]; !ok || (v != "" && got != v) {
			t.Errorf("consumer span: %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "quick", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "1", "mcp.session.id": "s1", "mcp.protocol.version": protocol.Version20251125} {
		if got := spanAttrs(h)[k]; got != v {
			t.Errorf("handler span: %s = %q, want %q", k, got, v)
		}
	}
	if _, ok := spanAttrs(h)["error.type"]; ok {
		t.Error("the handler span of a successful call has error.type")
	}

	// A request that times out holds the one slot; another is refused at
	// once (busy): its consumer span alone, with the error code.
	const slowTrace = "11111111111111111111111111111111"
	slowTID, _ := trace.TraceIDFromHex(slowTrace)
	slowHdr := legacy("s1")
	slowHdr.Traceparent = "00-" + slowTrace + "-1111111111111111-01"
	slowHdr.DeadlineMs = time.Now().Add(2 * time.Second).UnixMilli()
	slow := f.fe.callTool(t, slowHdr, protocol.Int64ID(2), "wait", "")
	recv(t, started, "the wait handler's start")
	const busyTrace = "22222222222222222222222222222222"
	busyTID, _ := trace.TraceIDFromHex(busyTrace)
	busyHdr := legacy("s1")
	busyHdr.Traceparent = "00-" + busyTrace + "-2222222222222222-01"
	wantBusy(t, f.fe.callTool(t, busyHdr, protocol.Int64ID(3), "quick", "").response(t))
	busy := ended(t, rec, busyTID, trace.SpanKindConsumer, "process "+subject)
	if got := spanAttrs(busy)["error.type"]; got != "-32603" {
		t.Errorf("the busy refusal's consumer span: error.type %q, want -32603", got)
	}
	if m := slow.response(t); m.Error == nil {
		t.Fatalf("wait: %+v, want the timeout error", m)
	}
	slowSubject := f.subj.Request(protocol.MethodToolsCall, "wait")
	for _, s := range []sdktrace.ReadOnlySpan{ended(t, rec, slowTID, trace.SpanKindConsumer, "process "+slowSubject), ended(t, rec, slowTID, trace.SpanKindInternal, "tools/call wait")} {
		if got := spanAttrs(s)["error.type"]; got != "timeout" {
			t.Errorf("span %q of a timed-out request: error.type %q, want timeout", s.Name(), got)
		}
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == busyTID && s.SpanKind() == trace.SpanKindInternal {
			t.Errorf("a refused request ran a handler span %q", s.Name())
		}
	}
}

// TestHandlerSpanErrorTypes checks the handler span's error.type and
// rpc.response.status_code, worked out from the handler's values: a
// JSON-RPC error carries its code, a tool's error result is tool_error,
// and a result whose structured content merely holds an isError member is
// a success.
func TestHandlerSpanErrorTypes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newServer()
	addTool(t, s, "refuses", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return nil, protocol.NewError(protocol.CodeInvalidParams, "no")
	})
	addTool(t, s, "fails", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.ToolError("it broke"), nil
	})
	addTool(t, s, "lookalike", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return &protocol.CallToolResult{StructuredContent: map[string]any{"isError": true}}, nil
	})
	f := newFixture(t, s, &worker.Options{HeartbeatInterval: -1, TracerProvider: tp})
	tests := []struct {
		tool, trace, errType, status string
	}{
		{"refuses", "33333333333333333333333333333333", "-32602", "-32602"},
		{"fails", "44444444444444444444444444444444", "tool_error", ""},
		{"lookalike", "55555555555555555555555555555555", "", ""},
	}
	for i, tc := range tests {
		tid, _ := trace.TraceIDFromHex(tc.trace)
		hdr := legacy("s1")
		hdr.Traceparent = "00-" + tc.trace + "-00f067aa0ba902b7-01"
		f.fe.callTool(t, hdr, protocol.Int64ID(int64(i+1)), tc.tool, "").response(t)
		attrs := spanAttrs(ended(t, rec, tid, trace.SpanKindInternal, "tools/call "+tc.tool))
		if got := attrs["error.type"]; got != tc.errType {
			t.Errorf("%s: error.type %q, want %q", tc.tool, got, tc.errType)
		}
		if got := attrs["rpc.response.status_code"]; got != tc.status {
			t.Errorf("%s: rpc.response.status_code %q, want %q", tc.tool, got, tc.status)
		}
	}
}

// TestSpansOff checks that with the no-op provider the worker makes no
// span and the handler's context carries the envelope's trace context.
func TestSpansOff(t *testing.T) {
	s := newServer()
	got := make(chan trace.SpanContext, 1)
	addTool(t, s, "quick", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		got <- trace.SpanContextFromContext(ctx)
		return mcp.TextResult("quick"), nil
	})
	f := newFixture(t, s, &worker.Options{HeartbeatInterval: -1, TracerProvider: noop.NewTracerProvider()})
	hdr := legacy("s1")
	hdr.Traceparent, hdr.Tracestate = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "k=v"
	if m := f.fe.callTool(t, hdr, protocol.Int64ID(1), "quick", "").response(t); m.Error != nil {
		t.Fatalf("quick: %+v", m.Error)
	}
	sc := recv(t, got, "the handler's span context")
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() || sc.TraceState().Get("k") != "v" {
		t.Fatalf("the handler's context carries %v, want the envelope's trace context", sc)
	}
}
