package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// otelVars are every variable the tests set, cleared first so that the
// environment the tests run in does not leak into them.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
}

func clearEnv(t *testing.T, set map[string]string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for k, v := range set {
		t.Setenv(k, v)
	}
}

var quiet = slog.New(slog.DiscardHandler)

// setup runs Setup with env and shuts the tracing down at the end of the
// test; it restores the global tracer provider.
func setup(t *testing.T, env map[string]string, opts Options) (*Tracing, error) {
	t.Helper()
	clearEnv(t, env)
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	tr, err := Setup(context.Background(), opts)
	if tr != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = tr.Shutdown(ctx)
		})
	}
	return tr, err
}

// TestOnOff checks when tracing is on and with which protocol.
func TestOnOff(t *testing.T) {
	const ep = "http://127.0.0.1:1"
	tests := []struct {
		name  string
		env   map[string]string
		on    bool
		proto string
	}{
		{"nothing set", nil, false, ""},
		{"an empty endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, false, ""},
		{"the endpoint: http/protobuf by default", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}, true, ProtocolHTTP},
		{"the traces endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep + "/v1/traces"}, true, ProtocolHTTP},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ProtocolGRPC},
		{"the traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ProtocolHTTP},
		{"OTEL_SDK_DISABLED", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "TRUE"}, false, ""},
		{"OTEL_SDK_DISABLED=false", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "false"}, true, ProtocolHTTP},
		{"OTEL_TRACES_EXPORTER=none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"OTEL_TRACES_EXPORTER=otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "otlp"}, true, ProtocolHTTP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := setup(t, tc.env, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Enabled() != tc.on || tr.Protocol() != tc.proto {
				t.Fatalf("on %v protocol %q, want %v %q", tr.Enabled(), tr.Protocol(), tc.on, tc.proto)
			}
			_, isNoop := tr.TracerProvider().(noop.TracerProvider)
			if isNoop == tc.on {
				t.Fatalf("TracerProvider is %T with tracing on=%v", tr.TracerProvider(), tc.on)
			}
			if tc.on && otel.GetTracerProvider() != tr.TracerProvider() {
				t.Fatal("tracing on did not set the global tracer provider")
			}
			// The propagator is set in any case.
			if f := otel.GetTextMapPropagator().Fields(); !contains(f, "traceparent") || !contains(f, "baggage") {
				t.Fatalf("global propagator fields %v", f)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestInvalidEnv checks that a value Setup cannot follow is an error
// naming its variable.
func TestInvalidEnv(t *testing.T) {
	const ep = "http://127.0.0.1:1"
	tests := []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := setup(t, tc.env, Options{})
			if !errors.Is(err, ErrInvalidEnv) || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("error %v, want one wrapping ErrInvalidEnv naming %s", err, tc.name)
			}
		})
	}
}

// TestResource checks the resource's defaults and that OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES win over them.
func TestResource(t *testing.T) {
	get := func(t *testing.T, opts Options) map[string]string {
		t.Helper()
		res, err := newResource(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range res.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	t.Run("defaults", func(t *testing.T) {
		clearEnv(t, nil)
		m := get(t, Options{ServiceName: "mcpfleet-worker", InstanceID: "w1", Version: "v1.2.3"})
		for k, want := range map[string]string{
			"service.name": "mcpfleet-worker", "service.instance.id": "w1", "service.version": "v1.2.3",
			"telemetry.sdk.language": "go", "process.runtime.name": "go",
		} {
			if m[k] != want {
				t.Errorf("%s = %q, want %q", k, m[k], want)
			}
		}
		for _, k := range []string{"process.pid", "host.name", "os.type"} {
			if m[k] == "" {
				t.Errorf("%s is missing", k)
			}
		}
		if _, ok := m["process.command_args"]; ok {
			t.Error("the command line is in the resource (flags may carry secrets)")
		}
		if m := get(t, Options{}); m["service.name"] != "mcpfleet" {
			t.Errorf("default service.name %q", m["service.name"])
		}
	})
	t.Run("the environment wins", func(t *testing.T) {
		clearEnv(t, map[string]string{
			"OTEL_SERVICE_NAME":        "fe-east",
			"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test,service.instance.id=pod-7,service.name=ignored",
		})
		m := get(t, Options{ServiceName: "mcpfleet-frontend", InstanceID: "f1"})
		for k, want := range map[string]string{"service.name": "fe-east", "service.instance.id": "pod-7", "deployment.environment.name": "test"} {
			if m[k] != want {
				t.Errorf("%s = %q, want %q", k, m[k], want)
			}
		}
	})
}

// TestSampler checks that OTEL_TRACES_SAMPLER and its argument reach the
// SDK (which reads them itself), with parentbased_always_on by default.
func TestSampler(t *testing.T) {
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1}, SpanID: [8]byte{1}, TraceFlags: trace.FlagsSampled, Remote: true})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{2}, SpanID: [8]byte{2}, Remote: true})
	tests := []struct {
		sampler, arg                string
		root, underSampled, underNo bool
	}{
		{"", "", true, true, false},
		{"always_on", "", true, true, true},
		{"always_off", "", false, false, false},
		{"traceidratio", "0", false, false, false},
		{"parentbased_traceidratio", "0", false, true, false},
		{"parentbased_always_off", "", false, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.sampler+"/"+tc.arg, func(t *testing.T) {
			tr, err := setup(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tracer := tr.TracerProvider().Tracer("test")
			rec := func(parent trace.SpanContext) bool {
				ctx := context.Background()
				if parent.IsValid() {
					ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
				}
				_, s := tracer.Start(ctx, "s")
				defer s.End()
				return s.IsRecording()
			}
			if got := []bool{rec(trace.SpanContext{}), rec(sampled), rec(unsampled)}; got[0] != tc.root || got[1] != tc.underSampled || got[2] != tc.underNo {
				t.Fatalf("recording (root, under a sampled parent, under an unsampled one) = %v, want %v %v %v", got, tc.root, tc.underSampled, tc.underNo)
			}
		})
	}
}

// TestExportHTTP checks that spans reach the OTLP/HTTP endpoint the
// environment names, by the end of Shutdown (the flush of the drain), and
// that nothing is sent with tracing off.
func TestExportHTTP(t *testing.T) {
	var posts atomic.Int64
	var contentType atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" && r.Method == http.MethodPost {
			posts.Add(1)
			contentType.Store(r.Header.Get("Content-Type"))
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()

	for _, on := range []bool{false, true} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "export-test"}
		if !on {
			env["OTEL_SDK_DISABLED"] = "true"
		}
		tr, err := setup(t, env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		before := posts.Load()
		_, s := tr.TracerProvider().Tracer("test").Start(context.Background(), "one")
		s.End()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = tr.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got := posts.Load() - before
		if on && (got < 1 || contentType.Load() != "application/x-protobuf") {
			t.Fatalf("tracing on: %d POSTs to /v1/traces (content type %v) by the end of Shutdown", got, contentType.Load())
		}
		if !on && got != 0 {
			t.Fatalf("tracing off: %d POSTs to /v1/traces", got)
		}
	}
}

// TestPropagatorOff checks that the W3C propagator is global with tracing
// off too: a handler's outgoing call carries the caller's trace.
func TestPropagatorOff(t *testing.T) {
	if _, err := setup(t, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{9}, SpanID: [8]byte{9}, TraceFlags: trace.FlagsSampled})
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	if !strings.Contains(c["traceparent"], sc.TraceID().String()) {
		t.Fatalf("injected %v", c)
	}
}
