package mcpfleet

import (
	"context"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// AddResources registers a resource and a resource template.
func AddResources(srv *mcp.Server) error {
	err := srv.AddResource(&protocol.Resource{URI: "projects://index", Name: "index", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{
				{URI: uri, MimeType: "text/plain", Text: "alpha\nbeta"},
			}}, nil
		})
	if err != nil {
		return err
	}
	return srv.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "projects://{name}/readme", Name: "readme", MimeType: "text/markdown"},
		func(ctx context.Context, req *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
			name := vars["name"] // the template's variables, already matched
			if strings.HasPrefix(name, "_") {
				return nil, mcp.ErrResourceNotFound // the era's resource-not-found error, with data.uri
			}
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{
				{URI: uri, MimeType: "text/markdown", Text: "# " + name},
			}}, nil
		})
}
