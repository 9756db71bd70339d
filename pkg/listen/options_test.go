package listen_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
)

func TestOptionsNegativeRejected(t *testing.T) {
	v := newEnv(t)
	for name, o := range map[string]listen.Options{
		"negative Buffer":       {Buffer: -1},
		"negative ListenBuffer": {ListenBuffer: -1},
	} {
		t.Run(name, func(t *testing.T) {
			if err := o.Validate(); !errors.Is(err, listen.ErrInvalidOptions) {
				t.Errorf("Validate = %v, want one wrapping ErrInvalidOptions", err)
			}
			o.Subjects, o.Logger = v.subj, quietLogger()
			r := listen.New(bus.NATS(v.conn("registry")), o)
			defer r.Shutdown()
			if err := r.Start(t.Context()); !errors.Is(err, listen.ErrInvalidOptions) {
				t.Errorf("Start = %v, want one wrapping ErrInvalidOptions", err)
			}
		})
	}
	// Negative caps mean off, and are valid.
	off := listen.Options{MaxListen: -1, MaxListenPerClient: -1}
	if err := off.Validate(); err != nil {
		t.Errorf("negative caps: %v", err)
	}
	r := v.registry(v.conn("registry"), off)
	if got := r.EffectiveOptions(); got.MaxListen != -1 || got.MaxListenPerClient != -1 {
		t.Errorf("negative caps became %d, %d", got.MaxListen, got.MaxListenPerClient)
	}
}

func TestOptionsZeroIsDefault(t *testing.T) {
	v := newEnv(t)
	got := v.registry(v.conn("registry"), listen.Options{}).EffectiveOptions()
	if got.Buffer != 256 || got.ListenBuffer != 32 || got.MaxListen != 1000 || got.MaxListenPerClient != 0 {
		t.Errorf("zero options became buffer %d, listen buffer %d, max listen %d, per client %d; want 256, 32, 1000, 0",
			got.Buffer, got.ListenBuffer, got.MaxListen, got.MaxListenPerClient)
	}
	set := v.registry(v.conn("registry2"), listen.Options{Buffer: 3, ListenBuffer: 4, MaxListen: 5, MaxListenPerClient: 6}).EffectiveOptions()
	if set.Buffer != 3 || set.ListenBuffer != 4 || set.MaxListen != 5 || set.MaxListenPerClient != 6 {
		t.Errorf("set options not kept: %+v", set)
	}
}

// Start with a done context returns ctx.Err() and subscribes nothing.
func TestStartHonoursContext(t *testing.T) {
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	nc, err := e.Connect("listen-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r := listen.New(bus.NATS(nc), listen.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v, want context.Canceled", err)
	}
	if n := nc.NumSubscriptions(); n != 0 {
		t.Fatalf("%d subscriptions after a failed Start", n)
	}
}
