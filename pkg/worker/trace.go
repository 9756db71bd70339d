package worker

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/mcptrace"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the worker's tracer.
const instrumentation = "github.com/mcpfleet/mcpfleet/pkg/worker"

// spans makes a request's spans on the worker: the CONSUMER span of the
// bus message, from its arrival until its response is published, and
// inside it the INTERNAL span of the handler, whose context the handler
// gets (its own spans are children of it).
type spans struct {
	tracer trace.Tracer
	// off: the no-op provider; no span is made and the envelope's trace
	// context reaches the handler through mcp.RequestInit.Traceparent.
	off bool
}

func newSpans(tp trace.TracerProvider) spans {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return spans{tracer: tp.Tracer(instrumentation), off: mcptrace.Off(tp)}
}

var (
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// traceContext returns the context a request's handling starts from: with
// tracing on, one carrying the CONSUMER span of m, parented on the
// envelope's trace context (ended by endConsume); context.Background()
// when off.
func (w *Worker) traceContext(m *nats.Msg, hdr *bus.RequestHeader) context.Context {
	ctx := context.Background()
	if w.spans.off {
		return ctx
	}
	if sc := mcptrace.SpanContext(hdr.Traceparent, hdr.Tracestate); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := w.spans.tracer.Start(ctx, "process "+m.Subject, consumerKind)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			mcptrace.MessagingSystem.String(w.busSystem),
			mcptrace.MessagingDestination.String(m.Subject),
			mcptrace.MessagingOperationType.String("process"),
			mcptrace.MessagingOperationName.String("process"),
			mcptrace.MessagingBodySize.Int(len(m.Data)),
			mcptrace.MessagingClientID.String(w.opts.ID),
		}
		// Every request subscription is a member of bus.WorkerQueue
		// (catalog.go); a Local message has no nats.go subscription.
		queue := bus.WorkerQueue
		if m.Sub != nil && m.Sub.Queue != "" {
			queue = m.Sub.Queue
		}
		attrs = append(attrs, mcptrace.MessagingConsumerGroup.String(queue))
		if host, port, err := net.SplitHostPort(w.nc.ConnectedAddr()); err == nil {
			attrs = append(attrs, mcptrace.ServerAddress.String(host))
			if p, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, mcptrace.ServerPort.Int(p))
			}
		}
		span.SetAttributes(attrs...)
	}
	return ctx
}

// endConsume ends the CONSUMER span in ctx (a request's f.ctx), once the
// request's answer is published: outcome is the worker's (ok, error,
// timeout, cancelled, shutdown); a refusal before the handler ran passes
// its error.
func endConsume(ctx context.Context, outcome string, refused *protocol.Error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	errType := ""
	switch {
	case refused != nil:
		errType = strconv.FormatInt(refused.Code, 10)
	case outcome == "timeout" || outcome == "cancelled" || outcome == "shutdown":
		errType = outcome
	}
	if errType != "" {
		span.SetAttributes(mcptrace.ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// answerTraced runs answer inside the handler's INTERNAL span (a child of
// the CONSUMER span in ctx): the handler's context carries it. The span
// is named and described once the handler returned, from what the request
// decoded (its tool, prompt or resource).
func (w *Worker) answerTraced(ctx context.Context, req *mcp.Request, msg *protocol.Message) answer {
	if w.spans.off || !trace.SpanFromContext(ctx).IsRecording() {
		return w.answer(ctx, req, msg)
	}
	hctx, span := w.spans.tracer.Start(ctx, msg.Method, internalKind)
	a := w.answer(hctx, req, msg)
	if !span.IsRecording() {
		span.End()
		return a
	}
	method := msg.Method
	var tool, prompt, uri string
	switch name := req.Name(); method {
	case protocol.MethodToolsCall:
		tool = name
	case protocol.MethodPromptsGet:
		prompt = name
	default:
		uri = name
	}
	// A name the worker does not serve (made up by a client) stays out of
	// the span name, which is as few as the catalog's.
	nameTool, namePrompt := tool, prompt
	if cat := w.servedCatalog(); (tool != "" && !cat.HasTool(tool)) || (prompt != "" && !cat.HasPrompt(prompt)) {
		nameTool, namePrompt = "", ""
	}
	span.SetName(mcptrace.Name(method, nameTool, namePrompt))
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = mcptrace.Target(attrs, method, tool, prompt, uri, msg.ID)
	if s := req.SessionID(); s != "" {
		attrs = append(attrs, mcptrace.SessionID.String(s))
	}
	if v := req.ProtocolVersion(); v != "" {
		attrs = append(attrs, mcptrace.ProtocolVersion.String(v))
	}
	errType := a.errType
	if a.outcome == "error" {
		attrs = append(attrs, mcptrace.RPCStatusCode.String(errType))
	}
	if ctx.Err() != nil {
		// The request ended before its handler returned: it was answered
		// (or ended) by expire, whatever the handler then returned.
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errShutdown):
			errType = "shutdown"
		case errors.Is(cause, context.DeadlineExceeded):
			errType = "timeout"
		default:
			errType = "cancelled"
		}
	}
	if errType != "" {
		attrs = append(attrs, mcptrace.ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.SetAttributes(attrs...)
	span.End()
	return a
}
