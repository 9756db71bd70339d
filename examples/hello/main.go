// Command hello is the smallest useful mcpfleet server: one typed tool.
// `go run . serve` serves it on http://127.0.0.1:8080/mcp; `go run . -h`.
package main

import (
	"context"
	"log"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

type GreetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func greet(ctx context.Context, req *mcp.Request, in GreetIn) (*protocol.CallToolResult, any, error) {
	return mcp.TextResult("Hello, " + in.Name + "!"), nil, nil
}

func main() {
	srv := mcp.NewServer(protocol.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	if err := mcp.AddTool(srv, &protocol.Tool{Name: "greet", Description: "Greets someone by name"}, greet); err != nil {
		log.Fatal(err)
	}
	mcpfleet.Main(srv)
}
