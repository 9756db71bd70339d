package protocol_test

import (
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// benchCalls are tools/call requests as BenchmarkServe (internal/e2e)
// sends them: legacy, modern with the required _meta, and modern as SDK
// clients send it (client info and capabilities in every request).
var benchCalls = []struct{ name, body string }{
	{"legacy", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"}}}`},
	{"modern", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	{"modern-client", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}}}}`},
}

// BenchmarkDecodeHead is what the HTTP and stdio transports did with each
// message before DecodeWithHead: Decode, then DecodeParamsHead of its
// params.
func BenchmarkDecodeHead(b *testing.B) {
	benchEachCall(b, func(body []byte) error {
		m, err := protocol.Decode(body, 0)
		if err != nil {
			return err
		}
		var head protocol.ParamsHead
		if err := protocol.DecodeParamsHead(m.Params, &head); err != nil || head.Name == nil {
			return fmt.Errorf("head %+v: %v", head, err)
		}
		return nil
	})
}

// BenchmarkDecodeWithHead is BenchmarkDecodeHead's work done by
// DecodeWithHead.
func BenchmarkDecodeWithHead(b *testing.B) {
	benchEachCall(b, func(body []byte) error {
		var head protocol.ParamsHead
		_, headErr, err := protocol.DecodeWithHead(body, 0, &head)
		if err != nil || headErr != nil || head.Name == nil {
			return fmt.Errorf("head %+v: %v, %v", head, err, headErr)
		}
		return nil
	})
}

// benchEachCall runs decode on each of benchCalls' bodies, a
// sub-benchmark per body.
func benchEachCall(b *testing.B, decode func(body []byte) error) {
	for _, tc := range benchCalls {
		body := []byte(tc.body)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
