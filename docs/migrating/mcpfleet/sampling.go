package mcpfleet

import (
	"context"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// SummarizeIn is the input of summarize.
type SummarizeIn struct {
	Text string `json:"text" jsonschema:"the text to summarize"`
}

// AddSamplingTool registers summarize, which asks the client's model.
func AddSamplingTool(srv *mcp.Server) error {
	return mcp.AddTool(srv, &protocol.Tool{Name: "summarize", Description: "Summarizes a text with the client's model"},
		func(ctx context.Context, req *mcp.Request, in SummarizeIn) (*protocol.CallToolResult, any, error) {
			res, err := req.Sample(ctx, &protocol.CreateMessageParams{
				MaxTokens: 200,
				Messages: []*protocol.SamplingMessage{{Role: "user", Content: protocol.SingleOrList{Blocks: []protocol.Content{
					&protocol.TextContent{Text: "Summarize in one sentence:\n\n" + in.Text},
				}}}},
			})
			if err != nil {
				return nil, nil, err // mcp.ErrInputRequired on a 2026-07-28 first round: return it as it is
			}
			var parts []string
			for _, b := range res.Content.Blocks {
				if t, ok := b.(*protocol.TextContent); ok {
					parts = append(parts, t.Text)
				}
			}
			return mcp.TextResult(strings.Join(parts, "\n")), nil, nil
		})
}
