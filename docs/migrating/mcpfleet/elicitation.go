package mcpfleet

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// DeleteIn is the input of delete_project.
type DeleteIn struct {
	Name string `json:"name" jsonschema:"the project to delete"`
}

// confirmSchema is the form the user fills in.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete it?"}},"required":["confirm"]}`)

// AddElicitationTool registers delete_project, which deletes only once the
// user confirmed.
func AddElicitationTool(srv *mcp.Server, projects Projects) error {
	return mcp.AddTool(srv, &protocol.Tool{Name: "delete_project", Description: "Deletes a project, once the user confirms"},
		func(ctx context.Context, req *mcp.Request, in DeleteIn) (*protocol.CallToolResult, any, error) {
			res, err := req.Elicit(ctx, &protocol.ElicitParams{Message: "Delete the project " + in.Name + "?", RequestedSchema: confirmSchema})
			if errors.Is(err, mcp.ErrCapability) {
				return mcp.ToolError("this client cannot ask the user (no elicitation capability)"), nil, nil
			}
			if err != nil {
				return nil, nil, err // mcp.ErrInputRequired ends a 2026-07-28 round: the retry runs this again
			}
			if res.Action != protocol.ElicitAccept || res.Content["confirm"] != true {
				return mcp.TextResult("kept " + in.Name), nil, nil
			}
			// The side effect comes after the input it depends on: it runs
			// once, in the round that has the answer.
			if err := projects.Delete(ctx, in.Name); err != nil {
				return nil, nil, err
			}
			return mcp.TextResult("deleted " + in.Name), nil, nil
		})
}
