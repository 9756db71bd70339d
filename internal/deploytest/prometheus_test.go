package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// ruleTestFile is promtool's rule unit test format, as much of it as
// rules_test.yml uses, decoded strictly.
type ruleTestFile struct {
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval string   `yaml:"evaluation_interval"`
	FuzzyCompare       bool     `yaml:"fuzzy_compare"`
	GroupEvalOrder     []string `yaml:"group_eval_order"`
	Tests              []struct {
		Name        string `yaml:"name"`
		Interval    string `yaml:"interval"`
		InputSeries []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromqlExprTest []struct {
			Expr       string `yaml:"expr"`
			EvalTime   string `yaml:"eval_time"`
			ExpSamples []struct {
				Labels string  `yaml:"labels"`
				Value  float64 `yaml:"value"`
			} `yaml:"exp_samples"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// recordNameRE is the level:metric:operations form of recording rule
// names Prometheus recommends.
var recordNameRE = regexp.MustCompile(`^mcpfleet:[a-z0-9_]+:[a-z0-9_]+$`)

// TestPrometheusRules runs promtool (Prometheus v3.16.0) on the rules:
// check rules (strict, duplicates fatal), their unit tests, and check
// config of deploy/prometheus.yml, which loads them. It checks what
// promtool does not: every alert has a severity and its summary and
// description, and the unit tests cover every rule: each alert both
// firing and silent, each recording rule's value.
func TestPrometheusRules(t *testing.T) {
	f := readRules(t)
	alerts := map[string]rule{}
	records := map[string]bool{}
	var groups []string
	n := 0
	for _, g := range f.Groups {
		groups = append(groups, g.Name)
		for _, r := range g.Rules {
			n++
			switch {
			case r.Record != "" && r.Alert == "":
				if !recordNameRE.MatchString(r.Record) || records[r.Record] {
					t.Errorf("recording rule %s: a duplicate, or not of the form mcpfleet:metric:operations", r.Record)
				}
				if r.For != "" || len(r.Annotations) > 0 {
					t.Errorf("recording rule %s has for or annotations", r.Record)
				}
				records[r.Record] = true
			case r.Alert != "" && r.Record == "":
				if _, dup := alerts[r.Alert]; dup || !strings.HasPrefix(r.Alert, "MCPFleet") {
					t.Errorf("alert %s: a duplicate, or not named MCPFleet...", r.Alert)
				}
				if s := r.Labels["severity"]; s != "critical" && s != "warning" {
					t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || len(r.Annotations) != 2 {
					t.Errorf("alert %s: annotations %v, want a summary and a description", r.Alert, sortedKeys(r.Annotations))
				}
				alerts[r.Alert] = r
			default:
				t.Errorf("group %s: a rule that is neither a recording rule nor an alert: %+v", g.Name, r)
			}
		}
	}
	if len(alerts) < 10 || len(records) < 15 {
		t.Fatalf("rules.yml: %d alerts and %d recording rules read", len(alerts), len(records))
	}
	if out, ok := promtool(t, "check", "rules", "--lint-fatal", rulesPath(t)); !ok || !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool check rules --lint-fatal deploy/prometheus/rules.yml (%d rules):\n%s", n, out)
	}

	testsPath := filepath.Join(deployDir(t), "prometheus", "rules_test.yml")
	data, err := os.ReadFile(testsPath)
	if err != nil {
		t.Fatal(err)
	}
	var tf ruleTestFile
	if err := yaml.UnmarshalWithOptions(data, &tf, yaml.Strict()); err != nil {
		t.Fatalf("deploy/prometheus/rules_test.yml: %v", err)
	}
	if !reflect.DeepEqual(tf.RuleFiles, []string{"rules.yml"}) {
		t.Errorf("rules_test.yml: rule_files %v, want [rules.yml]", tf.RuleFiles)
	}
	// The recording rules first, then the alerts that read them.
	if !reflect.DeepEqual(tf.GroupEvalOrder, groups) {
		t.Errorf("rules_test.yml: group_eval_order %v, want the groups of rules.yml in order: %v", tf.GroupEvalOrder, groups)
	}
	firing, silent, valued := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, tg := range tf.Tests {
		if len(tg.InputSeries) < 2 {
			t.Errorf("test %q: %d input series, want one to alert on and a healthy one at least", tg.Name, len(tg.InputSeries))
		}
		for _, a := range tg.AlertRuleTest {
			r, ok := alerts[a.Alertname]
			if !ok {
				t.Errorf("test %q: alert %s is not in rules.yml (promtool would pass it silently)", tg.Name, a.Alertname)
				continue
			}
			if len(a.ExpAlerts) == 0 {
				silent[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				firing[a.Alertname] = true
				if e.ExpLabels["severity"] != r.Labels["severity"] || len(e.ExpAnnotations) != 2 {
					t.Errorf("test %q: %s at %s: labels %v and annotations %v, want its severity and both annotations", tg.Name, a.Alertname, a.EvalTime, e.ExpLabels, e.ExpAnnotations)
				}
			}
		}
		for _, e := range tg.PromqlExprTest {
			for _, name := range metricNames(e.Expr) {
				if records[name] && len(e.ExpSamples) > 0 {
					valued[name] = true
				}
			}
		}
	}
	for _, name := range sortedKeys(alerts) {
		if !firing[name] || !silent[name] {
			t.Errorf("rules_test.yml: alert %s firing tested: %v, silent tested: %v; want both", name, firing[name], silent[name])
		}
	}
	for _, name := range sortedKeys(records) {
		if !valued[name] {
			t.Errorf("rules_test.yml: no promql_expr_test gives recording rule %s a value", name)
		}
	}
	if out, ok := promtool(t, "test", "rules", testsPath); !ok || !strings.Contains(out, "SUCCESS") || strings.Contains(out, "WARNING") {
		t.Errorf("promtool test rules deploy/prometheus/rules_test.yml:\n%s", out)
	}

	// Prometheus loads them: rule_files is relative to prometheus.yml
	// (compose mounts both so, checkObservability).
	if rf := readPromConfig(t).RuleFiles; !reflect.DeepEqual(rf, []string{"prometheus/rules.yml"}) {
		t.Errorf("deploy/prometheus.yml: rule_files %v, want [prometheus/rules.yml]", rf)
	}
	out, ok := promtool(t, "check", "config", "--lint-fatal", filepath.Join(deployDir(t), "prometheus.yml"))
	if !ok || !strings.Contains(out, "SUCCESS: 1 rule files found") || !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool check config --lint-fatal deploy/prometheus.yml:\n%s", out)
	}
}

// specMetrics are the mcpfleet metrics the binaries serve (issue 20's
// list), which the dashboard must show: each is named by a panel,
// directly or through the recording rules it reads.
var specMetrics = []string{
	"mcp_server_operation_duration_seconds", "mcpfleet_frontend_operations_in_flight",
	"mcpfleet_frontend_requests_total", "mcpfleet_frontend_request_duration_seconds",
	"mcpfleet_frontend_inflight_requests", "mcpfleet_frontend_open_streams",
	"mcpfleet_frontend_dropped_streams_total", "mcpfleet_frontend_dropped_messages_total",
	"mcpfleet_frontend_events_fanned_out_total", "mcpfleet_frontend_bus_roundtrip_seconds",
	"mcpfleet_store_roundtrip_seconds", "mcpfleet_store_errors_total", "mcpfleet_sessions",
	"mcpfleet_frontend_sessions_total", "mcpfleet_redis_pool_hits_total",
	"mcpfleet_redis_pool_misses_total", "mcpfleet_redis_pool_timeouts_total",
	"mcpfleet_redis_pool_connections", "mcpfleet_worker_operation_duration_seconds",
	"mcpfleet_worker_operations_in_flight", "mcpfleet_worker_requests_total",
	"mcpfleet_worker_handler_duration_seconds", "mcpfleet_worker_inflight_requests",
	"mcpfleet_worker_stuck_handlers", "mcpfleet_build_info", "mcpfleet_nats_messages_total",
	"mcpfleet_nats_bytes_total", "mcpfleet_nats_reconnects_total", "mcpfleet_nats_connected",
}

// histogramSuffixes are the series suffixes of a classic histogram.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// TestDashboardQueries checks the dashboard's structure (Grafana 11+
// model, the ${datasource} variable on every panel and query, job and
// instance variables, unique ids, the grid) and that every query, with
// the variables substituted, is PromQL promtool parses; and that it shows
// every metric of the specification.
func TestDashboardQueries(t *testing.T) {
	d := readDashboard(t)
	if d.UID != "mcpfleet" || d.Title == "" || d.SchemaVersion < 39 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d; want uid mcpfleet, a title, schemaVersion 39 (Grafana 11) or later", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if _, ok := dashboardVars[v.Name]; !ok {
			t.Errorf("variable %s: the test has no value to substitute for it (dashboardVars)", v.Name)
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s: data source %+v, want ${datasource}", v.Name, v.Datasource)
		}
	}
	if want := map[string]string{"datasource": "datasource", "job": "query", "instance": "query"}; !reflect.DeepEqual(vars, want) {
		t.Errorf("variables %v, want %v", vars, want)
	}
	ds := dataSourceRef{Type: "prometheus", UID: "${datasource}"}
	ids := map[int]bool{}
	rows := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d, zero or not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %d %q: gridPos %+v off the 24-column grid", p.ID, p.Title, g)
		}
		if p.Type == "row" {
			rows++
			if len(p.Targets) > 0 || (!p.Collapsed && len(p.Panels) > 0) || (p.Collapsed && len(p.Panels) == 0) {
				t.Errorf("row %q: targets, or nested panels that do not match collapsed=%v", p.Title, p.Collapsed)
			}
			continue
		}
		if p.Datasource == nil || *p.Datasource != ds || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: data source %+v and %d queries; want %+v and queries", p.ID, p.Title, p.Datasource, len(p.Targets), ds)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || *tg.Datasource != ds || tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %d %q: query %s on %+v: want a unique refId, an expression, %+v", p.ID, p.Title, tg.RefID, tg.Datasource, ds)
			}
			refs[tg.RefID] = true
		}
	}
	if rows < 5 || len(ids) < 40 {
		t.Errorf("the dashboard has %d panels in %d rows", len(ids), rows)
	}

	exprs := dashboardExprs(t, d)
	if out, ok := checkRulesFile(t, exprs); !ok {
		var index strings.Builder
		for i, k := range sortedKeys(exprs) {
			fmt.Fprintf(&index, "  record_%d: %s: %s\n", i, k, exprs[k])
		}
		t.Errorf("promtool check rules: not every query of the dashboard is PromQL:\n%s\nthe queries:\n%s", out, index.String())
	}
	// The same check refuses what is not PromQL.
	if out, ok := checkRulesFile(t, map[string]string{"bad": `sum by (job (rate(x[5m]))`}); ok {
		t.Errorf("promtool check rules took an expression that is not PromQL:\n%s", out)
	}

	// Every metric of the specification is on the dashboard, directly or
	// through the recording rules its queries read; and every recording
	// rule it reads is one rules.yml defines.
	f := readRules(t)
	recordExpr := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recordExpr[r.Record] = r.Expr
			}
		}
	}
	shown := map[string]bool{}
	var show func(where, name string)
	show = func(where, name string) {
		if strings.Contains(name, ":") {
			e, ok := recordExpr[name]
			if !ok {
				t.Errorf("%s reads %s, which rules.yml does not record", where, name)
				return
			}
			for _, n := range metricNames(e) {
				show(name, n)
			}
			return
		}
		shown[trimHistogramSuffix(name)] = true
	}
	for where, e := range exprs {
		for _, n := range metricNames(e) {
			show(where, n)
		}
	}
	for _, m := range specMetrics {
		if !shown[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// trimHistogramSuffix strips a classic histogram's series suffix.
func trimHistogramSuffix(name string) string {
	for _, s := range histogramSuffixes {
		if base, ok := strings.CutSuffix(name, s); ok {
			return base
		}
	}
	return name
}
