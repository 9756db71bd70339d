// Package mcpfleet is the mcpfleet version of the server of
// docs/migrating.md: one function per topic, and NewServer registering them
// all. Packages gosdk and mcpgo hold the same server written with the
// go-sdk and mcp-go.
package mcpfleet

import (
	"context"
	"errors"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Projects is where the projects live. In a cluster any worker may serve
// any call (and a 2026-07-28 retry may land on another worker than the
// first round), so it is shared storage (a database, Redis), never a map in
// the worker's memory.
type Projects interface {
	Delete(ctx context.Context, name string) error
}

// NewServer builds the server with every topic of the guide.
func NewServer(projects Projects) (*mcp.Server, error) {
	srv := mcp.NewServer(protocol.Implementation{Name: "projects", Version: "1.0.0"}, nil)
	return srv, errors.Join(
		AddTypedTool(srv),
		AddResources(srv),
		AddPrompt(srv),
		AddSamplingTool(srv),
		AddElicitationTool(srv, projects),
		AddProgressTool(srv),
	)
}
