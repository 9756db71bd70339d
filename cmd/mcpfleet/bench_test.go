package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchReportChart: `mcpfleet bench report -svg FILE` writes the chart
// beside the report, and it is an SVG naming the configurations.
func TestBenchReportChart(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.jsonl")
	lines := []string{
		`{"kind":"load","label":"mcp-go","proto":"legacy","c":64,"ok":100,"rps":10000,"server":{"cpu_us_per_req":80}}`,
		`{"kind":"load","label":"mcpfleet-aio","proto":"legacy","c":64,"ok":100,"rps":11000,"features":"durable delivery on (always), tracing off, access log off","server":{"cpu_us_per_req":70}}`,
		`{"kind":"load","label":"mcpfleet-cluster-2fe2w","proto":"legacy","c":64,"ok":100,"rps":6000,"urls":["a","b"],"alternate":true,"server":{"cpu_us_per_req":200,"kinds":[{"kind":"frontend","cpu_us_per_req":100},{"kind":"worker","cpu_us_per_req":50}]},"redis":{"commands":300,"commands_per_req":3,"calls":{"evalsha":300}}}`,
	}
	if err := os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "chart.svg")
	if code := runBenchReport([]string{"-svg", chart, results}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("%v %v", err, doc.XMLName)
	}
	for _, s := range []string{"mcpfleet-aio", "mcpfleet-cluster-2fe2w", "mcp-go", "11,000"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("the chart lacks %q", s)
		}
	}
	if code := runBenchReport([]string{"-svg", filepath.Join(dir, "no", "such", "dir.svg"), results}); code != 1 {
		t.Errorf("an unwritable chart: exit %d", code)
	}
	if code := runBench([]string{"-pid", "frontend:x"}); code != 2 {
		t.Errorf("a bad -pid: exit %d", code)
	}
}
