package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// Jaeger is a real Jaeger (v2) process: an OTLP receiver over gRPC and
// HTTP with an in-memory store, and its query API.
type Jaeger struct {
	Proc *Proc
	// OTLPGRPC and OTLPHTTP are the OTLP endpoints, as
	// OTEL_EXPORTER_OTLP_ENDPOINT takes them (http://127.0.0.1:port).
	OTLPGRPC, OTLPHTTP string
	// QueryURL is the query API's base URL (http://127.0.0.1:port).
	QueryURL string
}

// JaegerBinary returns the jaeger binary scripts/deps.sh builds from the
// committed tools/jaeger module into .cache/bin/jaeger.
func JaegerBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(ModuleRoot(tb), ".cache", "bin", "jaeger")
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		tb.Fatalf("testenv: %s is missing; run `make deps` (scripts/deps.sh builds it from tools/jaeger)", bin)
	}
	return bin
}

// StartJaeger runs Jaeger with the committed testdata/jaeger/config.yaml
// on free loopback ports and waits until its health endpoint says it is
// ready. Its output is shown on failure, and kept in a file whose path is
// logged.
func StartJaeger(tb testing.TB) *Jaeger {
	tb.Helper()
	bin := JaegerBinary(tb)
	conf := filepath.Join(ModuleRoot(tb), "testdata", "jaeger", "config.yaml")
	ports := map[string]int{}
	for _, k := range []string{"JAEGER_OTLP_GRPC_PORT", "JAEGER_OTLP_HTTP_PORT", "JAEGER_QUERY_HTTP_PORT", "JAEGER_QUERY_GRPC_PORT", "JAEGER_HEALTH_PORT"} {
		ports[k] = FreePort(tb)
	}
	env := hermeticEnv()
	for k, p := range ports {
		env = append(env, k+"="+strconv.Itoa(p))
	}
	p := StartEnv(tb, "jaeger", bin, env, "--config", conf)
	tb.Cleanup(func() {
		if !tb.Failed() {
			return
		}
		if f, err := os.CreateTemp("", "jaeger-*.log"); err == nil {
			_, _ = f.WriteString(p.Log())
			_ = f.Close()
			tb.Logf("testenv: jaeger's whole output: %s", f.Name())
		}
	})
	j := &Jaeger{
		Proc:     p,
		OTLPGRPC: fmt.Sprintf("http://127.0.0.1:%d", ports["JAEGER_OTLP_GRPC_PORT"]),
		OTLPHTTP: fmt.Sprintf("http://127.0.0.1:%d", ports["JAEGER_OTLP_HTTP_PORT"]),
		QueryURL: fmt.Sprintf("http://127.0.0.1:%d", ports["JAEGER_QUERY_HTTP_PORT"]),
	}
	health := fmt.Sprintf("http://127.0.0.1:%d/status", ports["JAEGER_HEALTH_PORT"])
	timeout := HangGuard(30 * time.Second)
	if !testutil.WaitFor(timeout, func() bool {
		resp, err := http.Get(health)
		if err != nil {
			return p.Exited()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || p.Exited()
	}) || p.Exited() {
		tb.Fatalf("testenv: jaeger was not healthy within %s; output:\n%s", timeout, tail(p.Log(), 40))
	}
	for _, k := range []string{"JAEGER_OTLP_GRPC_PORT", "JAEGER_OTLP_HTTP_PORT", "JAEGER_QUERY_HTTP_PORT"} {
		WaitTCP(tb, fmt.Sprintf("127.0.0.1:%d", ports[k]), 10*time.Second)
	}
	return j
}

// JaegerTrace is one trace of the query API (/api/traces).
type JaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []JaegerSpan             `json:"spans"`
	Processes map[string]JaegerProcess `json:"processes"`
}

// JaegerSpan is one span of a JaegerTrace.
type JaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64       `json:"startTime"` // µs since the epoch
	Duration  int64       `json:"duration"`  // µs
	Tags      []JaegerTag `json:"tags"`
	ProcessID string      `json:"processID"`
}

// JaegerTag is an attribute of a span or a process.
type JaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// JaegerProcess is a span's process: its service name and resource
// attributes.
type JaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []JaegerTag `json:"tags"`
}

// Tag returns the value of the span's tag key as a string, and whether it
// has it. Jaeger gives the span kind as tag span.kind, the status as
// otel.status_code.
func (s *JaegerSpan) Tag(key string) (string, bool) { return tagValue(s.Tags, key) }

// Tag returns the value of the process's tag key as a string.
func (p *JaegerProcess) Tag(key string) (string, bool) { return tagValue(p.Tags, key) }

func tagValue(tags []JaegerTag, key string) (string, bool) {
	for _, t := range tags {
		if t.Key == key {
			switch v := t.Value.(type) {
			case string:
				return v, true
			case float64:
				return strconv.FormatFloat(v, 'f', -1, 64), true
			default:
				return fmt.Sprint(v), true
			}
		}
	}
	return "", false
}

// Parent returns the span id of the span's CHILD_OF reference ("" for a
// root).
func (s *JaegerSpan) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Service returns the service name of span s of t.
func (t *JaegerTrace) Service(s *JaegerSpan) string { return t.Processes[s.ProcessID].ServiceName }

// Trace returns the trace with id traceID (32 hex digits), and whether
// Jaeger has it.
func (j *Jaeger) Trace(tb testing.TB, traceID string) (*JaegerTrace, bool) {
	tb.Helper()
	var out struct {
		Data []JaegerTrace `json:"data"`
	}
	status := j.get(tb, "/api/traces/"+url.PathEscape(traceID), &out)
	if status == http.StatusNotFound || len(out.Data) == 0 {
		return nil, false
	}
	return &out.Data[0], true
}

// Traces returns the traces of service (at most 100, newest first).
func (j *Jaeger) Traces(tb testing.TB, service string) []JaegerTrace {
	tb.Helper()
	var out struct {
		Data []JaegerTrace `json:"data"`
	}
	j.get(tb, "/api/traces?limit=100&lookback=1h&service="+url.QueryEscape(service), &out)
	return out.Data
}

// Services returns the services Jaeger has spans of.
func (j *Jaeger) Services(tb testing.TB) []string {
	tb.Helper()
	var out struct {
		Data []string `json:"data"`
	}
	j.get(tb, "/api/services", &out)
	return out.Data
}

// get reads a query API path into v and returns the HTTP status; a
// failure to reach the API or an answer that is not JSON fails the test.
func (j *Jaeger) get(tb testing.TB, path string, v any) int {
	tb.Helper()
	resp, err := http.Get(j.QueryURL + path)
	if err != nil {
		tb.Fatalf("testenv: jaeger query %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return resp.StatusCode
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("testenv: jaeger query %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatalf("testenv: jaeger query %s: %v", path, err)
	}
	return resp.StatusCode
}
