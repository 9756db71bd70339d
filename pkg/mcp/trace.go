package mcp

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// withTraceContext returns ctx carrying the request's W3C trace context
// (traceparent/tracestate: its _meta's, else the transport's), if any, as
// a remote OpenTelemetry span context: the handler's parent. A span
// context already in ctx wins: the worker (or a transport, or an
// embedder) put its own span there, itself a descendant of the caller's
// context; the request's then serves only callers that make no span
// (stdio with tracing off, embedders calling Handle without one).
func withTraceContext(ctx context.Context, req *Request) context.Context {
	if req.in.Traceparent == "" || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": req.in.Traceparent}
	if req.in.Tracestate != "" {
		carrier["tracestate"] = req.in.Tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
