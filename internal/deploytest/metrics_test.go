package deploytest

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsExported: every metric a rule of deploy/prometheus/rules.yml
// or a query of the dashboard names is one the binaries export. The names
// are read from the expressions (metricNames; recording rules and up
// aside), the exported ones from /metrics of a real `mcpfleet serve` (the
// all-in-one serves the metrics of both roles) on Redis, with an embedded
// NATS server other processes may join (--nats-listen: the NATS client
// statistics exist only on a NATS bus), after it handled
// a tools/call, a prompts/get, a resources/read, a GET stream with a
// resource update fanned out to it, and a failed store call. A histogram
// must be named by its series (_bucket, _sum, _count), any other metric by
// its own name.
func TestMetricsExported(t *testing.T) {
	used := map[string][]string{} // metric → where it is named
	f := readRules(t)
	records := f.recordNames()
	note := func(where, expr string) {
		for _, n := range metricNames(expr) {
			if !records[n] && n != "up" && !slices.Contains(used[n], where) {
				used[n] = append(used[n], where)
			}
		}
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			note("rules.yml "+r.Record+r.Alert, r.Expr)
		}
	}
	for where, e := range dashboardExprs(t, readDashboard(t)) {
		note("dashboard "+where, e)
	}
	if len(used) < 25 {
		t.Fatalf("only %d metric names read from the rules and the dashboard: %v", len(used), sortedKeys(used))
	}

	fams, admin := serveMetrics(t, func(fams map[string]string) bool {
		return len(missingMetrics(used, fams)) == 0
	})
	missing := missingMetrics(used, fams)
	if len(missing) == 0 {
		t.Logf("all %d metrics the rules and the dashboard name are exported", len(used))
		return
	}
	var b strings.Builder
	for _, m := range missing {
		fmt.Fprintf(&b, "  %s\n", m)
	}
	t.Errorf("%d of the %d metrics the rules and the dashboard name are not on http://%s/metrics of mcpfleet serve "+
		"(a vector is exported once it has a series: a binary must create the series of its bounded label values up front):\n%s"+
		"it exports: %s", len(missing), len(used), admin, b.String(), strings.Join(sortedKeys(fams), " "))
}

// missingMetrics lists the names of used that fams (family name → type)
// does not export, each with where it is named.
func missingMetrics(used map[string][]string, fams map[string]string) []string {
	var missing []string
	for _, name := range sortedKeys(used) {
		why := ""
		if typ, ok := fams[name]; ok {
			if typ == "HISTOGRAM" || typ == "SUMMARY" {
				why = "a " + strings.ToLower(typ) + " named without _bucket, _sum or _count"
			}
		} else {
			why = "not exported"
			base := trimHistogramSuffix(name)
			if typ, ok := fams[base]; ok && base != name {
				if typ == "HISTOGRAM" || (typ == "SUMMARY" && !strings.HasSuffix(name, "_bucket")) {
					why = ""
				} else {
					why = fmt.Sprintf("%s is a %s: it has no %s series", base, strings.ToLower(typ), strings.TrimPrefix(name, base))
				}
			}
		}
		if why != "" {
			missing = append(missing, fmt.Sprintf("%s: %s (named by %s)", name, why, strings.Join(used[name], "; ")))
		}
	}
	return missing
}

// serveMetrics runs `mcpfleet serve` with the conformance fixture (the
// demo tools and a prompt, resources, a resource template) on a real
// redis-server, drives it, and scrapes its admin port until done says the
// families are all there or the deadline passes; it returns the last
// scrape (family name → type: COUNTER, GAUGE, HISTOGRAM, ...) and the
// admin address.
func serveMetrics(t *testing.T, done func(map[string]string) bool) (map[string]string, string) {
	t.Helper()
	redisProc, redisURL := testenv.StartRedisServer(t)
	admin := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	// --nats-listen: the embedded NATS server (serve without it runs on
	// the in-process bus, which has no NATS client statistics).
	natsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	_, url := testenv.StartMCPFleet(t, "--fixture", "conformance", "--admin-listen", admin, "--redis-url", redisURL,
		"--nats-listen", natsAddr, "--log-format", "text")

	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	g := c.OpenGet(nil)
	defer g.Close()
	call := func(id int, name string, args map[string]any) {
		t.Helper()
		c.Call(id, "tools/call", map[string]any{"name": name, "arguments": args})
	}
	call(1, "echo", map[string]any{"text": "metrics"})
	c.Call(2, "prompts/get", map[string]any{"name": "test_simple_prompt"})
	c.Call(3, "resources/read", map[string]any{"uri": "test://template/7/data"})
	c.Call(4, "resources/read", map[string]any{"uri": "test://static-text"})
	// A resource update fanned out to the session's GET stream.
	const watched = "test://watched-resource"
	c.Call(5, "resources/subscribe", map[string]any{"uri": watched})
	call(6, "touch_resource", map[string]any{"uri": watched})
	deadline := time.Now().Add(testenv.HangGuard(10 * time.Second))
	for {
		_, m := g.NextMessage(t, time.Until(deadline))
		if m.Method == "notifications/resources/updated" {
			break
		}
	}
	// A 2026-07-28 request too (no session).
	modern := testenv.NewModernClient(t, url)
	callText(t, modern, true, "echo", map[string]any{"text": "modern"})
	// A failed store call: the session's next request with Redis gone;
	// Redis back before the end (serve drains on it).
	redisProc.Stop(5 * time.Second)
	if r := c.Post(testenv.Request(7, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "no store"}}), nil); r.Status == 200 && r.Response() != nil && r.Response().Error == nil {
		t.Logf("with Redis stopped, the session's request still succeeded: %s", r)
	}
	redisProc.Restart(t)

	// Every call above has returned, so its series are there; the wait
	// only covers what a frontend records just after answering.
	var fams map[string]string
	testutil.WaitFor(testenv.HangGuard(3*time.Second), func() bool {
		code, body := get(t, "http://"+admin+"/metrics")
		if code != 200 {
			t.Fatalf("GET http://%s/metrics: %d %s", admin, code, body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		parsed, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("http://%s/metrics does not parse: %v", admin, err)
		}
		fams = map[string]string{}
		for name, f := range parsed {
			fams[name] = f.GetType().String()
		}
		return done(fams)
	})
	return fams, admin
}
