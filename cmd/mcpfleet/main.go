// Command mcpfleet is the all-in-one MCP server (frontend, worker, embedded
// NATS and an in-memory session store in one process) and mcpfleet's
// utility subcommands.
//
//	mcpfleet serve [flags]    run the all-in-one server (default)
//	mcpfleet bench [flags]    load and scale benchmarks (mcpfleet bench -h)
//	mcpfleet stdio [flags]    serve over stdin/stdout (for clients that spawn servers)
//	mcpfleet version
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
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		c, err := app.Parse(app.RoleAllInOne, "mcpfleet serve", args)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpfleet serve:", err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := app.RunAllInOne(ctx, c, nil); err != nil {
			fmt.Fprintln(os.Stderr, "mcpfleet:", err)
			os.Exit(1)
		}
	case "bench":
		os.Exit(runBench(args))
	case "stdio":
		os.Exit(runStdio(args))
	case "version":
		fmt.Println("mcpfleet", app.Version)
	case "help", "-h", "--help":
		fmt.Println("usage: mcpfleet [serve] [flags] | mcpfleet bench [flags] | mcpfleet stdio [flags] | mcpfleet version\nrun 'mcpfleet serve -h' for the flags")
	default:
		fmt.Fprintf(os.Stderr, "mcpfleet: unknown command %q (try: serve, bench, stdio, version)\n", cmd)
		os.Exit(2)
	}
}
