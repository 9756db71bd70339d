package stream

import (
	"context"
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/internal/mcptrace"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var producerKind = trace.WithSpanKind(trace.SpanKindProducer)

// traceHeader gives a request's envelope its trace context. With a tracer
// (Options.Tracer) it starts the PRODUCER span of the publish on subject,
// a child of the exchange's span (the request's httpx.Record), and the
// envelope carries that span; without one the envelope carries the
// exchange's span context, which is the caller's (traceparent header or
// _meta) when tracing is off. A request without a record carries its
// traceparent and tracestate headers. The span returned (nil when none was
// started) is ended by endPublish.
func (ex *exchange) traceHeader(r *http.Request, hdr *bus.RequestHeader, subject string) trace.Span {
	rec := httpx.RecordFrom(r.Context())
	if rec == nil || rec.Span == nil {
		hdr.Traceparent, hdr.Tracestate = r.Header.Get("Traceparent"), r.Header.Get("Tracestate")
		return nil
	}
	parent := rec.Span
	if t := ex.s.opts.Tracer; t != nil && parent.IsRecording() {
		_, span := t.Start(trace.ContextWithSpan(context.Background(), parent), "publish "+subject, producerKind)
		if span.IsRecording() {
			hdr.Traceparent, hdr.Tracestate = mcptrace.Format(span.SpanContext())
			return span
		}
		span.End()
	}
	if cs, ok := parent.(*mcptrace.CallerSpan); ok {
		hdr.Traceparent, hdr.Tracestate = cs.Traceparent, cs.Tracestate // tracing off: passed on as they came
		return nil
	}
	hdr.Traceparent, hdr.Tracestate = mcptrace.Format(parent.SpanContext())
	return nil
}

// endPublish ends the PRODUCER span of a publish of size bytes on
// subject that failed with err (nil: published).
func (ex *exchange) endPublish(span trace.Span, subject string, size int, err error) {
	if span == nil {
		return
	}
	attrs := []attribute.KeyValue{
		mcptrace.MessagingSystem.String(ex.s.system),
		mcptrace.MessagingDestination.String(subject),
		mcptrace.MessagingOperationType.String("send"),
		mcptrace.MessagingOperationName.String("publish"),
		mcptrace.MessagingBodySize.Int(size),
		mcptrace.MessagingClientID.String(ex.s.id),
	}
	if err != nil {
		attrs = append(attrs, mcptrace.ErrorType.String("unavailable"))
		span.SetStatus(codes.Error, "publishing the request failed")
	}
	span.SetAttributes(attrs...)
	span.End()
}
