package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// modernCallParams are a 2026-07-28 client's tools/call params.
const modernCallParams = `{"name":"echo","arguments":{"text":"hello","n":3},"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},` +
	`"progressToken":"tok-1"}}`

// callHeadSeeds are tools/call params for the reused decode: every tool
// params seed, every head seed, and the members of both together.
func callHeadSeeds() []string {
	seeds := append([]string{modernCallParams,
		`{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":1,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`,
		`{"name":"echo","_meta":{}}`, `{"name":"echo","_meta":{"progressToken":null}}`,
		`{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}}`,
		`{"name":"echo","_meta":{"io.modelcontextprotocol/clientInfo":[]}}`,
		`{"name":"echo","_meta":{"pr\u006fgressToken":1}}`, `{"name":"echo","_meta":{"ProgressToken":1}}`,
		`{"name":"echo","_meta":{"progressToken":1},"_meta":{"progressToken":2}}`,
		`{"name":"echo","arguments":{},"arguments":{"a":1}}`, `{"name":"echo","Arguments":{}}`,
		`{"name":"echo","TASK":{}}`, `{"name":"echo","task":null}`, `{"name":"echo","requestState":null}`,
		`{"name":"echo","_meta":{"traceparent":"x"},"task":{"ttl":5}}`, `{"name":"e\"cho"}`,
		` {"name":"echo","_meta":{"progressToken":"t"}} `,
	}, toolParamSeeds...)
	return append(seeds, headSeeds...)
}

// checkCallHead: for params NewRequestParams read for a tools/call, the
// head is decodeHead's (when it is read), and the call's decode is decodeCallToolParams'
// (result and error), once and again; it reports whether the decode
// reused what NewRequestParams read.
func checkCallHead(t *testing.T, era protocol.Era, params []byte) (reused bool) {
	t.Helper()
	r := NewRequestParams(&RequestInit{Method: protocol.MethodToolsCall, Era: era}, params)
	if len(params) > 0 && needsHead(&r.in, params) {
		want, werr := decodeHead(params)
		if (werr == nil) != (r.head != nil) {
			t.Fatalf("%q: head %+v, decodeHead's error %v", params, r.head, werr)
		}
		if r.head != nil {
			got := *r.head
			reused, got.call = got.call != nil, nil
			if !reflect.DeepEqual(&got, want) {
				t.Fatalf("%q: head\n got %+v (meta %+v)\nwant %+v (meta %+v)", params, got, got.Meta, want, want.Meta)
			}
		}
	}
	var want protocol.CallToolParams
	werr := decodeCallToolParams(params, &want)
	var first *protocol.CallToolParams
	for range 2 {
		got := new(protocol.CallToolParams)
		gerr := r.callToolParams(params, got)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%q: error %v, want %v", params, gerr, werr)
		}
		if gerr != nil {
			return reused
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("%q:\n got %+v (meta %+v)\nwant %+v (meta %+v)", params, got, got.Meta, want, want.Meta)
		}
		if first == nil {
			first = got
			continue
		}
		// Each decode has its own arguments and _meta, as encoding/json's.
		if len(got.Arguments) > 0 && &got.Arguments[0] == &first.Arguments[0] || got.Meta != nil && (got.Meta == first.Meta ||
			len(got.Meta.ProgressToken) > 0 && &got.Meta.ProgressToken[0] == &first.Meta.ProgressToken[0]) {
			t.Fatalf("%q: two decodes share their arguments or _meta", params)
		}
	}
	return reused
}

// TestCallToolParamsReused: a tools/call's params are read once by
// NewRequestParams (and its _meta once), and the call's decode, built from
// that read, gives what decoding them again gives, on every era.
func TestCallToolParamsReused(t *testing.T) {
	for _, era := range []protocol.Era{protocol.EraLegacy, protocol.EraModern} {
		for _, s := range callHeadSeeds() {
			checkCallHead(t, era, []byte(s))
		}
		for _, s := range []string{modernCallParams, `{"name":"echo","_meta":null}`, `{"name":"echo","_meta":{}}`,
			`{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":1}}`, `{"name":"echo","task":{"ttl":1},"_meta":{}}`,
			`{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}}`} {
			if !checkCallHead(t, era, []byte(s)) {
				t.Errorf("%s: the call's decode read the params again", s)
			}
		}
	}
	// Without a _meta a legacy request's head is not read at all.
	if checkCallHead(t, protocol.EraLegacy, []byte(`{"name":"echo"}`)) {
		t.Error("a legacy call without _meta kept a head")
	}
	if !checkCallHead(t, protocol.EraModern, []byte(`{"name":"echo"}`)) {
		t.Error("a modern call without _meta read its params twice")
	}
	// The shared client description is the one every decode shares.
	var p protocol.CallToolParams
	params := []byte(modernCallParams)
	r := NewRequestParams(&RequestInit{Method: protocol.MethodToolsCall, Era: protocol.EraModern}, params)
	if err := r.callToolParams(params, &p); err != nil {
		t.Fatal(err)
	}
	if p.Meta.ClientCapabilities != r.in.ClientCapabilities || p.Meta.ClientInfo != r.in.ClientInfo || p.Meta.ClientInfo == nil {
		t.Errorf("client capabilities %p and info %p, request's %p and %p: not shared", p.Meta.ClientCapabilities, p.Meta.ClientInfo, r.in.ClientCapabilities, r.in.ClientInfo)
	}
	// What the decode hands out is a copy, not the params.
	params[len(`{"name":"echo","arguments":{"text":"`)] = 'j'
	if string(p.Arguments) != `{"text":"hello","n":3}` || string(p.Meta.ProgressToken) != `"tok-1"` {
		t.Errorf("the decode aliases the params: arguments %s, progress token %s", p.Arguments, p.Meta.ProgressToken)
	}
}

// TestCallToolParamsOtherBytes: params other than those NewRequestParams
// read (a copy, a middleware's) are decoded themselves.
func TestCallToolParamsOtherBytes(t *testing.T) {
	params := []byte(`{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":1}}`)
	r := NewRequestParams(&RequestInit{Method: protocol.MethodToolsCall, Era: protocol.EraModern}, params)
	if r.head == nil || r.head.call == nil {
		t.Fatal("NewRequestParams kept nothing for the call")
	}
	for _, other := range []string{
		string(params), // equal bytes, another slice
		`{"name":"other","arguments":{"b":2},"_meta":{"progressToken":2}}`,
		`{"name":"other","task":{}}`, `{"name":5}`,
	} {
		var got, want protocol.CallToolParams
		gerr, werr := r.callToolParams([]byte(other), &got), decodeCallToolParams([]byte(other), &want)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", other, got, gerr, want, werr)
		}
	}
	var got protocol.CallToolParams
	if err := r.callToolParams(params[:len(params)-1], &got); err == nil {
		t.Errorf("a prefix of the params decoded as the params: %+v", got)
	}
}

// TestHandleReusedCall: Handle answers a tools/call given the params
// NewRequestParams read as it answers one given a copy of them (which it
// decodes itself).
func TestHandleReusedCall(t *testing.T) {
	s := NewServer(protocol.Implementation{Name: "s", Version: "1"}, &ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddTool(&protocol.Tool{Name: "echo"}, func(_ context.Context, _ *Request, args json.RawMessage) (*protocol.CallToolResult, error) {
		return &protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: string(args)}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	answer := func(era protocol.Era, params, given []byte) string {
		init := &RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: era}
		res, err := s.Handle(context.Background(), NewRequestParams(init, params), given)
		if err != nil {
			return "error: " + err.Error()
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, era := range []protocol.Era{protocol.EraLegacy, protocol.EraModern} {
		for _, p := range callHeadSeeds() {
			if len(p) == 0 || !json.Valid([]byte(p)) {
				continue // transports pass valid JSON
			}
			params := []byte(p)
			if got, want := answer(era, params, params), answer(era, params, append([]byte(nil), params...)); got != want {
				t.Errorf("era %v, %s:\n got %s\nwant %s", era, p, got, want)
			}
		}
	}
}

func FuzzCallToolParamsReused(f *testing.F) {
	for _, s := range callHeadSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // transports pass valid JSON
		}
		checkCallHead(t, protocol.EraModern, b)
		checkCallHead(t, protocol.EraLegacy, b)
	})
}

// BenchmarkCallToolDecode: what a worker does with a modern tools/call's
// params before the tool runs: NewRequestParams, then the tools/call
// decode.
func BenchmarkCallToolDecode(b *testing.B) {
	params := json.RawMessage(modernCallParams)
	in := RequestInit{Method: protocol.MethodToolsCall, ID: protocol.Int64ID(1), Era: protocol.EraModern}
	b.ReportAllocs()
	for b.Loop() {
		r := NewRequestParams(&in, params)
		var p protocol.CallToolParams
		if err := r.callToolParams(params, &p); err != nil || r.head == nil {
			b.Fatal(err)
		}
	}
}
