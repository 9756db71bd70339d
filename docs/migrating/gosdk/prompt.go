package gosdk

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddPrompt registers code_review, with one required argument.
func AddPrompt(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "code_review", Description: "Asks for a review of some code",
		Arguments: []*mcp.PromptArgument{{Name: "code", Description: "the code to review", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Please review this code:\n\n" + req.Params.Arguments["code"]}},
			}}, nil
		})
}
