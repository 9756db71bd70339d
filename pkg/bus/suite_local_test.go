package bus_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// TestLocalSuite runs the bus suite on Local: every name is the same
// in-process bus.
func TestLocalSuite(t *testing.T) {
	runBusSuite(t, func(t *testing.T) func(string) bus.Conn {
		l := bus.NewLocal(quietLogger())
		t.Cleanup(l.Close)
		return func(string) bus.Conn { return l }
	})
}
