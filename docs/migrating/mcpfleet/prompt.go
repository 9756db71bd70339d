package mcpfleet

import (
	"context"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// AddPrompt registers code_review, with one required argument.
func AddPrompt(srv *mcp.Server) error {
	return srv.AddPrompt(&protocol.Prompt{Name: "code_review", Description: "Asks for a review of some code",
		Arguments: []*protocol.PromptArgument{{Name: "code", Description: "the code to review", Required: true}}},
		func(ctx context.Context, req *mcp.Request, args map[string]string) (*protocol.GetPromptResult, error) {
			// A missing required argument is refused before the handler runs.
			return &protocol.GetPromptResult{Messages: []*protocol.PromptMessage{
				{Role: "user", Content: &protocol.TextContent{Text: "Please review this code:\n\n" + args["code"]}},
			}}, nil
		})
}
