package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/prometheus/client_golang/prometheus"
)

// opKey names one series of mcpfleet_worker_operation_duration_seconds.
type opKey struct{ method, tool, prompt, res, errType string }

// operations returns the sample count of each operation series, and the
// value of each in-flight gauge.
func operations(tb testing.TB, reg *prometheus.Registry) (map[opKey]uint64, map[opKey]float64) {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	ops, inflight := map[opKey]uint64{}, map[opKey]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			k := opKey{l["mcp_method_name"], l["gen_ai_tool_name"], l["gen_ai_prompt_name"], l["mcp_resource_template"], l["error_type"]}
			switch mf.GetName() {
			case "mcpfleet_worker_operation_duration_seconds":
				ops[k] = m.GetHistogram().GetSampleCount()
			case "mcpfleet_worker_operations_in_flight":
				inflight[k] = m.GetGauge().GetValue()
			}
		}
	}
	return ops, inflight
}

// The worker labels each request by its method and target (the
// envelope's Target) as its own catalog names them, and by how it ended:
// success, a JSON-RPC code, a tool error, a timeout, a cancellation.
func TestWorkerOperationMetrics(t *testing.T) {
	s := newServer()
	addTool(t, s, "quick", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("quick"), nil
	})
	addTool(t, s, "fail", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return &protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: "no"}}, IsError: true}, nil
	})
	// A middleware's own result type is read from its encoding.
	addTool(t, s, "custom", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("not reached"), nil
	})
	s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request, params json.RawMessage) (protocol.Result, error) {
			if req.Method() == protocol.MethodToolsCall && bytes.Contains(params, []byte(`"custom"`)) {
				return &customToolResult{Content: []protocol.Content{}, IsError: true}, nil
			}
			return next(ctx, req, params)
		}
	})
	block := make(chan struct{})
	addTool(t, s, "wait", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		<-block
		return mcp.TextResult("late"), nil
	})
	t.Cleanup(func() { close(block) })
	if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"},
		func(_ context.Context, _ *mcp.Request, uri string, _ map[string]string) (*protocol.ReadResourceResult, error) {
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, Text: "x"}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	f := newFixture(t, s, &worker.Options{HeartbeatInterval: -1, Metrics: worker.NewMetrics(reg)})

	// send publishes a modern request as a frontend does: method, id and
	// target in the header, the params alone in the body.
	send := func(id int64, method, name, target, params string, deadline time.Duration) *stream {
		t.Helper()
		h := modern()
		h.Method, h.ID, h.Target = method, protocol.Int64ID(id), target
		h.Frontend = f.fe.id
		st := f.fe.newStream()
		h.Stream = st.id
		if deadline > 0 {
			h.DeadlineMs = time.Now().Add(deadline).UnixMilli()
		}
		data, err := bus.EncodeRequest(h, []byte(params))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.fe.nc.PublishRequest(f.subj.Request(method, name), st.subject, data); err != nil {
			t.Fatal(err)
		}
		return st
	}
	call := func(id int64, tool string) *protocol.Message {
		return send(id, protocol.MethodToolsCall, tool, tool, fmt.Sprintf(`{"name":%q,"_meta":%s}`, tool, modernMeta), 0).response(t)
	}
	for i := range 3 {
		if m := call(int64(1+i), "quick"); m.Error != nil {
			t.Fatalf("quick: %+v", m.Error)
		}
	}
	call(10, "fail")
	call(12, "custom")
	// An unknown tool reaches a worker on the unnamed subject.
	if m := send(11, protocol.MethodToolsCall, "", "nope", `{"name":"nope","_meta":`+modernMeta+`}`, 0).response(t); m.Error == nil {
		t.Fatal("an unknown tool succeeded")
	}
	for i, uri := range []string{"test://item/1", "test://item/2"} {
		params := fmt.Sprintf(`{"uri":%q,"_meta":%s}`, uri, modernMeta)
		if m := send(int64(20+i), protocol.MethodResourcesRead, "", uri, params, 0).response(t); m.Error != nil {
			t.Fatalf("resources/read: %+v", m.Error)
		}
	}
	// A request still running is in flight under its labels, until its
	// deadline ends it.
	st := send(30, protocol.MethodToolsCall, "wait", "wait", `{"name":"wait","_meta":`+modernMeta+`}`, 300*time.Millisecond)
	testutil.Poll(t, "the waiting call in flight", func() bool {
		_, in := operations(t, reg)
		return in[opKey{"tools/call", "wait", "", "", ""}] == 1
	})
	if m := st.response(t); m.Error == nil {
		t.Fatal("the waiting call did not time out")
	}
	testutil.Poll(t, "the operations counted", func() bool {
		ops, _ := operations(t, reg)
		return ops[opKey{"tools/call", "wait", "", "", "timeout"}] == 1
	})
	ops, in := operations(t, reg)
	want := map[opKey]uint64{
		{"tools/call", "quick", "", "", ""}:                3,
		{"tools/call", "fail", "", "", "tool_error"}:       1,
		{"tools/call", "custom", "", "", "tool_error"}:     1,
		{"tools/call", "other", "", "", "-32602"}:          1,
		{"resources/read", "", "", "test://item/{id}", ""}: 2,
		{"tools/call", "wait", "", "", "timeout"}:          1,
	}
	for k, n := range want {
		if ops[k] != n {
			t.Errorf("%+v: %d, want %d (all: %v)", k, ops[k], n, ops)
		}
	}
	if len(ops) != len(want) {
		t.Errorf("operation series %v, want %v", ops, want)
	}
	for k, v := range in {
		if v != 0 {
			t.Errorf("in flight %+v: %v, want 0", k, v)
		}
	}
}

// customToolResult is a tools/call result of a middleware's own type.
type customToolResult struct {
	protocol.ResultBase
	Content []protocol.Content `json:"content"`
	IsError bool               `json:"isError"`
}
