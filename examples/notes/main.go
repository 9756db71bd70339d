// Command notes is a realistic mcpfleet server: notes with typed tools, a
// resource template with subscriptions, a prompt with completion,
// elicitation before a destructive action, sampling, progress on a long
// tool and per-tool logging middleware.
//
// The notes live in Redis (--notes-redis-url) so that every worker of a
// cluster serves the same notes: any request may land on any worker, and
// a multi-round request's retry on another one. Without it they live in
// this process's memory, which suits `notes serve` and `notes stdio`.
//
//	go run . serve                                  # the all-in-one on 127.0.0.1:8080
//	go run . worker --notes-redis-url redis://...   # one of a cluster's workers
package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

func main() {
	var (
		redisURL string
		redis    *RedisStore
	)
	app := &mcpfleet.App{
		Name: "notes",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&redisURL, "notes-redis-url", "", "Redis holding the notes, shared by every worker (empty: this process's memory)")
		},
		NewServer: func() (*mcp.Server, error) {
			var store Store = NewMemoryStore()
			if redisURL != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				rs, err := OpenRedisStore(ctx, redisURL)
				if err != nil {
					return nil, err
				}
				store, redis = rs, rs
			} else {
				slog.Info("notes live in this process's memory; set --notes-redis-url when running several workers")
			}
			return newServer(store, slog.Default())
		},
		// After the drain: the last requests' writes are done.
		Close: func() error {
			if redis == nil {
				return nil
			}
			return redis.Close()
		},
	}
	app.Main()
}
