package clienttest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// What the conformance fixture and the protocol promise; the TypeScript
// scripts use the same values (tools/clients/scenarios.mjs).
const (
	legacyVersion  = "2025-11-25"
	modernVersion  = "2026-07-28"
	expectedServer = "mcp-conformance-test-server"
	rootURI        = "file:///tmp/mcpfleet-client-root"
	watchedURI     = "test://watched-resource"
	logLevelKey    = "io.modelcontextprotocol/logLevel"
)

// The scenarios every client runs, by era. The TypeScript scripts and the
// Go SDK run use the same names.
var (
	commonScenarios = []string{
		"connect", "list_tools", "list_prompts", "list_resources", "list_resource_templates",
		"call_echo", "progress_sleep", "progress_tool", "logging", "read_static", "read_template",
		"resource_updated", "tools_list_changed", "cancel_sleep", "prompt_with_args", "completion",
	}
	legacyOnlyScenarios = []string{"ping", "sampling", "elicitation", "session_delete"}
	modernOnlyScenarios = []string{
		"logging_setlevel_rejected", "discover",
		"mrtr_elicitation", "mrtr_sampling", "mrtr_list_roots", "mrtr_multi_round", "mrtr_multiple_inputs",
		"auto_negotiation",
	}
)

// scenariosFor returns the scenario names a client runs in era (legacy,
// or a modern era: modern, auto).
func scenariosFor(era string) []string {
	out := append([]string(nil), commonScenarios...)
	if era == "legacy" {
		return append(out, legacyOnlyScenarios...)
	}
	return append(out, modernOnlyScenarios...)
}

// report collects every client run of one deployment for the closing
// matrix.
type report struct {
	mu   sync.Mutex
	runs []*clientRun
}

func (r *report) add(run *clientRun) {
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
}

func (r *report) result(run *clientRun, res scenarioResult) {
	r.mu.Lock()
	run.Results = append(run.Results, res)
	r.mu.Unlock()
}

// matrix renders one line per client run: client, version, era, passed of
// reported scenarios, and the failed ones.
func (r *report) matrix(deployment string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	runs := append([]*clientRun(nil), r.runs...)
	sort.SliceStable(runs, func(i, j int) bool {
		if runs[i].Client != runs[j].Client {
			return runs[i].Client < runs[j].Client
		}
		return runs[i].Era < runs[j].Era
	})
	var b strings.Builder
	fmt.Fprintf(&b, "client matrix against the %s:\n", deployment)
	fmt.Fprintf(&b, "  %-14s %-8s %-7s %s\n", "client", "version", "era", "scenarios")
	total, passed := 0, 0
	for _, run := range runs {
		ok := 0
		var failed []string
		for _, res := range run.Results {
			if res.OK {
				ok++
			} else {
				failed = append(failed, res.Scenario)
			}
		}
		total += len(run.Results)
		passed += ok
		line := fmt.Sprintf("  %-14s %-8s %-7s %d/%d passed", run.Client, run.Version, run.Era, ok, len(run.Results))
		if len(failed) > 0 {
			line += "; failed: " + strings.Join(failed, ", ")
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "  total: %d/%d scenarios passed", passed, total)
	return b.String()
}

// logMatrix logs the matrix when the test (and its subtests) are done.
func (r *report) logMatrix(t *testing.T, deployment string) {
	t.Cleanup(func() { t.Log(r.matrix(deployment)) })
}
