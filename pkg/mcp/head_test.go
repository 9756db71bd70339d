package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"9"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
	`"io.modelcontextprotocol/logLevel":"debug","progressToken":7}`

// TestNewRequestParamsModern: a modern request's description comes from
// its _meta, and Handle reuses the head decoded for the same bytes only.
func TestNewRequestParamsModern(t *testing.T) {
	params := json.RawMessage(`{"name":"echo",` + modernMeta + `}`)
	r := NewRequestParams(&RequestInit{Method: protocol.MethodToolsCall, Era: protocol.EraModern, ProtocolVersion: "old", LogLevel: "error"}, params)
	if got := r.ProtocolVersion(); got != "2026-07-28" {
		t.Errorf("ProtocolVersion = %q", got)
	}
	if ci := r.in.ClientInfo; ci == nil || ci.Name != "c" || ci.Version != "9" {
		t.Errorf("ClientInfo = %+v", ci)
	}
	if cc := r.in.ClientCapabilities; cc == nil || cc.Roots == nil || !cc.Roots.ListChanged {
		t.Errorf("ClientCapabilities = %+v", cc)
	}
	if r.in.LogLevel != "debug" {
		t.Errorf("LogLevel = %q", r.in.LogLevel)
	}
	if r.headFor(params) == nil {
		t.Error("the head decoded for these params is not reused")
	}
	if r.headFor(append(json.RawMessage(nil), params...)) != nil {
		t.Error("a copy of the params reuses the head decoded for the original")
	}
	if r.headFor(params[:len(params)-1]) != nil {
		t.Error("a prefix of the params reuses the head")
	}
	// Same capabilities bytes: the same decoded value, shared.
	r2 := NewRequestParams(&RequestInit{Era: protocol.EraModern}, append(json.RawMessage(nil), params...))
	if r2.in.ClientCapabilities != r.in.ClientCapabilities || r2.in.ClientInfo != r.in.ClientInfo {
		t.Error("identical capabilities or client info were decoded again, not shared")
	}
}

// TestNewRequestParamsLenient: members that do not decode leave the
// description as the transport gave it (client info and capabilities
// nil), and never make the request fail; legacy requests keep theirs.
func TestNewRequestParamsLenient(t *testing.T) {
	params := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":5,` +
		`"io.modelcontextprotocol/clientInfo":"x","io.modelcontextprotocol/clientCapabilities":[1],` +
		`"io.modelcontextprotocol/logLevel":{}}}`)
	ci := &protocol.Implementation{Name: "from-init"}
	r := NewRequestParams(&RequestInit{Era: protocol.EraModern, ProtocolVersion: "v", LogLevel: "info", ClientInfo: ci}, params)
	if r.in.ProtocolVersion != "v" || r.in.LogLevel != "info" || r.in.ClientInfo != nil || r.in.ClientCapabilities != nil {
		t.Errorf("got version %q, level %q, info %+v, caps %+v", r.in.ProtocolVersion, r.in.LogLevel, r.in.ClientInfo, r.in.ClientCapabilities)
	}
	legacy := NewRequestParams(&RequestInit{Era: protocol.EraLegacy, ProtocolVersion: "2025-11-25", ClientInfo: ci}, json.RawMessage(`{`+modernMeta+`}`))
	if legacy.in.ProtocolVersion != "2025-11-25" || legacy.in.ClientInfo != ci || legacy.in.ClientCapabilities != nil {
		t.Errorf("a legacy request took its description from _meta: %+v", legacy.in)
	}
	if legacy.headFor(nil) != nil {
		t.Error("empty params reuse a head")
	}
	bad := json.RawMessage(`{"_meta":5}`)
	if r := NewRequestParams(&RequestInit{Era: protocol.EraModern}, bad); r.head != nil {
		t.Error("params whose head does not decode kept a head")
	}
}

// TestClientDescriptionShared: a modern request's client info and
// capabilities are nil when absent, null or undecodable, and otherwise the
// values the transport's head decoded from the same bytes (one cache in
// pkg/protocol serves both, so the all-in-one decodes them once).
func TestClientDescriptionShared(t *testing.T) {
	for _, bad := range []struct{ info, caps string }{
		{"", ""}, {"null", "null"}, {"5", "5"}, {`"s"`, `[]`}, {`{"name":5}`, `{"roots":5}`},
	} {
		meta := `"_meta":{}`
		if bad.info != "" {
			meta = `"_meta":{"io.modelcontextprotocol/clientInfo":` + bad.info + `,"io.modelcontextprotocol/clientCapabilities":` + bad.caps + `}`
		}
		r := NewRequestParams(&RequestInit{Era: protocol.EraModern}, json.RawMessage(`{`+meta+`}`))
		if r.in.ClientInfo != nil || r.in.ClientCapabilities != nil {
			t.Errorf("%s: ClientInfo %+v, ClientCapabilities %+v, want nil", meta, r.in.ClientInfo, r.in.ClientCapabilities)
		}
	}
	params := `{"name":"echo",` + modernMeta + `}`
	var head protocol.ParamsHead
	if _, headErr, err := protocol.DecodeWithHead([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`), 0, &head); err != nil || headErr != nil || head.Meta == nil {
		t.Fatalf("DecodeWithHead: %v, %v", err, headErr)
	}
	r := NewRequestParams(&RequestInit{Era: protocol.EraModern}, json.RawMessage(params))
	if r.in.ClientInfo == nil || r.in.ClientInfo != head.Meta.ClientInfo {
		t.Errorf("ClientInfo %p is not the transport's %p", r.in.ClientInfo, head.Meta.ClientInfo)
	}
	if r.in.ClientCapabilities == nil || r.in.ClientCapabilities != head.Meta.ClientCapabilities {
		t.Errorf("ClientCapabilities %p is not the transport's %p", r.in.ClientCapabilities, head.Meta.ClientCapabilities)
	}
}

var headSeeds = []string{
	`{"name":"echo",` + modernMeta + `}`,
	`{"name":"echo","_meta":{"progressToken":"t","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}}`,
	`{"_meta":null}`, `{"_meta":5}`, `{"_meta":[]}`, `{"_meta":{"traceparent":5}}`, `{"_meta":{"traceparent":null}}`,
	`{"_meta":{"traceparent":"a\u0062"}}`, `{"_meta":{"progressToken":null,"io.modelcontextprotocol/logLevel":null}}`,
	`{"_meta":{"Traceparent":"x"}}`, `{"_meta":{"traceparent":"x","traceparent":"y"}}`, `{"_meta":{"tr\u0061ceparent":"x"}}`,
	`{"requestState":"s","inputResponses":{"a":{}}}`, `{"requestState":null,"inputResponses":null}`,
	`{"RequestState":"s"}`, `{"_meta":{},"_meta":{"progressToken":1}}`, "{\"_meta\":{\"traceparent\":\"\xff\"}}",
	`{}`, `[]`, `null`, `5`, `{"a":[{"_meta":1}]}`,
}

// checkHead: decodeHead gives what json.Unmarshal gives.
func checkHead(t *testing.T, params []byte) {
	t.Helper()
	got, gerr := decodeHead(params)
	want := new(paramsHead)
	werr := json.Unmarshal(params, want)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", params, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v (meta %+v)\nwant %+v (meta %+v)", params, got, got.Meta, want, want.Meta)
	}
}

// TestDecodeHead: the head is read without encoding/json in the common
// case, and as encoding/json reads it in every case.
func TestDecodeHead(t *testing.T) {
	for _, s := range headSeeds {
		checkHead(t, []byte(s))
	}
	for _, s := range []string{headSeeds[0], headSeeds[1], `{"_meta":null}`, `{"requestState":"s","inputResponses":{"a":{}}}`, `{}`,
		`{"a":[{"_meta":1}]}`, `{"_meta":{"progressToken":null,"io.modelcontextprotocol/logLevel":null}}`} {
		if _, ok := scanHead([]byte(s)); !ok {
			t.Errorf("%s took encoding/json's path", s)
		}
	}
	// The raw members alias the params, with no room to append into them.
	params := []byte(`{"_meta":{"progressToken":7},"name":"x"}`)
	h, err := decodeHead(params)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(h.Meta.ProgressToken, '9', '9')
	if string(params) != `{"_meta":{"progressToken":7},"name":"x"}` {
		t.Errorf("appending to the progress token wrote into the params: %s", params)
	}
}

func FuzzDecodeHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || !json.Valid(b) {
			return // transports pass valid JSON, and never empty params
		}
		checkHead(t, b)
	})
}

// TestApplyMetaStrings: the version and log level are read as
// encoding/json reads strings, escapes included; other values are ignored.
func TestApplyMetaStrings(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{`"2026-07-28"`, "2026-07-28"}, {`"\u0032026-07-28"`, "2026-07-28"}, {`null`, "keep"}, {`5`, "keep"}, {``, "keep"},
	} {
		m := &metaHead{ProtocolVersion: json.RawMessage(tt.raw), LogLevel: json.RawMessage(tt.raw)}
		in := RequestInit{ProtocolVersion: "keep", LogLevel: "keep"}
		applyMeta(&in, m)
		if in.ProtocolVersion != tt.want || string(in.LogLevel) != tt.want {
			t.Errorf("%s: version %q, level %q, want %q", tt.raw, in.ProtocolVersion, in.LogLevel, tt.want)
		}
	}
}
