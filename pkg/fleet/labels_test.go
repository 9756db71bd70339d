package fleet_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/fleet"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The view names a request's target by the union of the live pools'
// catalogs: a tool or prompt it offers, a static resource's URI, the
// template a URI matches; nothing else. Changing the pools changes the
// answers (the cache goes with the snapshot).
func TestViewLabels(t *testing.T) {
	e := startBus(t)
	v := newView(t, connect(t, e, "fe"), fleet.ViewOptions{StartWait: -1})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if v.HasTool("echo") {
		t.Fatal("a tool before any pool")
	}
	cat := tools("echo")
	cat.Resources = []*protocol.Resource{{URI: "test://static", Name: "static"}}
	cat.Templates = []*protocol.ResourceTemplate{{URITemplate: "test://item/{id}", Name: "item"}}
	cat.Prompts = []*protocol.Prompt{{Name: "greet"}}
	a := serve(t, connect(t, e, "w1"), "w1", cat, time.Second)
	testutil.Poll(t, "the pool", func() bool { return v.HasTool("echo") })

	if !v.HasPrompt("greet") || v.HasPrompt("echo") || v.HasTool("greet") || v.HasTool("nope") {
		t.Error("HasTool/HasPrompt do not follow the catalog")
	}
	for uri, want := range map[string]string{
		"test://static": "test://static", "test://item/7": "test://item/{id}", "test://item/8": "test://item/{id}",
		"test://item/{id}": "test://item/{id}", "test://other": "", "": "",
	} {
		for range 2 { // the second answer is the cached one
			got, ok := v.ResourceLabel(uri)
			if got != want || ok != (want != "") {
				t.Errorf("ResourceLabel(%q) = %q, %v; want %q", uri, got, ok, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { v.ResourceLabel("test://item/7") }); n != 0 {
		t.Errorf("a cached ResourceLabel allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { v.HasTool("echo"); v.ResourceLabel("test://static") }); n != 0 {
		t.Errorf("HasTool and a static ResourceLabel allocate %v times", n)
	}

	// The pool changes: the old template no longer names anything.
	cat2 := tools("echo")
	cat2.Templates = []*protocol.ResourceTemplate{{URITemplate: "test://doc/{name}", Name: "doc"}}
	raw := mustJSON(t, cat2)
	if err := a.Serve(cat2.Hash(), raw); err != nil {
		t.Fatal(err)
	}
	a.Announce(nil)
	testutil.Poll(t, "the new catalog", func() bool { _, ok := v.ResourceLabel("test://doc/x"); return ok })
	if l, ok := v.ResourceLabel("test://item/7"); ok {
		t.Errorf("a URI of a template gone: %q", l)
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
