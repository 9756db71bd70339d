package mcpgo

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ReindexIn is the input of reindex.
type ReindexIn struct {
	Steps int `json:"steps" jsonschema:"how many steps to take"`
}

// AddProgressTool registers reindex, a long tool reporting its progress.
func AddProgressTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("reindex", mcp.WithDescription("Rebuilds the index, reporting progress"),
		mcp.WithInputSchema[ReindexIn]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in ReindexIn) (*mcp.CallToolResult, error) {
			var token mcp.ProgressToken // nil when the client asked for no progress
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= in.Steps; i++ {
				if err := rebuild(ctx, i); err != nil {
					return nil, err
				}
				if token == nil {
					continue
				}
				err := s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": i, "total": in.Steps, "message": fmt.Sprintf("step %d of %d", i, in.Steps),
				})
				if err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("reindexed in %d steps", in.Steps)), nil
		}))
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
