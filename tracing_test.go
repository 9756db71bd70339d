package mcpfleet_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// TestAppTracingEnv checks that every role refuses, as a usage error
// (status 2) naming the variable, an OTEL_* value it cannot follow, before
// it connects to anything.
func TestAppTracingEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	t.Setenv(mcpfleet.StateKeyEnv, base64.StdEncoding.EncodeToString(mcp.RandomStateKey()))
	for _, role := range []string{"serve", "frontend", "worker", "stdio"} {
		var errb bytes.Buffer
		app := &mcpfleet.App{Server: greeter(t), Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb}
		code := app.Run(context.Background(), []string{role})
		if code != 2 || !strings.Contains(errb.String(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a message naming OTEL_EXPORTER_OTLP_PROTOCOL", role, code, errb.String())
		}
	}
}
