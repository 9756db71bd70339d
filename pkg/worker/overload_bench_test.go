package worker_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

// BenchmarkOverloadBurst publishes a burst of calls at once into one
// worker on an embedded NATS and waits for every answer: how long the
// burst takes (ns/op, one burst per op), how many calls were answered
// "worker busy" (busy/op) and the most goroutines the process had at
// once (max-goroutines). The spin cases need more CPU than the machine
// has while the burst lasts; sleep1ms waits instead. Run with
//
//	go test -run '^$' -bench OverloadBurst -benchtime 3x ./pkg/worker
func BenchmarkOverloadBurst(b *testing.B) {
	for _, c := range []struct {
		name  string
		n     int
		work  time.Duration
		sleep bool
		maxIn int
	}{
		{"spin20us_30000", 30000, 20 * time.Microsecond, false, 0},
		{"spin20us_30000_cap256", 30000, 20 * time.Microsecond, false, 256},
		{"sleep1ms_4000", 4000, time.Millisecond, true, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newServer()
			addTool(b, s, "work", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
				if c.sleep {
					time.Sleep(c.work)
				} else {
					for end := time.Now().Add(c.work); time.Now().Before(end); {
					}
				}
				return mcp.TextResult("ok"), nil
			})
			f := newFixture(b, s, &worker.Options{HeartbeatInterval: -1, MaxInFlight: c.maxIn})
			var maxG atomic.Int64
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() { // sampling goroutines until stop
				defer close(stopped)
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					if g := int64(runtime.NumGoroutine()); g > maxG.Load() {
						maxG.Store(g)
					}
				}
			}()
			busy := 0
			b.ResetTimer()
			for i := range b.N {
				streams := make([]*stream, 0, c.n)
				for j := range c.n {
					id := protocol.Int64ID(int64(i*c.n + j))
					streams = append(streams, f.fe.publish(b, nil, id, protocol.MethodToolsCall, "work", `{"name":"work"}`))
				}
				_ = f.fe.nc.Flush()
				for _, st := range streams {
					m := st.response(b)
					switch {
					case m.Error == nil:
					case strings.Contains(m.Error.Message, "busy"):
						busy++
					default:
						b.Fatalf("a call of the burst: %v", m.Error)
					}
				}
			}
			b.StopTimer()
			close(stop)
			<-stopped
			b.ReportMetric(float64(busy)/float64(b.N), "busy/op")
			b.ReportMetric(float64(maxG.Load()), "max-goroutines")
		})
	}
}
