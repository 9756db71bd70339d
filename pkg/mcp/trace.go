package mcp

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// withTraceContext returns ctx carrying the request's W3C trace context
// (traceparent/tracestate), if any, as a remote OpenTelemetry span context.
func withTraceContext(ctx context.Context, req *Request) context.Context {
	if req.in.Traceparent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": req.in.Traceparent}
	if req.in.Tracestate != "" {
		carrier["tracestate"] = req.in.Tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
