package mcpgo

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DeleteIn is the input of delete_project.
type DeleteIn struct {
	Name string `json:"name" jsonschema:"the project to delete"`
}

// confirmSchema is the form the user fills in.
var confirmSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "title": "Delete it?"}},
	"required":   []string{"confirm"},
}

// AddElicitationTool registers delete_project, which deletes only once the
// user confirmed. It is written as a multi-round handler
// (InputRequestBuilder, then InputResponses on the retry), which mcp-go
// serves in both eras: a 2026-07-28 client retries the call itself; for a
// 2025-11-25 session mcp-go sends elicitation/create and calls the handler
// again. The blocking s.RequestElicitation works on 2025-11-25 sessions
// only.
func AddElicitationTool(s *server.MCPServer, projects Projects) {
	s.AddTool(mcp.NewTool("delete_project", mcp.WithDescription("Deletes a project, once the user confirms"),
		mcp.WithInputSchema[DeleteIn]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in DeleteIn) (*mcp.CallToolResult, error) {
			answer := server.ElicitationResponse(req.Params.InputResponses, "confirm")
			if answer == nil {
				return server.NewInputRequestBuilder("").Elicit("confirm", mcp.ElicitationParams{
					Message: "Delete the project " + in.Name + "?", RequestedSchema: confirmSchema,
				}).ToolResult(), nil
			}
			content, _ := answer.Content.(map[string]any)
			if answer.Action != mcp.ElicitationResponseActionAccept || content["confirm"] != true {
				return mcp.NewToolResultText("kept " + in.Name), nil
			}
			if err := projects.Delete(ctx, in.Name); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText("deleted " + in.Name), nil
		}))
}
