package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

func TestInvalidOptions(t *testing.T) {
	nc := connect(t, startBus(t), "w")
	for name, o := range map[string]worker.Options{
		"negative DefaultTimeout":   {DefaultTimeout: -time.Second},
		"negative CallTimeout":      {CallTimeout: -time.Second},
		"negative AnnounceInterval": {AnnounceInterval: -time.Second},
		"negative AckTimeout":       {AckTimeout: -time.Second},
	} {
		if _, err := worker.New(bus.NATS(nc), newServer(), &o); !errors.Is(err, worker.ErrInvalidOptions) {
			t.Errorf("New with %s: %v", name, err)
		}
	}
	if _, err := worker.New(nil, newServer(), nil); !errors.Is(err, worker.ErrInvalidOptions) {
		t.Errorf("New without a connection: %v", err)
	}
	// Negative means off where off is meaningful.
	if _, err := worker.New(bus.NATS(nc), newServer(), &worker.Options{HeartbeatInterval: -1, MaxInFlight: -1}); err != nil {
		t.Errorf("New with heartbeats and the in-flight cap off: %v", err)
	}
}

// Start returns ctx.Err() when its context is done, and subscribes
// nothing.
func TestStartHonoursContext(t *testing.T) {
	nc := connect(t, startBus(t), "w")
	w, err := worker.New(bus.NATS(nc), newServer(), &worker.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v", err)
	}
	if n := nc.NumSubscriptions(); n != 0 {
		t.Fatalf("%d subscriptions left after a failed Start", n)
	}
}
