package bus_test

import (
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

func TestInvalidOptions(t *testing.T) {
	if _, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), ConnectTimeout: -1}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("Connect with a negative ConnectTimeout: %v", err)
	}
	if _, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "no-port", Logger: quietLogger()}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("StartEmbedded with an address without a port: %v", err)
	}
}
