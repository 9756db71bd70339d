// Command worker is mcpfleet's example worker: it serves the demo tools
// (echo, sleep, touch_resource) and, with --fixture conformance, the
// official conformance suite's fixture, taking requests from NATS.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/app"
)

func main() {
	c, err := app.Parse(app.RoleWorker, "worker", os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.RunWorker(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
