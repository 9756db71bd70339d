package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
)

// BenchmarkServeAccessLog is BenchmarkServe's legacy and modern
// tools/call with the access log on and off, the frontend logging as a
// production process does (JSON at level info, with the request
// attributes of mcpfleet.LogHandler) to io.Discard: the difference is
// what building and formatting one access line per request costs.
func BenchmarkServeAccessLog(b *testing.B) {
	log := slog.New(mcpfleet.LogHandler(slog.NewJSONHandler(io.Discard, nil)))
	for _, mode := range []struct {
		name string
		off  bool
	}{{"on", false}, {"off", true}} {
		ip := testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true, Frontend: frontend.Options{Logger: log, NoAccessLog: mode.off}})
		post, sid := benchSession(b, ip)
		cases := []struct {
			name string
			body string
			hdr  map[string]string
		}{
			{"legacy", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"}}}`,
				map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}},
			{"modern", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
				map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}},
		}
		for _, tc := range cases {
			b.Run(tc.name+"/access-log="+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				var n atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						body := strings.Replace(tc.body, "%d", strconv.FormatInt(n.Add(1), 10), 1)
						w := post(body, tc.hdr)
						if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte("hello from the benchmark")) {
							b.Errorf("HTTP %d: %s", w.Code, w.Body)
							return
						}
					}
				})
			})
		}
	}
}
