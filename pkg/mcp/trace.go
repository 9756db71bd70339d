package mcp

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// withTraceContext returns ctx carrying the request's W3C trace context
// (traceparent/tracestate), if any, as a remote OpenTelemetry span context.
func withTraceContext(ctx context.Context, req *Request) context.Context {
	if req.Traceparent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": req.Traceparent}
	if req.Tracestate != "" {
		carrier["tracestate"] = req.Tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
