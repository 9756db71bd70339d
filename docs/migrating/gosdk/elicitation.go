package gosdk

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// user confirmed. It is written as a multi-round handler (InputRequests,
// then InputResponses on the retry), which the go-sdk serves to both eras:
// a 2026-07-28 client (of a stateless handler) retries the call itself; on
// a 2025-11-25 session (of a stateful handler) the SDK sends
// elicitation/create and calls the handler again. The blocking
// req.Session.Elicit works on 2025-11-25 sessions only.
func AddElicitationTool(srv *mcp.Server, projects Projects) {
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_project", Description: "Deletes a project, once the user confirms"},
		func(ctx context.Context, req *mcp.CallToolRequest, in DeleteIn) (*mcp.CallToolResult, any, error) {
			answer, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"confirm": &mcp.ElicitParams{Message: "Delete the project " + in.Name + "?", RequestedSchema: confirmSchema},
				}}, nil, nil
			}
			if answer.Action != "accept" || answer.Content["confirm"] != true {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kept " + in.Name}}}, nil, nil
			}
			if err := projects.Delete(ctx, in.Name); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.Name}}}, nil, nil
		})
}
