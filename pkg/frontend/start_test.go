package frontend

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// Start returns ctx.Err() when its context is done, and leaves nothing
// subscribed.
func TestStartHonoursContext(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	nc, err := e.Connect("fe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	f, err := New(bus.NATS(nc), Options{Store: store, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v", err)
	}
	if n := nc.NumSubscriptions(); n != 0 {
		t.Fatalf("%d subscriptions left after a failed Start", n)
	}
}
