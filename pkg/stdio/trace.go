package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/mcptrace"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the stdio transport's tracer.
const instrumentation = "github.com/mcpfleet/mcpfleet/pkg/stdio"

// newTracer is the tracer of Options.TracerProvider; nil when it is the
// no-op provider (no span is made: the handler's context gets the
// request's _meta trace context from mcp.Server.Handle).
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mcptrace.Off(tp) {
		return nil
	}
	return tp.Tracer(instrumentation)
}

var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// startSpan starts the SERVER span of a request, parented on its
// _meta.traceparent; ctx (the handler's) carries it. The span is nil when
// none was started.
func (s *session) startSpan(ctx context.Context, msg *protocol.Message) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	if bytes.Contains(msg.Params, []byte(`"traceparent"`)) {
		var p struct {
			Meta struct {
				Traceparent string `json:"traceparent"`
				Tracestate  string `json:"tracestate"`
			} `json:"_meta"`
		}
		if json.Unmarshal(msg.Params, &p) == nil {
			if sc := mcptrace.SpanContext(p.Meta.Traceparent, p.Meta.Tracestate); sc.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
		}
	}
	return s.tracer.Start(ctx, msg.Method, serverKind)
}

// endSpan ends a request's span with what the request decoded and its
// answer: e is the error answered (nil for a result; res the result).
func endSpan(span trace.Span, req *mcp.Request, msg *protocol.Message, res protocol.Result, e *protocol.Error, timedOut bool) {
	if span == nil {
		return
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	var tool, prompt, uri string
	switch name := req.Name(); msg.Method {
	case protocol.MethodToolsCall:
		tool = name
	case protocol.MethodPromptsGet:
		prompt = name
	default:
		uri = name
	}
	nameTool, namePrompt := tool, prompt
	if srv := req.Server(); srv == nil || (tool != "" && !srv.Catalog().HasTool(tool)) || (prompt != "" && !srv.Catalog().HasPrompt(prompt)) {
		nameTool, namePrompt = "", "" // a made-up name stays out of the span name
	}
	span.SetName(mcptrace.Name(msg.Method, nameTool, namePrompt))
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = mcptrace.Target(attrs, msg.Method, tool, prompt, uri, msg.ID)
	attrs = append(attrs, mcptrace.NetworkTransport.String("pipe"))
	if v := req.SessionID(); v != "" && req.Era() == protocol.EraLegacy {
		attrs = append(attrs, mcptrace.SessionID.String(v))
	}
	if v := req.ProtocolVersion(); v != "" {
		attrs = append(attrs, mcptrace.ProtocolVersion.String(v))
	}
	errType := ""
	switch {
	case timedOut:
		errType = "timeout"
	case e != nil:
		errType = strconv.FormatInt(e.Code, 10)
	case res != nil:
		if r, ok := res.(*protocol.CallToolResult); ok && r.IsError {
			errType = "tool_error"
		}
	}
	if e != nil {
		attrs = append(attrs, mcptrace.RPCStatusCode.String(strconv.FormatInt(e.Code, 10)))
	}
	if errType != "" {
		attrs = append(attrs, mcptrace.ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.SetAttributes(attrs...)
	span.End()
}
