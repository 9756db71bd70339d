package mcpgo

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// AddPrompt registers code_review, with one required argument.
func AddPrompt(s *server.MCPServer) {
	s.AddPrompt(mcp.NewPrompt("code_review", mcp.WithPromptDescription("Asks for a review of some code"),
		mcp.WithArgument("code", mcp.ArgumentDescription("the code to review"), mcp.RequiredArgument())),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				{Role: mcp.RoleUser, Content: mcp.NewTextContent("Please review this code:\n\n" + req.Params.Arguments["code"])},
			}}, nil
		})
}
