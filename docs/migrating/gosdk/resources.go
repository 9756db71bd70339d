package gosdk

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddResources registers a resource and a resource template.
func AddResources(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{URI: "projects://index", Name: "index", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: "alpha\nbeta"},
			}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "projects://{name}/readme", Name: "readme", MIMEType: "text/markdown"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			// The handler gets the URI only: it takes the variables out itself.
			name := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "projects://"), "/readme")
			if strings.HasPrefix(name, "_") {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# " + name},
			}}, nil
		})
}
