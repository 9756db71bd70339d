package gosdk

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SummarizeIn is the input of summarize.
type SummarizeIn struct {
	Text string `json:"text" jsonschema:"the text to summarize"`
}

// AddSamplingTool registers summarize, which asks the client's model with
// a server-to-client request: 2025-11-25 sessions only (the go-sdk
// refuses it on a 2026-07-28 session; see AddElicitationTool for the form
// that serves both).
func AddSamplingTool(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "summarize", Description: "Summarizes a text with the client's model"},
		func(ctx context.Context, req *mcp.CallToolRequest, in SummarizeIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 200,
				Messages: []*mcp.SamplingMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Summarize in one sentence:\n\n" + in.Text}},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			text, _ := res.Content.(*mcp.TextContent)
			if text == nil {
				text = &mcp.TextContent{}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{text}}, nil, nil
		})
}
