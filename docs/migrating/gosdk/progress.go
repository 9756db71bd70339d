package gosdk

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReindexIn is the input of reindex.
type ReindexIn struct {
	Steps int `json:"steps" jsonschema:"how many steps to take"`
}

// AddProgressTool registers reindex, a long tool reporting its progress.
func AddProgressTool(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "reindex", Description: "Rebuilds the index, reporting progress"},
		func(ctx context.Context, req *mcp.CallToolRequest, in ReindexIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken() // nil when the client asked for no progress
			for i := 1; i <= in.Steps; i++ {
				if err := rebuild(ctx, i); err != nil {
					return nil, nil, err
				}
				if token == nil {
					continue
				}
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d of %d", i, in.Steps),
				})
				if err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("reindexed in %d steps", in.Steps)}}}, nil, nil
		})
}

// rebuild stands for one step of real work; it stops when ctx ends.
func rebuild(ctx context.Context, step int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}
