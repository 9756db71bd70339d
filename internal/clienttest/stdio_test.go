package clienttest

import (
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// TestStdioTSClient runs the official TypeScript SDK client against
// `mcpfleet stdio` started by its StdioClientTransport: list tools, echo,
// sleep with progress, and a sampling request answered by the client.
func TestStdioTSClient(t *testing.T) {
	t.Parallel()
	e := requireNode(t)
	bin := filepath.Join(testenv.Binaries(t), "mcpfleet")
	runScript(t, e, "ts-stdio.mjs", "ts-sdk-v1-stdio", pkgTSv1, bin, "legacy",
		[]string{"connect", "tools-list", "echo", "sleep-progress", "sampling", "close"})
}
