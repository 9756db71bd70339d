package gosdk_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpfleet/mcpfleet/docs/migrating/gosdk"
	"github.com/mcpfleet/mcpfleet/docs/migrating/internal/sdkclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServer checks what the guide says of the go-sdk version: its
// Streamable HTTP handler serves 2026-07-28 only when stateless, and
// stateless it sends no server-to-client requests.
func TestServer(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		projects := &sdkclient.Projects{}
		srv := gosdk.NewServer(projects)
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: stateless}))
		t.Cleanup(ts.Close)
		base := sdkclient.Want{
			PromptArgsChecked: false, // the handler runs without its required argument
			NotFoundCode:      -32602,
		}
		want := map[string]sdkclient.Want{}
		if !stateless {
			// Sessions: everything works, but a 2026-07-28 client is
			// negotiated down to 2025-11-25.
			w := base
			w.Version, w.Sampling, w.Elicitation, w.AllProgress = "2025-11-25", true, true, true
			want["legacy"], want["modern"] = w, w
		} else {
			w := base
			w.Version = "2025-11-25" // no server-to-client requests
			want["legacy"] = w
			w.Version, w.Elicitation = "2026-07-28", true // multi-round input; the blocking CreateMessage is refused
			want["modern"] = w
		}
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			sdkclient.Run(t, ts.URL, projects, want)
		})
	}
}
