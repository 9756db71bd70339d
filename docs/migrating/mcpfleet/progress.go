package mcpfleet

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// ReindexIn is the input of reindex.
type ReindexIn struct {
	Steps int `json:"steps" jsonschema:"how many steps to take"`
}

// AddProgressTool registers reindex, a long tool reporting its progress.
func AddProgressTool(srv *mcp.Server) error {
	return mcp.AddTool(srv, &protocol.Tool{Name: "reindex", Description: "Rebuilds the index, reporting progress"},
		func(ctx context.Context, req *mcp.Request, in ReindexIn) (*protocol.CallToolResult, any, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := rebuild(ctx, i); err != nil { // ctx ends when the client cancels or the process drains
					return nil, nil, err
				}
				// A no-op when the client sent no progressToken.
				if err := req.Progress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps)); err != nil {
					return nil, nil, err
				}
			}
			return mcp.TextResult(fmt.Sprintf("reindexed in %d steps", in.Steps)), nil, nil
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
