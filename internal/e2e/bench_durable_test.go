package e2e

import (
	"bufio"
	"bytes"
	"net/http"
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

// BenchmarkGetStreamUpdateCost measures what one resources/updated costs
// the in-process all-in-one, from the tool call that raises it to its
// arrival on the subscribed session's GET stream (read over real HTTP):
// CPU time per update (the whole process, the tool call included) and
// NATS messages published per update. Session events (issue 18) send it
// through any frontend, which logs it in the session's GET log.
func BenchmarkGetStreamUpdateCost(b *testing.B) {
	ip := testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true})
	post, sid := benchSession(b, ip)
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	const uri = "test://bench/updated"
	if w := post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`, hdr); w.Code != 200 {
		b.Fatalf("subscribe: HTTP %d %s", w.Code, w.Body)
	}
	req, _ := http.NewRequest(http.MethodGet, ip.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	// arrived waits for the next update on the stream.
	arrived := func() bool {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data:") && strings.Contains(l, uri) {
				return true
			}
		}
		return false
	}
	body := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"touch_resource","arguments":{"uri":"` + uri + `"}}}`
	b.ResetTimer()
	msgs0, cpu0 := ip.NC.Stats().OutMsgs, cpuTime()
	for i := range b.N {
		w := post(strings.Replace(body, "%d", strconv.Itoa(10+i), 1), hdr)
		if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte("touched")) {
			b.Fatalf("touch_resource: HTTP %d %s", w.Code, w.Body)
		}
		if !arrived() {
			b.Fatal("the GET stream ended before the update arrived")
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(ip.NC.Stats().OutMsgs-msgs0)/float64(b.N), "nats-msgs/op")
}
