package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// A server built without a Logger logs to slog.Default() as it is when
// the message is written: mcpfleet.Main sets the process logger after the
// program built its server.
func TestLoggerDefaultIsLate(t *testing.T) {
	s := mcp.NewServer(protocol.Implementation{Name: "t", Version: "1"}, nil)
	if err := s.AddTool(&protocol.Tool{Name: "boom"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		panic("kaboom")
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	req := mcp.NewRequest(&mcp.RequestInit{Method: protocol.MethodToolsCall, Era: protocol.EraLegacy})
	if _, err := s.Handle(context.Background(), req, json.RawMessage(`{"name":"boom"}`)); err == nil {
		t.Fatal("a panicking handler returned no error")
	}
	if !strings.Contains(buf.String(), "kaboom") {
		t.Errorf("the panic did not reach the default logger set after NewServer: %q", buf.String())
	}
}
