package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// regexpTracingOn matches the log line of a process whose tracing is on.
var regexpTracingOn = regexp.MustCompile(`msg="tracing on: OTLP export"`)

// randomTraceparent returns a sampled traceparent with a random trace id,
// with its trace and span ids.
func randomTraceparent() (tp, traceID, spanID string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

// waitTrace polls Jaeger's query API until trace traceID holds want spans,
// and returns it.
func waitTrace(t *testing.T, j *testenv.Jaeger, traceID string, want int) *testenv.JaegerTrace {
	t.Helper()
	var tr *testenv.JaegerTrace
	testutil.Poll(t, "trace "+traceID+" in jaeger", func() bool {
		var ok bool
		tr, ok = j.Trace(t, traceID)
		return ok && len(tr.Spans) >= want
	})
	if len(tr.Spans) != want {
		t.Fatalf("trace %s: %d spans, want %d: %s", traceID, len(tr.Spans), want, spanList(tr))
	}
	return tr
}

func spanList(tr *testenv.JaegerTrace) string {
	var parts []string
	for i := range tr.Spans {
		s := &tr.Spans[i]
		kind, _ := s.Tag("span.kind")
		parts = append(parts, tr.Service(s)+"/"+kind+"/"+s.OperationName)
	}
	return strings.Join(parts, ", ")
}

// spanOf returns the span of tr from service with kind and name, failing
// the test when there is not exactly one.
func spanOf(t *testing.T, tr *testenv.JaegerTrace, service, kind, name string) *testenv.JaegerSpan {
	t.Helper()
	var got *testenv.JaegerSpan
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if k, _ := s.Tag("span.kind"); k == kind && s.OperationName == name && tr.Service(s) == service {
			if got != nil {
				t.Fatalf("trace %s has two %s %s spans %q", tr.TraceID, service, kind, name)
			}
			got = s
		}
	}
	if got == nil {
		t.Fatalf("trace %s has no %s %s span %q: %s", tr.TraceID, service, kind, name, spanList(tr))
	}
	return got
}

func wantTags(t *testing.T, s *testenv.JaegerSpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Tag(k); !ok || (v != "" && got != v) {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.OperationName, k, got, ok, v)
		}
	}
}

// TestTracingJaeger is issue 20's "done when": a tools/call through
// nginx, a frontend process and a worker process (real NATS and Redis)
// configured only through the standard OTEL_* variables (the frontend
// exporting over gRPC, the worker over http/protobuf) appears in a real
// OTLP receiver, Jaeger, as one trace, the client's, with the frontend's
// SERVER span, the bus hop's PRODUCER span, the worker's CONSUMER span
// and the handler's INTERNAL span, parented in that order, from the two
// services named by OTEL_SERVICE_NAME, with the MCP attributes; a legacy
// and a modern call; a tool error and a JSON-RPC error carry error.type.
func TestTracingJaeger(t *testing.T) {
	j := testenv.StartJaeger(t)
	const feService, wService = "e2e-frontend", "e2e-worker"
	common := []string{"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e,team=mcp"}
	c := testenv.StartCluster(t, testenv.ClusterOptions{
		Frontends: 1, Workers: 1, Nginx: true,
		FrontendEnv: append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_SERVICE_NAME=" + feService, "OTEL_TRACES_SAMPLER=parentbased_always_on"}, common...),
		WorkerEnv: append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPHTTP, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_SERVICE_NAME=" + wService, "OTEL_TRACES_SAMPLER=always_on"}, common...),
	})
	for _, p := range append(c.Frontends, c.Workers...) {
		p.WaitLog(t, regexpTracingOn, 10*time.Second)
	}
	legacy := testenv.NewClient(t, c.ProxyURL)
	legacy.Initialize(nil)
	modernClient := testenv.NewModernClient(t, c.ProxyURL)
	const subject = "mcp.req.tools/call.echo"

	// The calls first, then the checks: the processes export every 5 s
	// (the batch span processor's default), so the traces arrive together.
	type call struct {
		traceID, clientSpan, version, session string
	}
	calls := map[string]call{}
	for _, era := range []string{"legacy", "modern"} {
		tp, traceID, clientSpan := randomTraceparent()
		params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}}
		hdr := map[string]string{"Traceparent": tp}
		var r *testenv.Reply
		cl := call{traceID, clientSpan, legacy.ProtocolVersion, legacy.SessionID}
		if era == "legacy" {
			r = legacy.Post(testenv.Request(41, "tools/call", params), hdr)
		} else {
			cl.version, cl.session = "2026-07-28", ""
			r = modern(t, modernClient, 41, "tools/call", params, nil, hdr)
		}
		if got := toolText(t, r); got != "hello" {
			t.Fatalf("%s echo: %q", era, got)
		}
		calls[era] = cl
	}
	// A tool error (sleep refuses a negative time): the worker's spans and
	// the frontend's carry error.type tool_error.
	tp, toolErrTrace, _ := randomTraceparent()
	r := legacy.Post(testenv.Request(42, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": -1}}), map[string]string{"Traceparent": tp})
	if r.Status != 200 || r.Response() == nil {
		t.Fatalf("sleep -1: %s", r)
	}
	// A JSON-RPC error the frontend answers itself (no such tool): its one
	// span carries the code, and the made-up name stays out of its name.
	tp, rpcErrTrace, _ := randomTraceparent()
	r = legacy.Post(testenv.Request(43, "tools/call", map[string]any{"name": "no_such_tool"}), map[string]string{"Traceparent": tp})
	if r.ErrorCode() == 0 {
		t.Fatalf("no_such_tool: %s", r)
	}
	rpcCode := strconv.FormatInt(r.ErrorCode(), 10)

	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			cl := calls[era]
			tr := waitTrace(t, j, cl.traceID, 4)
			fe := spanOf(t, tr, feService, "server", "tools/call echo")
			pub := spanOf(t, tr, feService, "producer", "publish "+subject)
			con := spanOf(t, tr, wService, "consumer", "process "+subject)
			h := spanOf(t, tr, wService, "internal", "tools/call echo")
			for _, link := range []struct {
				child  *testenv.JaegerSpan
				parent string
			}{{fe, cl.clientSpan}, {pub, fe.SpanID}, {con, pub.SpanID}, {h, con.SpanID}} {
				if got := link.child.Parent(); got != link.parent {
					t.Errorf("span %q's parent is %q, want %q", link.child.OperationName, got, link.parent)
				}
			}
			mcpTags := map[string]string{"mcp.method.name": "tools/call", "mcp.protocol.version": cl.version,
				"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "41"}
			if cl.session != "" {
				mcpTags["mcp.session.id"] = cl.session
			}
			wantTags(t, fe, mcpTags)
			wantTags(t, h, mcpTags)
			wantTags(t, fe, map[string]string{"http.request.method": "POST", "http.response.status_code": "200", "url.path": "/mcp", "network.protocol.name": "http"})
			wantTags(t, pub, map[string]string{"messaging.system": "nats", "messaging.destination.name": subject, "messaging.operation.type": "send"})
			wantTags(t, con, map[string]string{"messaging.system": "nats", "messaging.destination.name": subject, "messaging.operation.type": "process"})
			for _, s := range []*testenv.JaegerSpan{fe, h} {
				if v, ok := s.Tag("error.type"); ok {
					t.Errorf("span %q of a successful call has error.type %q", s.OperationName, v)
				}
			}
			// The resources: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
			for _, s := range []*testenv.JaegerSpan{fe, h} {
				p := tr.Processes[s.ProcessID]
				if env, _ := p.Tag("deployment.environment.name"); env != "e2e" {
					t.Errorf("service %s: deployment.environment.name %q", p.ServiceName, env)
				}
				if id, _ := p.Tag("service.instance.id"); id == "" {
					t.Errorf("service %s has no service.instance.id", p.ServiceName)
				}
			}
		})
	}
	t.Run("tool error", func(t *testing.T) {
		tr := waitTrace(t, j, toolErrTrace, 4)
		for _, s := range []*testenv.JaegerSpan{spanOf(t, tr, feService, "server", "tools/call sleep"), spanOf(t, tr, wService, "internal", "tools/call sleep")} {
			wantTags(t, s, map[string]string{"error.type": "tool_error", "otel.status_code": "ERROR"})
		}
	})
	t.Run("JSON-RPC error", func(t *testing.T) {
		tr := waitTrace(t, j, rpcErrTrace, 1)
		wantTags(t, spanOf(t, tr, feService, "server", "tools/call"), map[string]string{
			"error.type": rpcCode, "rpc.response.status_code": rpcCode, "otel.status_code": "ERROR", "gen_ai.tool.name": "no_such_tool"})
	})

	if got := j.Services(t); !slices.Contains(got, feService) || !slices.Contains(got, wService) {
		t.Errorf("jaeger's services %v, want %s and %s", got, feService, wService)
	}
}

// TestTracingOffJaeger checks that a process started without the OTEL_*
// variables exports nothing: an all-in-one serves a call with a client
// traceparent and drains (a process with tracing would have flushed its
// spans by then); the Jaeger beside it has neither the trace nor the
// process's service.
func TestTracingOffJaeger(t *testing.T) {
	j := testenv.StartJaeger(t)
	p, url := testenv.StartMCPFleet(t)
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	tp, traceID, _ := randomTraceparent()
	if got := toolText(t, c.Post(testenv.Request(1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}), map[string]string{"Traceparent": tp})); got != "x" {
		t.Fatalf("echo: %q", got)
	}
	p.Stop(10 * time.Second)
	if regexpTracingOn.MatchString(p.Log()) {
		t.Fatal("the all-in-one turned tracing on without any OTEL_* variable")
	}
	if _, ok := j.Trace(t, traceID); ok {
		t.Fatalf("jaeger has trace %s from a process without OTEL_* variables", traceID)
	}
	if got := j.Services(t); len(got) != 0 {
		t.Fatalf("jaeger has spans of %v", got)
	}
}
