package opmetrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestResponseErrorType(t *testing.T) {
	id := protocol.ID{}
	for _, c := range []struct {
		method string
		resp   []byte
		want   string
	}{
		{"tools/call", protocol.AppendErrorResponse(nil, id, protocol.NewError(protocol.CodeInvalidParams, "x")), "-32602"},
		{"ping", protocol.AppendErrorResponse(nil, id, protocol.ErrInternalFailure()), "-32603"},
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[],"isError":true}`)), "tool_error"},
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[{"type":"text","text":"\"isError\":true"}]}`)), ""},
		{"prompts/get", protocol.AppendResponse(nil, id, []byte(`{"isError":true}`)), ""},
		// Only the result's own member counts, not one deeper down.
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[],"structuredContent":{"isError":true}}`)), ""},
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"structuredContent":{"isError":true},"content":[],"isError":true}`)), "tool_error"},
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[],"isError":false,"structuredContent":{"isError":true}}`)), ""},
		// A key the scanner leaves to encoding/json (escaped) is still read.
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[],"is\u0045rror":true,"x":{"isError":true}}`)), "tool_error"},
		{"tools/call", protocol.AppendResponse(nil, id, []byte(`{"content":[{"type":"text","text":"\"error\":{\"code\":1}"}]}`)), ""},
	} {
		if got := ResponseErrorType(c.method, c.resp); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.resp, got, c.want)
		}
	}
}

// Error types beyond MaxErrorTypes of one label set are "other"; the
// gauge returns to 0 and a repeated label set allocates nothing.
func TestErrorTypesBounded(t *testing.T) {
	v := New(Opts{DurationName: "d", DurationHelp: "d", InFlightName: "g", InFlightHelp: "g"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(v.Collectors()...)
	l := Labels(nil, "ping", "")
	for i := range 100 {
		v.Begin(l).End(time.Now(), strconv.Itoa(i))
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	if n := len(byName["d"].GetMetric()); n != MaxErrorTypes+1 {
		t.Errorf("%d series, want %d", n, MaxErrorTypes+1)
	}
	if g := byName["g"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 0 {
		t.Errorf("in flight %v", g)
	}
	if n := testing.AllocsPerRun(100, func() { v.Begin(l).End(time.Now(), "") }); n != 0 {
		t.Errorf("an operation of a known label set allocates %v times", n)
	}
}
