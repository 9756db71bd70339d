package sessionstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// A request id is claimed while its request runs: a client that reuses it
// meanwhile is refused, in the session's terms.
func ExampleMemory_Begin() {
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

	// The JSON form of the JSON-RPC id, and a token of this request.
	const requestID, token = `"req-1"`, "frontend-a/1"
	if _, err := store.Begin(ctx, id, requestID, token, time.Minute); err != nil {
		panic(err)
	}
	// The same id again while the request runs.
	s, err := store.Begin(ctx, id, requestID, "frontend-b/7", time.Minute)
	fmt.Println("in flight:", errors.Is(err, sessionstore.ErrInFlight), "protocol:", s.ProtocolVersion)

	// The request is answered: the id may be used again.
	if err := store.End(ctx, id, requestID, token); err != nil {
		panic(err)
	}
	_, err = store.Begin(ctx, id, requestID, "frontend-b/8", time.Minute)
	fmt.Println("after End:", err)
	// Output:
	// in flight: true protocol: 2025-11-25
	// after End: <nil>
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
