package metrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func catalog() *mcp.Catalog {
	return &mcp.Catalog{
		Tools:     []*protocol.Tool{{Name: "echo"}},
		Prompts:   []*protocol.Prompt{{Name: "greet"}},
		Resources: []*protocol.Resource{{URI: "test://static"}},
		Templates: []*protocol.ResourceTemplate{{URITemplate: "test://item/{id}"}},
	}
}

// family returns the gathered family name (nil when absent).
func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// op runs one operation through the metrics as the frontend does.
func op(m *metrics.Metrics, cat *mcp.Catalog, method, target string, errCode int64) {
	rec := &httpx.Record{Start: time.Now(), Method: method, ErrCode: errCode}
	switch method {
	case protocol.MethodToolsCall:
		rec.Tool = target
	case protocol.MethodPromptsGet:
		rec.Prompt = target
	default:
		rec.Resource = target
	}
	m.BeginOperation(rec, cat)
	m.BeginOperation(rec, cat) // a second call changes nothing
	m.Observe(rec)
}

// A client sending 1000 different unknown tool names (and methods, and
// URIs) makes one series each for tool, method and resource: "other".
// Known names keep their own; the in-flight gauge is back to 0.
func TestOperationLabelsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, nil)
	cat := catalog()
	for i := range 1000 {
		op(m, cat, protocol.MethodToolsCall, fmt.Sprintf("unknown-%d", i), protocol.CodeInvalidParams)
		op(m, cat, fmt.Sprintf("made/up/%d", i), "", 0)
		op(m, cat, protocol.MethodResourcesRead, fmt.Sprintf("test://nope/%d", i), 0)
		op(m, cat, protocol.MethodResourcesRead, fmt.Sprintf("test://item/%d", i), 0)
	}
	op(m, cat, protocol.MethodToolsCall, "echo", 0)
	op(m, cat, protocol.MethodPromptsGet, "greet", 0)
	op(m, cat, protocol.MethodPromptsGet, "nope", protocol.CodeInvalidParams)
	op(m, cat, protocol.MethodResourcesRead, "test://static", 0)

	type key struct{ method, tool, prompt, res, errType string }
	want := map[key]uint64{
		{"tools/call", "other", "", "", "-32602"}:          1000,
		{"other", "", "", "", ""}:                          1000,
		{"resources/read", "", "", "other", ""}:            1000,
		{"resources/read", "", "", "test://item/{id}", ""}: 1000,
		{"tools/call", "echo", "", "", ""}:                 1,
		{"prompts/get", "", "greet", "", ""}:               1,
		{"prompts/get", "", "other", "", "-32602"}:         1,
		{"resources/read", "", "", "test://static", ""}:    1,
	}
	f := family(t, reg, "mcp_server_operation_duration_seconds")
	if f == nil {
		t.Fatal("no mcp_server_operation_duration_seconds")
	}
	got := map[key]uint64{}
	for _, s := range f.GetMetric() {
		l := labels(s)
		got[key{l["mcp_method_name"], l["gen_ai_tool_name"], l["gen_ai_prompt_name"], l["mcp_resource_template"], l["error_type"]}] = s.GetHistogram().GetSampleCount()
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d: %v", len(got), len(want), got)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%+v: %d operations, want %d", k, got[k], n)
		}
	}
	g := family(t, reg, "mcpfleet_frontend_operations_in_flight")
	if g == nil || len(g.GetMetric()) != len(want) { // each series above has target labels of its own
		t.Fatalf("in-flight series: %v, want %d", g, len(want))
	}
	for _, s := range g.GetMetric() {
		if v := s.GetGauge().GetValue(); v != 0 {
			t.Errorf("in flight %v: %v, want 0", labels(s), v)
		}
	}
	// requests_total keeps its method bound too.
	if r := family(t, reg, "mcpfleet_frontend_requests_total"); r == nil || len(r.GetMetric()) > 6 {
		t.Errorf("requests_total series: %v", r)
	}
}

// An operation in flight is on the gauge under the labels it began with,
// even when the catalog changes before it ends.
func TestOperationInFlight(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, nil)
	cat := catalog()
	rec := &httpx.Record{Start: time.Now(), Method: protocol.MethodToolsCall, Tool: "echo"}
	m.BeginOperation(rec, cat)
	value := func() float64 {
		g := family(t, reg, "mcpfleet_frontend_operations_in_flight")
		for _, s := range g.GetMetric() {
			if labels(s)["gen_ai_tool_name"] == "echo" {
				return s.GetGauge().GetValue()
			}
		}
		return -1
	}
	if v := value(); v != 1 {
		t.Fatalf("in flight: %v, want 1", v)
	}
	cat.Tools = nil // what a catalog change would do to the labels
	rec.ToolError = true
	m.Observe(rec)
	if v := value(); v != 0 {
		t.Fatalf("in flight after the end: %v, want 0", v)
	}
	f := family(t, reg, "mcp_server_operation_duration_seconds")
	found := false
	for _, s := range f.GetMetric() {
		l := labels(s)
		if l["gen_ai_tool_name"] == "echo" && l["error_type"] == "tool_error" && s.GetHistogram().GetSampleCount() == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no tool_error operation of echo: %v", f)
	}
	// An exchange that never began an operation (a GET stream, a
	// notification) is no operation.
	m.Observe(&httpx.Record{Start: time.Now(), Method: "GET"})
	if n := len(family(t, reg, "mcp_server_operation_duration_seconds").GetMetric()); n != 1 {
		t.Errorf("%d operation series, want 1", n)
	}
}
