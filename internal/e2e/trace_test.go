package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// traceServer serves one tool, "trace", answering with what the handler's
// context says about the caller's span: "<trace id> <span id> <remote>
// <tracestate>" (an invalid span context gives a zero trace id).
func traceServer(t *testing.T) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(protocol.Implementation{Name: "trace-test", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddTool(&protocol.Tool{Name: "trace"}, func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		sc := trace.SpanContextFromContext(ctx)
		remote := "local"
		if sc.IsRemote() {
			remote = "remote"
		}
		return mcp.TextResult(sc.TraceID().String() + " " + sc.SpanID().String() + " " + remote + " " + sc.TraceState().String()), nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// toolText returns the text of the single text content of a tools/call
// reply.
func toolText(t *testing.T, r *testenv.Reply) string {
	t.Helper()
	resp := r.Response()
	if r.Status != 200 || resp == nil || resp.Error != nil {
		t.Fatalf("tools/call trace: %s", r)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("tools/call trace: result %s", resp.Result)
	}
	return res.Content[0].Text
}

// TestTraceContext checks that the W3C trace context of an HTTP request
// crosses the bus: the tool handler on the worker sees the caller's trace
// id, span id and tracestate, as a remote span context, whether the client
// sent them as traceparent/tracestate HTTP headers or in the request's
// _meta (which wins over the headers), on legacy and modern requests.
func TestTraceContext(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: traceServer(t)})
	const (
		headerTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		headerTS = "vendor=header"
		metaTP   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		metaTS   = "vendor=meta"

		fromHeader = "0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 remote vendor=header"
		fromMeta   = "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 remote vendor=meta"
		none       = "00000000000000000000000000000000 0000000000000000 local "
	)
	headers := map[string]string{"Traceparent": headerTP, "Tracestate": headerTS}
	meta := map[string]any{"traceparent": metaTP, "tracestate": metaTS}
	tests := []struct {
		name string
		hdr  map[string]string
		meta map[string]any
		want string
	}{
		{"traceparent header", headers, nil, fromHeader},
		{"_meta.traceparent", nil, meta, fromMeta},
		{"_meta.traceparent wins over the header", headers, meta, fromMeta},
		{"none", nil, nil, none},
	}

	legacy := testenv.NewClient(t, ip.URL)
	legacy.Initialize(nil)
	modernClient := testenv.NewModernClient(t, ip.URL)
	for i, tc := range tests {
		t.Run("legacy/"+tc.name, func(t *testing.T) {
			params := map[string]any{"name": "trace"}
			if tc.meta != nil {
				params["_meta"] = tc.meta
			}
			hdr := map[string]string{}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			if got := toolText(t, legacy.Post(testenv.Request(100+i, "tools/call", params), hdr)); got != tc.want {
				t.Fatalf("the handler saw %q, want %q", got, tc.want)
			}
		})
		t.Run("modern/"+tc.name, func(t *testing.T) {
			params := map[string]any{"name": "trace"}
			if tc.meta != nil {
				params["_meta"] = tc.meta // merged into the request's _meta
			}
			if got := toolText(t, modern(t, modernClient, 200+i, "tools/call", params, nil, tc.hdr)); got != tc.want {
				t.Fatalf("the handler saw %q, want %q", got, tc.want)
			}
		})
	}
}
