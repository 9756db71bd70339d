// Command frontend runs an mcpfleet HTTP frontend: it holds client
// connections and streams and forwards every request over NATS to the
// workers; sessions live in Redis. Run any number behind a load balancer,
// no affinity needed.
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
	c, err := app.Parse(app.RoleFrontend, "frontend", os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.RunFrontend(ctx, c, nil); err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(1)
	}
}
