package sessionstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// A session's life in the memory store: created after a successful
// initialize, looked up by every request, replaying a stream on
// reconnection, and deleted.
func ExampleMemory() {
	ctx := context.Background()
	store, err := sessionstore.NewMemory(nil)
	if err != nil {
		panic(err)
	}
	defer store.Close(ctx)

	id := sessionstore.NewID()
	if err := store.Create(ctx, &sessionstore.Session{ID: id, ProtocolVersion: "2025-11-25", Initialized: true}); err != nil {
		panic(err)
	}
	s, err := store.Get(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("protocol:", s.ProtocolVersion)

	for _, msg := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		if _, err := store.AppendEvent(ctx, id, "get", []byte(msg)); err != nil {
			panic(err)
		}
	}
	// The client reconnects with Last-Event-ID naming index 1.
	events, err := store.EventsAfter(ctx, id, "get", 1)
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Printf("replay %d: %s\n", e.Index, e.Data)
	}

	if err := store.Delete(ctx, id); err != nil {
		panic(err)
	}
	_, err = store.Get(ctx, id)
	fmt.Println("after delete, not found:", errors.Is(err, sessionstore.ErrNotFound))
	// Output:
	// protocol: 2025-11-25
	// replay 2: {"n":2}
	// replay 3: {"n":3}
	// after delete, not found: true
}

// A Redis store shared by every frontend; OpenRedis fails fast, with a
// clear error, when the server is unreachable.
func ExampleOpenRedis() {
	ctx := context.Background()
	store, err := sessionstore.OpenRedis(ctx, "redis://127.0.0.1:6379/0", &sessionstore.RedisOptions{
		Options:   sessionstore.Options{TTL: sessionstore.DefaultTTL},
		KeyPrefix: "mcp",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close(ctx)
	if err := store.Ping(ctx); err != nil {
		fmt.Println(err)
	}
}
