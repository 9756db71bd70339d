package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// The Prometheus rules and the Grafana dashboard of deploy/, as the tests
// read them, and the names of the metrics their expressions use.

func rulesPath(tb testing.TB) string { return filepath.Join(deployDir(tb), "prometheus", "rules.yml") }
func dashboardPath(tb testing.TB) string {
	return filepath.Join(deployDir(tb), "grafana", "mcpfleet-dashboard.json")
}

// ruleFile is Prometheus's rule file format, as much of it as rules.yml
// uses, decoded strictly.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(tb testing.TB) *ruleFile {
	tb.Helper()
	data, err := os.ReadFile(rulesPath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		tb.Fatalf("deploy/prometheus/rules.yml: %v", err)
	}
	return &f
}

// recordNames are the names of the recording rules.
func (f *ruleFile) recordNames() map[string]bool {
	names := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names[r.Record] = true
			}
		}
	}
	return names
}

// dashboard is the part of Grafana's dashboard JSON model the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *dataSourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *dataSourceRef `json:"datasource"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *dataSourceRef `json:"datasource"`
	} `json:"targets"`
	Collapsed bool    `json:"collapsed"`
	Panels    []panel `json:"panels"` // a collapsed row's
}

type dataSourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(tb testing.TB) *dashboard {
	tb.Helper()
	data, err := os.ReadFile(dashboardPath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		tb.Fatalf("deploy/grafana/mcpfleet-dashboard.json: %v", err)
	}
	return &d
}

// allPanels walks the panels, rows' nested panels included.
func (d *dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardVars are the values the tests give the dashboard's variables
// and Grafana's built-in ones: every variable of the dashboard must have
// one (TestDashboardQueries).
var dashboardVars = map[string]string{
	"__rate_interval": "1m", "__interval": "15s", "__interval_ms": "15000",
	"__range": "1h", "__range_s": "3600", "__range_ms": "3600000",
	"datasource": "prometheus", "job": "frontend|worker", "instance": ".*",
}

// $name, ${name}, ${name:format} and [[name]].
var varRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// substitute replaces the dashboard variables in expr as Grafana would
// before sending it to Prometheus; one without a value is an error.
func substitute(expr string) (string, error) {
	var unknown []string
	out := varRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		v, ok := dashboardVars[name]
		if !ok {
			unknown = append(unknown, m)
			return m
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("%q: variables the test gives no value: %v", expr, unknown)
	}
	return out, nil
}

// labelValuesRE is Grafana's label_values(selector, label) variable query.
var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\s*\)\s*$`)

// dashboardExprs are the PromQL expressions of the dashboard, variables
// substituted, by where they are: every target of every panel, and the
// selectors of the variables' label_values queries.
func dashboardExprs(t *testing.T, d *dashboard) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	add := func(where, expr string) {
		e, err := substitute(expr)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		exprs[where] = e
	}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query %s: %v", v.Name, v.Query, err)
			continue
		}
		m := labelValuesRE.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
			continue
		}
		add("variable "+v.Name, m[1])
	}
	return exprs
}

// promqlWords are the identifiers of PromQL that are not metric names and
// need not be followed by "(": keywords, set and grouping operators, the
// aggregation operators (sum by (x) (...)), and the literals.
var promqlWords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true, "inf": true, "nan": true, "start": true, "end": true,
}

// labelLists are the words a parenthesised list of label names follows.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// metricNames returns the metric names expr selects, in order: the
// identifiers outside label matchers ({...}), ranges ([...]), strings and
// the label lists of by, without, on, ignoring, group_left and
// group_right, that are neither PromQL words nor functions (an identifier
// followed by "("). Recording rule names (level:metric:operations) are
// among them.
func metricNames(expr string) []string {
	var names []string
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
		return i
	}
	// skipTo returns the index after the close matching the open at i,
	// strings inside skipped.
	skipTo := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; c {
			case '"', '\'', '`':
				i = skipString(expr, i) - 1
			case open:
				depth++
			case close:
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(expr)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{':
			i = skipTo(i, '{', '}')
		case c == '[':
			i = skipTo(i, '[', ']')
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration (5m, 1e3, 0x1f).
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			next := skipSpace(j)
			i = j
			switch {
			case labelLists[strings.ToLower(word)]:
				if next < len(expr) && expr[next] == '(' {
					i = skipTo(next, '(', ')')
				}
			case promqlWords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// A function call.
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job=~"frontend|worker"} == 0`, []string{"up"}},
		{`sum by (job, le) (rate(a_bucket{x="}{[", y!~'b(c)'}[5m])) / on (job) group_left (instance) b_total offset 1h`, []string{"a_bucket", "b_total"}},
		{`histogram_quantile(0.99, sum without(le) (rate(x_seconds_bucket[$__rate_interval:1m])))`, []string{"x_seconds_bucket"}},
		{"(sum(mcpfleet:operation_errors:rate5m) or vector(0)) / SUM BY(job) (foo) > bool 1e-3 and ON() bar unless baz # a comment: qux\n", []string{"mcpfleet:operation_errors:rate5m", "foo", "bar", "baz"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)") @ start()`, []string{"m"}},
		{`topk by (kind) (3, count_values("v", build_info)) + Inf - NaN`, []string{"build_info"}},
		{`sum(x) by (job)`, []string{"x"}},
	} {
		if got := metricNames(c.expr); !reflect.DeepEqual(got, c.want) {
			t.Errorf("metricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
	if got, err := substitute(`rate(x{job=~"$job",instance=~"${instance}"}[$__rate_interval])`); err != nil || got != `rate(x{job=~"frontend|worker",instance=~".*"}[1m])` {
		t.Errorf("substitute: %q, %v", got, err)
	}
	if _, err := substitute(`x{a="$nosuchvar"}`); err == nil {
		t.Error("substitute: an unknown variable was accepted")
	}
}

// promtoolBin is the promtool of Prometheus v3.16.0 (scripts/deps.sh).
func promtoolBin(tb testing.TB) string {
	tb.Helper()
	return testenv.FindBinary(tb, "promtool", "GOFLAGS= go install github.com/prometheus/prometheus/cmd/promtool@v0.316.0")
}

// promtool runs promtool with args and returns its output, and whether it
// exited 0.
func promtool(tb testing.TB, args ...string) (string, bool) {
	tb.Helper()
	out, err := exec.Command(promtoolBin(tb), args...).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		tb.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
	return string(out), err == nil
}

// checkRulesFile writes exprs as recording rules (named record_0, ... in
// the order of their sorted keys) into a rule file and runs promtool check
// rules on it: every expression must parse as PromQL.
func checkRulesFile(t *testing.T, exprs map[string]string) (string, bool) {
	t.Helper()
	keys := sortedKeys(exprs)
	var f struct {
		Groups []map[string]any `yaml:"groups"`
	}
	var rules []map[string]string
	for i, k := range keys {
		rules = append(rules, map[string]string{"record": fmt.Sprintf("record_%d", i), "expr": exprs[k]})
	}
	f.Groups = append(f.Groups, map[string]any{"name": "exprs", "rules": rules})
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "exprs.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, ok := promtool(t, "check", "rules", "--lint=none", path)
	if ok && !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", len(keys))) {
		t.Errorf("promtool check rules on %d expressions: %s", len(keys), out)
	}
	return out, ok
}
