package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestWorkerPools runs workers that serve different subsets: the lists are
// the union of live workers (sorted), each request goes only to a worker
// that serves it, and a pool joining or leaving raises list_changed to
// every listener by itself.
func TestWorkerPools(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 1, NoFixture: true,
		WorkerArgs: []string{"--tools", "echo,sleep", "--prompts", "none", "--resources", "none"}})
	// A second pool: the conformance fixture's test_* tools and its
	// prompts and resources.
	fixture := testenv.StartWorker(t, c.NATSURL, "--fixture", "conformance", "--tools", "test_*")

	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)
	tools := listTools(t, cl)
	if !slices.IsSorted(tools) || !slices.Contains(tools, "echo") || !slices.Contains(tools, "test_simple_text") ||
		slices.Contains(tools, "touch_resource") || slices.Contains(tools, "json_schema_2020_12_tool") {
		t.Fatalf("the union of the pools: %v", tools)
	}
	// Each tool runs on the worker that serves it.
	if r := cl.Call(2, "tools/call", callParams("test_simple_text", nil)); !strings.Contains(string(r), "simple text") {
		t.Fatalf("test_simple_text: %s", r)
	}
	if r := cl.Call(3, "tools/call", callParams("echo", map[string]any{"text": "pooled"})); !strings.Contains(string(r), "pooled") {
		t.Fatalf("echo: %s", r)
	}
	if r := cl.Post(testenv.Request(4, "tools/call", callParams("touch_resource", map[string]any{"uri": "x"})), nil); r.ErrorCode() != -32602 {
		t.Fatalf("a tool no pool serves: %s", r)
	}
	// Resources are read from the pool that has them.
	if r := cl.Call(5, "resources/read", map[string]any{"uri": "test://template/7/data"}); !strings.Contains(string(r), "Data for ID: 7") {
		t.Fatalf("templated read: %s", r)
	}

	// Listeners of both eras on both frontends.
	g := cl.OpenGet(nil)
	mc := testenv.NewModernClient(t, c.URLs...)
	l, _ := openListen(t, mc, "pools", map[string]any{"toolsListChanged": true})

	// The fixture pool leaves: its tools go, and everybody is told.
	fixture.Stop(10 * time.Second)
	waitMethod(t, g, "notifications/tools/list_changed", "GET stream after a pool left")
	waitMethod(t, l, "notifications/tools/list_changed", "listen stream after a pool left")
	assertQuiet(t, l, "the tools-only listen stream (nothing but tools changes)")
	if tools := listTools(t, cl); slices.Contains(tools, "test_simple_text") || !slices.Contains(tools, "echo") {
		t.Fatalf("after the fixture pool left: %v", tools)
	}
	if r := cl.Post(testenv.Request(6, "tools/call", callParams("test_simple_text", nil)), nil); r.ErrorCode() != -32602 {
		t.Fatalf("a tool of the pool that left: %s", r)
	}

	// A new pool joins: its tools appear, and everybody is told.
	testenv.StartWorker(t, c.NATSURL, "--tools", "touch_resource", "--prompts", "none", "--resources", "none")
	waitMethod(t, g, "notifications/tools/list_changed", "GET stream after a pool joined")
	waitMethod(t, l, "notifications/tools/list_changed", "listen stream after a pool joined")
	if tools := listTools(t, cl); !slices.Contains(tools, "touch_resource") {
		t.Fatalf("after a pool joined: %v", tools)
	}
	cl.Call(7, "tools/call", callParams("touch_resource", map[string]any{"uri": "test://x"}))

	// A worker killed without leaving is forgotten after three heartbeats.
	c.Workers[0].Kill()
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "a killed worker's tools to leave the list", func() bool { return !slices.Contains(listTools(t, cl), "echo") })
}

func listTools(t *testing.T, c *testenv.Client) []string {
	t.Helper()
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(c.Call(1, "tools/list", nil), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// waitMethod reads a stream until a message with method arrives; other
// list_changed kinds on the way are skipped.
func waitMethod(t *testing.T, s *testenv.Stream, method, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, m := s.NextMessage(t, time.Until(deadline))
		if m.Method == method {
			return
		}
		if !strings.HasSuffix(m.Method, "/list_changed") {
			t.Fatalf("%s: got %s while waiting for %s", what, m.Method, method)
		}
	}
}
