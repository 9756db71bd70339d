package bus_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// TestNATSSuite runs the bus suite on NATS: a real embedded server, one
// in-process connection per name.
func TestNATSSuite(t *testing.T) {
	runBusSuite(t, func(t *testing.T) func(string) bus.Conn {
		e := startEmbedded(t, &bus.EmbeddedOptions{Logger: quietLogger()})
		return func(name string) bus.Conn { return bus.NATS(connect(t, e, name)) }
	})
}
