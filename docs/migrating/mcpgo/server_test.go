package mcpgo_test

import (
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/mcpfleet/mcpfleet/docs/migrating/internal/sdkclient"
	"github.com/mcpfleet/mcpfleet/docs/migrating/mcpgo"
)

// TestServer checks what the guide says of the mcp-go version, in each era.
func TestServer(t *testing.T) {
	projects := &sdkclient.Projects{}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(mcpgo.NewServer(projects)))
	t.Cleanup(ts.Close)

	w := sdkclient.Want{
		Elicitation:       true,   // multi-round input, bridged for 2025-11-25 sessions
		PromptArgsChecked: false,  // the handler runs without its required argument
		NotFoundCode:      -32603, // any handler error is an internal error
	}
	legacy, modern := w, w
	legacy.Version, legacy.Sampling = "2025-11-25", true
	modern.Version = "2026-07-28" // the blocking RequestSampling is refused
	sdkclient.Run(t, ts.URL, projects, map[string]sdkclient.Want{"legacy": legacy, "modern": modern})
}
