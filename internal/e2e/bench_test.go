package e2e

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkServe measures the server side of one tools/call echo through
// the whole in-process all-in-one: the frontend's handler (called
// directly, no network), the session store, the in-process bus both ways
// (bus.Local, as `mcpfleet serve` without --nats-listen), and the worker.
// Tracing is off as in the binaries without OTEL_* variables: the no-op
// provider (otel's global one would make delegating spans).
func BenchmarkServe(b *testing.B) {
	benchServe(b, testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true, LocalBus: true, TracerProvider: noop.NewTracerProvider()}))
}

// BenchmarkServeNATS is BenchmarkServe on an embedded NATS server (as
// `mcpfleet serve --nats-listen`, and the bus of a cluster).
func BenchmarkServeNATS(b *testing.B) {
	benchServe(b, testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true, TracerProvider: noop.NewTracerProvider()}))
}

func benchServe(b *testing.B, ip *testenv.InProc) {
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
		// As SDK clients send it: client info and capabilities in every
		// request's _meta.
		{"modern-client", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}}}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
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

// benchSession is the in-process all-in-one's MCP handler called directly
// (no network) as post, and the id of a legacy session initialized on it.
func benchSession(b *testing.B, ip *testenv.InProc) (post func(body string, hdr map[string]string) *httptest.ResponseRecorder, sid string) {
	b.Helper()
	h := ip.Frontend.Handler()
	post = func(body string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`, nil)
	sid = init.Header().Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	return post, sid
}

// BenchmarkServeRedis is BenchmarkServe with the sessions in a real Redis
// (a private redis-server), as a cluster's frontend keeps them: a legacy
// request's Begin and End are Redis round trips, and the session comes
// from the Redis store's record cache.
func BenchmarkServeRedis(b *testing.B) {
	benchServe(b, testenv.StartInProc(b, testenv.InProcOptions{NoFixture: true, LocalBus: true, RedisURL: testutil.StartRedis(b)}))
}
