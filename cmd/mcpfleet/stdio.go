package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/app"
)

// runStdio is `mcpfleet stdio`: the server's handlers over stdin/stdout
// for clients that start it as a subprocess. It exits when stdin ends.
func runStdio(args []string) int {
	c, err := app.Parse(app.RoleStdio, "mcpfleet stdio", args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfleet stdio:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.RunStdio(ctx, c, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "mcpfleet stdio:", err)
		return 1
	}
	return 0
}
