package opmetrics

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// BenchmarkOperation is what an operation costs the metrics: its labels
// from a catalog (a tool call, a template URI), Begin and End.
func BenchmarkOperation(b *testing.B) {
	v := New(Opts{DurationName: "d", DurationHelp: "d", InFlightName: "g", InFlightHelp: "g"})
	cat := &mcp.Catalog{Tools: []*protocol.Tool{{Name: "a"}, {Name: "echo"}, {Name: "z"}},
		Templates: []*protocol.ResourceTemplate{{URITemplate: "test://item/{id}"}}}
	b.Run("tools/call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.Begin(Labels(cat, protocol.MethodToolsCall, "echo")).End(time.Now(), "")
		}
	})
	b.Run("resources/read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.Begin(Labels(cat, protocol.MethodResourcesRead, "test://item/7")).End(time.Now(), "")
		}
	})
}
