package e2e

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkTracing measures what tracing costs one legacy tools/call echo
// through the in-process all-in-one (the frontend's handler called
// directly, the store, the embedded NATS both ways, the worker), the
// client sending a sampled traceparent: "off" with the no-op provider
// (what the binaries run without OTEL_* variables), "on" with the SDK
// sampling every span (parentbased_always_on) into a batch span processor
// whose exporter discards, and "sampled-out" with the SDK and the
// always_off sampler (an exporter configured, OTEL_TRACES_SAMPLER
// always_off). allocs/op is the figure to compare.
func BenchmarkTracing(b *testing.B) {
	sdk := func(s sdktrace.Sampler) trace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	for _, tc := range []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"off", func() trace.TracerProvider { return noop.NewTracerProvider() }},
		{"on", func() trace.TracerProvider { return sdk(sdktrace.ParentBased(sdktrace.AlwaysSample())) }},
		{"sampled-out", func() trace.TracerProvider { return sdk(sdktrace.NeverSample()) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ip := testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true, TracerProvider: tc.tp()})
			post, sid := benchSession(b, ip)
			hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25",
				"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
			const body = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"}}}`
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w := post(strings.Replace(body, "%d", strconv.Itoa(i+2), 1), hdr)
				if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte("hello from the benchmark")) {
					b.Fatalf("HTTP %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
