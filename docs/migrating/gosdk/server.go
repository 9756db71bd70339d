// Package gosdk is the go-sdk version (github.com/modelcontextprotocol/go-sdk
// v1.8.0) of the server of docs/migrating.md: one function per topic, and
// NewServer registering them all.
package gosdk

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Projects is where the projects live.
type Projects interface {
	Delete(ctx context.Context, name string) error
}

// NewServer builds the server with every topic of the guide. The go-sdk's
// registration methods panic on a bad tool or schema rather than return
// an error.
func NewServer(projects Projects) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "projects", Version: "1.0.0"}, nil)
	AddTypedTool(srv)
	AddResources(srv)
	AddPrompt(srv)
	AddSamplingTool(srv)
	AddElicitationTool(srv, projects)
	AddProgressTool(srv)
	return srv
}
