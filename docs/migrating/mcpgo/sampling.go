package mcpgo

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// SummarizeIn is the input of summarize.
type SummarizeIn struct {
	Text string `json:"text" jsonschema:"the text to summarize"`
}

// AddSamplingTool registers summarize, which asks the client's model with
// a server-to-client request: 2025-11-25 sessions only (mcp-go refuses it
// for a 2026-07-28 client, ErrServerInitiatedRequestUnsupported; see
// AddElicitationTool for the form that serves both).
func AddSamplingTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("summarize", mcp.WithDescription("Summarizes a text with the client's model"),
		mcp.WithInputSchema[SummarizeIn]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in SummarizeIn) (*mcp.CallToolResult, error) {
			res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				MaxTokens: 200,
				Messages: []mcp.SamplingMessage{
					{Role: mcp.RoleUser, Content: mcp.NewTextContent("Summarize in one sentence:\n\n" + in.Text)},
				},
			}})
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			text, _ := res.Content.(mcp.TextContent)
			return mcp.NewToolResultText(text.Text), nil
		}))
}
