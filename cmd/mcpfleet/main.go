// Command mcpfleet is the all-in-one MCP server (frontend, worker,
// embedded NATS and an in-memory session store in one process) with the
// demo tools, every other role of mcpfleet.App, and the load and scale
// benchmarks.
//
//	mcpfleet [serve] [flags]  run the all-in-one server (default)
//	mcpfleet worker [flags]   run a worker of a cluster
//	mcpfleet frontend [flags] run an HTTP frontend of a cluster
//	mcpfleet stdio [flags]    serve over stdin/stdout (for clients that spawn servers)
//	mcpfleet bench [flags]    load and scale benchmarks (mcpfleet bench -h)
//	mcpfleet version
package main

import (
	"context"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

func main() {
	var fix fixture.Flag
	app := &mcpfleet.App{
		Name:      "mcpfleet",
		Version:   mcpfleet.Version,
		Flags:     fix.Register,
		NewServer: func() (*mcp.Server, error) { return fixture.NewExampleServer(fix.Name, mcpfleet.Version, nil) },
		Commands: []mcpfleet.Command{{
			Name: "bench", Summary: "load and scale benchmarks against running servers (mcpfleet bench -h)",
			Run: func(_ context.Context, args []string) int { return runBench(args) },
		}},
	}
	app.Main()
}
