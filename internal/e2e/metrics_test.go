package e2e

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families scrapes the /metrics of the admin listener at admin and parses
// it with the Prometheus text parser, as Prometheus does.
func families(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s/metrics: HTTP %d", admin, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s/metrics does not parse: %v", admin, err)
	}
	return fams
}

// samples returns the samples of family name whose labels include every
// one of want.
func samples(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range fams[name].GetMetric() {
		ok := true
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value is the value of the one sample of name with labels (a counter's,
// a gauge's, or a histogram's count); -1 when there is none, and a test
// failure when there are several.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	s := samples(fams, name, labels)
	switch {
	case len(s) == 0:
		return -1
	case len(s) > 1:
		t.Fatalf("%s%v: %d samples, want one", name, labels, len(s))
	}
	m := s[0]
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// op names one series of an operation histogram: method, tool, prompt,
// resource template and error type, every label given ("" included).
func op(method, tool, prompt, res, errType string) map[string]string {
	return map[string]string{"mcp_method_name": method, "gen_ai_tool_name": tool, "gen_ai_prompt_name": prompt,
		"mcp_resource_template": res, "error_type": errType}
}

// TestMetricsAdminOnly: every role serves /metrics, /healthz and /readyz
// on its admin listener and nowhere else: the MCP port answers 404 for
// them, with the admin listener on and with it off.
func TestMetricsAdminOnly(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1})
	serve, serveURL := testenv.StartMCPFleet(t)
	off, offURL := testenv.StartMCPFleet(t, "--admin-listen", "off")
	for _, p := range []struct {
		name, mcp string
		proc      *testenv.Proc
	}{
		{"frontend", c.URLs[0], c.Frontends[0]},
		{"worker", "", c.Workers[0]},
		{"serve", serveURL, serve},
	} {
		admin := p.proc.AdminURL(t)
		waitStatus(t, admin+"/readyz", 200, "ready", 10*time.Second)
		for path, want := range map[string]string{"/healthz": "ok", "/metrics": "mcpfleet_build_info"} {
			if code, body := probe(t, admin+path); code != 200 || !strings.Contains(body, want) {
				t.Errorf("%s admin %s: HTTP %d %.80q", p.name, path, code, body)
			}
		}
		if p.mcp == "" {
			continue
		}
		base := strings.TrimSuffix(p.mcp, "/mcp")
		for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
			if code, _ := probe(t, base+path); code != http.StatusNotFound {
				t.Errorf("%s: %s on the MCP port: HTTP %d, want 404", p.name, path, code)
			}
		}
	}
	base := strings.TrimSuffix(offURL, "/mcp")
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := probe(t, base+path); code != http.StatusNotFound {
			t.Errorf("serve --admin-listen off: %s on the MCP port: HTTP %d, want 404", path, code)
		}
	}
	if strings.Contains(off.Log(), "admin http serving") {
		t.Error("serve --admin-listen off opened an admin listener")
	}
	cl := testenv.NewClient(t, offURL)
	cl.Initialize(nil)
	cl.Call(1, "tools/call", callParams("echo", map[string]any{"text": "no admin"}))
}

// TestMetricsScraped drives a known workload through a frontend (Redis
// store) and a worker, processes of their own, then scrapes both admin
// listeners and parses them with the Prometheus text parser: operations
// per tool, prompt and resource template with their error types (an
// unknown tool is "other"), in flight back to 0, the store's round trips,
// the sessions gauge from Redis, events fanned out, NATS and Redis client
// statistics and build_info.
func TestMetricsScraped(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1, Persistent: true})
	fe, wk := c.Frontends[0].AdminURL(t), c.Workers[0].AdminURL(t)
	cl := testenv.NewClient(t, c.URLs[0])
	cl.Initialize(nil)
	for range 2 { // two more live sessions: three in all
		testenv.NewClient(t, c.URLs[0]).Initialize(nil)
	}
	g := cl.OpenGet(nil)
	defer g.Close()
	for i := range 3 {
		cl.Call(10+i, "tools/call", callParams("echo", map[string]any{"text": "m"}))
	}
	if r := cl.Post(testenv.Request(20, "tools/call", callParams("test_error_handling", nil)), nil); r.Response() == nil || r.Response().Error != nil {
		t.Fatalf("test_error_handling: %s", r)
	}
	if r := cl.Post(testenv.Request(21, "tools/call", callParams("no-such-tool", nil)), nil); r.ErrorCode() != -32602 {
		t.Fatalf("an unknown tool: %s, want -32602", r)
	}
	cl.Call(22, "prompts/get", map[string]any{"name": "test_simple_prompt"})
	cl.Call(23, "resources/read", map[string]any{"uri": "test://template/42/data"})
	cl.Call(24, "resources/read", map[string]any{"uri": "test://static-text"})
	// A resource update reaches the GET stream through the session's log.
	cl.Call(25, "resources/subscribe", map[string]any{"uri": "test://watched-resource"})
	cl.Call(26, "tools/call", callParams("touch_resource", map[string]any{"uri": "test://watched-resource"}))
	deadline := time.Now().Add(testenv.HangGuard(10 * time.Second))
	for {
		if _, m := g.NextMessage(t, time.Until(deadline)); m.Method == "notifications/resources/updated" {
			break
		}
	}

	// The answers are written before the exchanges' metrics are: wait
	// for the last of them.
	var f map[string]*dto.MetricFamily
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "the frontend's figures", func() bool {
		f = families(t, fe)
		inflight := 0.0
		for _, s := range samples(f, "mcpfleet_frontend_operations_in_flight", nil) {
			inflight += s.GetGauge().GetValue()
		}
		return inflight == 0 && value(t, f, "mcp_server_operation_duration_seconds", op("tools/call", "touch_resource", "", "", "")) == 1 &&
			value(t, f, "mcpfleet_frontend_events_fanned_out_total", map[string]string{"kind": "session"}) >= 1
	})
	for _, w := range []struct {
		labels map[string]string
		n      float64
	}{
		{op("tools/call", "echo", "", "", ""), 3},
		{op("tools/call", "test_error_handling", "", "", "tool_error"), 1},
		{op("tools/call", "other", "", "", "-32602"), 1}, // answered by the frontend: its name is in no catalog
		{op("prompts/get", "", "test_simple_prompt", "", ""), 1},
		{op("resources/read", "", "", "test://template/{id}/data", ""), 1},
		{op("resources/read", "", "", "test://static-text", ""), 1},
		{op("resources/subscribe", "", "", "test://watched-resource", ""), 1},
		{op("initialize", "", "", "", ""), 3},
	} {
		if got := value(t, f, "mcp_server_operation_duration_seconds", w.labels); got != w.n {
			t.Errorf("frontend operations %v: %v, want %v", w.labels, got, w.n)
		}
	}
	if s := samples(f, "mcp_server_operation_duration_seconds", map[string]string{"mcp_method_name": "GET"}); len(s) != 0 {
		t.Errorf("a GET stream counted as an operation: %v", s)
	}
	for _, s := range samples(f, "mcp_server_operation_duration_seconds", nil) {
		for _, l := range s.GetLabel() {
			if l.GetName() == "gen_ai_tool_name" && l.GetValue() == "no-such-tool" {
				t.Errorf("an unknown tool's name is a label: %v", s)
			}
		}
	}
	for name, min := range map[string]float64{
		"mcpfleet_store_roundtrip_seconds{op=begin}":   9, // every legacy request of cl claims its id
		"mcpfleet_store_roundtrip_seconds{op=create}":  3,
		"mcpfleet_redis_pool_connections{state=total}": 1,
		"mcpfleet_nats_messages_total{direction=in}":   1,
		"mcpfleet_nats_messages_total{direction=out}":  1,
		"mcpfleet_nats_bytes_total{direction=out}":     1,
		"mcpfleet_nats_connected":                      1,
		"mcpfleet_frontend_open_streams{kind=get}":     1,
		"mcpfleet_frontend_bus_roundtrip_seconds":      8,
	} {
		if got := value(t, f, nameOf(name), labelsOf(name)); got < min {
			t.Errorf("frontend %s = %v, want at least %v", name, got, min)
		}
	}
	if got := value(t, f, "mcpfleet_store_errors_total", map[string]string{"op": "begin"}); got != 0 {
		t.Errorf("store errors of begin: %v, want 0", got)
	}
	if got := value(t, f, "mcpfleet_sessions", nil); got != 3 {
		t.Errorf("mcpfleet_sessions = %v, want the 3 live sessions (counted in Redis)", got)
	}
	if got := value(t, f, "mcpfleet_frontend_dropped_messages_total", map[string]string{"reason": "slow_reader"}); got != 0 {
		t.Errorf("dropped messages: %v", got)
	}

	// The worker saw what was routed to it, labelled by its own catalog;
	// the unknown tool never reached it.
	var w map[string]*dto.MetricFamily
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "the worker's figures", func() bool {
		w = families(t, wk)
		inflight := 0.0
		for _, s := range samples(w, "mcpfleet_worker_operations_in_flight", nil) {
			inflight += s.GetGauge().GetValue()
		}
		return inflight == 0 && value(t, w, "mcpfleet_worker_operation_duration_seconds", op("tools/call", "touch_resource", "", "", "")) == 1
	})
	for _, x := range []struct {
		labels map[string]string
		n      float64
	}{
		{op("tools/call", "echo", "", "", ""), 3},
		{op("tools/call", "test_error_handling", "", "", "tool_error"), 1},
		{op("prompts/get", "", "test_simple_prompt", "", ""), 1},
		{op("resources/read", "", "", "test://template/{id}/data", ""), 1},
		{op("tools/call", "other", "", "", "-32602"), -1},
	} {
		if got := value(t, w, "mcpfleet_worker_operation_duration_seconds", x.labels); got != x.n {
			t.Errorf("worker operations %v: %v, want %v", x.labels, got, x.n)
		}
	}
	if got := value(t, w, "mcpfleet_nats_messages_total", map[string]string{"direction": "out"}); got < 1 {
		t.Errorf("worker NATS messages out: %v", got)
	}
	for who, fams := range map[string]map[string]*dto.MetricFamily{"frontend": f, "worker": w} {
		bi := samples(fams, "mcpfleet_build_info", map[string]string{"goversion": runtime.Version()})
		if len(bi) != 1 || bi[0].GetGauge().GetValue() != 1 {
			t.Errorf("%s build_info: %v", who, fams["mcpfleet_build_info"])
			continue
		}
		for _, l := range bi[0].GetLabel() {
			if l.GetName() == "version" && l.GetValue() == "" {
				t.Errorf("%s build_info without a version", who)
			}
		}
	}
}

// nameOf and labelsOf split "name{k=v,...}" (no quotes) into the family
// name and the labels.
func nameOf(s string) string { n, _, _ := strings.Cut(s, "{"); return n }

func labelsOf(s string) map[string]string {
	_, rest, ok := strings.Cut(s, "{")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}
