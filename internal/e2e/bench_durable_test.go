package e2e

import (
	"bytes"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// BenchmarkLegacyStreamCost measures what a legacy tools/call costs the
// whole in-process all-in-one (frontend, memory store, embedded NATS,
// worker: one process): CPU time per call (user + system, from rusage)
// and NATS messages published per call, for a plain JSON answer (echo)
// and for an SSE stream of 5 progress notifications then the response
// (progress_steady). Acked frames (issue 18) add one ack per payload
// frame.
func BenchmarkLegacyStreamCost(b *testing.B) {
	ip := testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true})
	post, sid := benchSession(b, ip)
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	cases := []struct{ name, body, want string }{
		{"echo", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`, "hello"},
		{"progress5", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"progress_steady","arguments":{"count":5,"interval_ms":0},"_meta":{"progressToken":1}}}`, "sent 5"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var n atomic.Int64
			msgs0, cpu0 := ip.NC.Stats().OutMsgs, cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := strings.Replace(tc.body, "%d", strconv.FormatInt(n.Add(1), 10), 1)
					w := post(body, hdr)
					if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte(tc.want)) {
						b.Errorf("HTTP %d: %s", w.Code, w.Body)
						return
					}
				}
			})
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(ip.NC.Stats().OutMsgs-msgs0)/float64(b.N), "nats-msgs/op")
		})
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
