// Package mcpgo is the mcp-go version (github.com/mark3labs/mcp-go v1.2.1)
// of the server of docs/migrating.md: one function per topic, and NewServer
// registering them all.
package mcpgo

import (
	"context"

	"github.com/mark3labs/mcp-go/server"
)

// Projects is where the projects live.
type Projects interface {
	Delete(ctx context.Context, name string) error
}

// NewServer builds the server with every topic of the guide.
func NewServer(projects Projects) *server.MCPServer {
	s := server.NewMCPServer("projects", "1.0.0",
		server.WithResourceCapabilities(false, true),
		server.WithPromptCapabilities(true),
		server.WithInputSchemaValidation(), // off by default: arguments reach the handler unchecked
	)
	AddTypedTool(s)
	AddResources(s)
	AddPrompt(s)
	AddSamplingTool(s)
	AddElicitationTool(s, projects)
	AddProgressTool(s)
	return s
}
