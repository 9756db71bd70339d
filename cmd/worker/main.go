// Command worker is mcpfleet's example worker: it serves the demo tools
// (echo, sleep, touch_resource, progress_steady) and, with --fixture
// conformance, the official conformance suite's fixture, taking requests
// from NATS. It is mcpfleet.App with the worker role as its default:
// `worker -h` lists the flags, `worker serve` runs the all-in-one.
package main

import (
	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

func main() {
	var fix fixture.Flag
	app := &mcpfleet.App{
		Name:      "worker",
		Default:   "worker",
		Version:   mcpfleet.Version,
		Flags:     fix.Register,
		NewServer: func() (*mcp.Server, error) { return fixture.NewExampleServer(fix.Name, mcpfleet.Version, nil) },
	}
	app.Main()
}
