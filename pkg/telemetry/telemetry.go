// Package telemetry sets up OpenTelemetry tracing for a process from the
// standard OTEL_* environment variables, and from nothing else.
//
// Tracing is on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set and not empty, unless
// OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none. Spans are
// then exported over OTLP, gRPC or HTTP/protobuf as
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (else OTEL_EXPORTER_OTLP_PROTOCOL)
// says, http/protobuf by default; the exporters read the endpoint,
// headers, TLS, compression and timeout variables themselves, the batch
// span processor the OTEL_BSP_* ones, the SDK OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG (parentbased_always_on by default), the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// Tracing off, the tracer provider is the no-op one: nothing is recorded
// or exported, and the caller's trace context (a traceparent header or
// _meta) still reaches the handlers.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The protocols of OTLP trace export.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ErrInvalidEnv wraps the errors of Setup about an OTEL_* variable it
// cannot follow; the message names the variable.
var ErrInvalidEnv = errors.New("telemetry: invalid OpenTelemetry environment")

// Options complete what the environment says. Every zero value means the
// default on its line.
type Options struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME (or
	// service.name in OTEL_RESOURCE_ATTRIBUTES) sets it.
	// default: "mcpfleet"
	ServiceName string
	// InstanceID is service.instance.id unless OTEL_RESOURCE_ATTRIBUTES
	// sets it: the process's id on the bus.
	// default: none
	InstanceID string
	// Version is service.version unless OTEL_RESOURCE_ATTRIBUTES sets it.
	// default: the main module's version in the build information, none
	// when it has none ("(devel)")
	Version string
	// Logger receives the SDK's errors (a failed export, a sampler
	// variable it ignores).
	// default: slog.Default()
	Logger *slog.Logger
}

// Tracing is a process's tracing, set up by Setup.
type Tracing struct {
	sdk      *sdktrace.TracerProvider // nil when off
	protocol string
}

// Setup reads the environment and returns the process's tracing. It sets
// the global text map propagator (W3C trace context and baggage) in any
// case and, tracing on, the global tracer provider (what handlers reach
// with otel.Tracer) and the global error handler (to Options.Logger).
// An OTEL_* value it cannot follow (a protocol other than grpc or
// http/protobuf, an exporter other than otlp or none) is an error
// wrapping ErrInvalidEnv that names the variable; so is an exporter that
// cannot be built. Setup does not connect: the exporters dial lazily.
func Setup(ctx context.Context, opts Options) (*Tracing, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	on, proto, err := fromEnv()
	if err != nil || !on {
		return &Tracing{}, err
	}
	var exp sdktrace.SpanExporter
	switch proto {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP %s trace exporter: %v", ErrInvalidEnv, proto, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	res, err := newResource(ctx, opts)
	if err != nil {
		// A detector failed or OTEL_RESOURCE_ATTRIBUTES is malformed: the
		// rest of the resource is still the process's.
		log.Warn("opentelemetry: describing the process", "err", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
	// The sampler is the SDK's: it reads OTEL_TRACES_SAMPLER(_ARG) itself.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return &Tracing{sdk: tp, protocol: proto}, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// Protocol is the OTLP protocol spans are exported with ("" when off).
func (t *Tracing) Protocol() string {
	if t == nil {
		return ""
	}
	return t.protocol
}

// TracerProvider is the provider to make spans with: the SDK's when on,
// the no-op one (noop.NewTracerProvider) when off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return noop.NewTracerProvider()
	}
	return t.sdk
}

// Shutdown exports the spans still queued and stops the exporter, within
// ctx. Call it once, at the end of the process's drain; spans ended later
// are dropped. A no-op when off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// fromEnv reads whether tracing is on and with which protocol.
func fromEnv() (on bool, proto string, err error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, "", nil
	}
	for _, e := range strings.Split(os.Getenv("OTEL_TRACES_EXPORTER"), ",") {
		switch e = strings.ToLower(strings.TrimSpace(e)); e {
		case "", "otlp":
		case "none":
			return false, "", nil
		default:
			return false, "", fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: only otlp (or none) is supported", ErrInvalidEnv, e)
		}
	}
	if strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) == "" && strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) == "" {
		return false, "", nil
	}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := strings.TrimSpace(os.Getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(os.Getenv(name))
	}
	switch p {
	case "":
		return true, ProtocolHTTP, nil
	case ProtocolGRPC, ProtocolHTTP:
		return true, p, nil
	}
	return false, "", fmt.Errorf("%w: %s=%q: the supported protocols are grpc and http/protobuf", ErrInvalidEnv, name, p)
}

// newResource describes the process: the defaults of opts, the telemetry
// SDK, the process and host basics, then what OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES say, which win. The command line is left out:
// its flags may carry secrets. With an error it returns what it could
// make (never nil).
func newResource(ctx context.Context, opts Options) (*resource.Resource, error) {
	name := opts.ServiceName
	if name == "" {
		name = "mcpfleet"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if v := opts.Version; v != "" {
		attrs = append(attrs, attribute.String("service.version", v))
	} else if v := BuildVersion(); v != "" {
		attrs = append(attrs, attribute.String("service.version", v))
	}
	if opts.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", opts.InstanceID))
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attrs...),
		resource.WithTelemetrySDK(),
		resource.WithProcessPID(), resource.WithProcessExecutableName(),
		resource.WithProcessRuntimeName(), resource.WithProcessRuntimeVersion(),
		resource.WithHost(), resource.WithOSType(),
		resource.WithFromEnv(),
	)
	if res == nil {
		res = resource.NewSchemaless(attrs...)
	}
	return res, err
}

// BuildVersion is the main module's version from the build information,
// "" when it has none (a build of a checkout says "(devel)").
func BuildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}
