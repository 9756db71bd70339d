package mcpgo

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// AddResources registers a resource and a resource template.
func AddResources(s *server.MCPServer) {
	s.AddResource(mcp.NewResource("projects://index", "index", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{
				mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "alpha\nbeta"},
			}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("projects://{name}/readme", "readme", mcp.WithTemplateMIMEType("text/markdown")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			// The matched variables arrive in Params.Arguments, each a []string.
			parts, _ := req.Params.Arguments["name"].([]string)
			name := strings.Join(parts, ",")
			if name == "" || strings.HasPrefix(name, "_") {
				// Any handler error is sent as -32603 (internal error) with its message.
				return nil, fmt.Errorf("%s: %w", req.Params.URI, server.ErrResourceNotFound)
			}
			return []mcp.ResourceContents{
				mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# " + name},
			}, nil
		})
}
