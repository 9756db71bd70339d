package mcpfleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpfleet/mcpfleet/docs/migrating/internal/sdkclient"
	fleetdocs "github.com/mcpfleet/mcpfleet/docs/migrating/mcpfleet"
)

// TestServer serves the mcpfleet version (the all-in-one, mounted on a
// router by Mount) and calls every tool, resource and prompt with the
// go-sdk client in each era: everything works in both, on one endpoint.
func TestServer(t *testing.T) {
	projects := &sdkclient.Projects{}
	srv, err := fleetdocs.NewServer(projects)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	h, err := fleetdocs.Mount(t.Context(), mux, srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })

	all := sdkclient.Want{Sampling: true, Elicitation: true, AllProgress: true, PromptArgsChecked: true}
	legacy, modern := all, all
	legacy.Version, legacy.NotFoundCode = "2025-11-25", -32002
	modern.Version, modern.NotFoundCode = "2026-07-28", -32602
	sdkclient.Run(t, ts.URL+"/mcp", projects, map[string]sdkclient.Want{"legacy": legacy, "modern": modern})
}
