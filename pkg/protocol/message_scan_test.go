package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

var wireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":"a","result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`, `{"jsonrpc":2,"id":1,"method":"m"}`, `{"JSONRPC":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"m","method":"n"}`, `{"jsonrpc":"2.0","id":1,"method":"m\u0041"}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
	`{"jsonrpc":"2.0","id":1,"method":"m","extra":[1,2,{"a":"b"}]}`,
}

// checkWireScan: scan fills what json.Unmarshal fills, whenever it
// reports success.
func checkWireScan(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow wireMessage
	if !fast.scan(data, maxScanDepth, nil) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: scanned, but encoding/json: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\n scan %+v\n json %+v", data, fast, slow)
	}
}

func TestWireScan(t *testing.T) {
	for _, s := range wireSeeds {
		checkWireScan(t, []byte(s))
	}
	var w wireMessage
	if !w.scan([]byte(wireSeeds[0]), maxScanDepth, nil) {
		t.Error("a plain request took the slow path")
	}
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":5}`, `{"JSONRPC":"2.0"}`, `{"jsonrpc":"2.0","method":"m\u0041"}`} {
		if w := (wireMessage{}); w.scan([]byte(s), maxScanDepth, nil) {
			t.Errorf("%s took the fast path", s)
		}
	}
}

func FuzzWireScan(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWireScan(t, data) })
}

var headSeeds = []string{
	`{"name":"echo","arguments":{"text":"hi"}}`, `{"uri":"file:///a","_meta":{"progressToken":1}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"name":"x"}`,
	`{"requestId":5,"reason":"r"}`, `{"taskId":"t","requestState":"s"}`, `{"name":null}`, `{"name":5}`, `{"Name":"x"}`,
	`{"name":"a\nb"}`, `{"name":"a\u0041"}`, `{"_meta":5}`, `{"_meta":{"io.modelcontextprotocol/logLevel":3}}`, `{"uri":"a","uri":"b"}`,
	modernClientParams, `{"_meta":null}`, `{"_meta":{}}`, `{"_meta":[]}`,
	`{"_meta":{"progressToken":"p","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b","io.modelcontextprotocol/logLevel":"debug"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/clientCapabilities":null}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}}`, `{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":1}}}`, `{"_meta":{"io.modelcontextprotocol/clientInfo":"x"}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}},"Roots":{"listChanged":true}}}}`,
	`{"_meta":{"traceparent":1}}`, `{"_meta":{"traceparent":null}}`, `{"_meta":{"Traceparent":"x"}}`, `{"_meta":{"trace\u0070arent":"x"}}`,
	`{"_meta":{"progressToken":1,"progressToken":2}}`, `{"_meta":{"io.modelcontextprotocol/logLevel":"lou\u0064"}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"n","version":"1","icons":[{"src":"s"}]}}}`,
}

// modernClientParams are a tools/call's params as SDK clients send them,
// client info and capabilities in the _meta.
const modernClientParams = `{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}}}`

// checkHead: DecodeParamsHead gives what json.Unmarshal gives.
func checkHead(t *testing.T, params []byte) {
	t.Helper()
	var got, want ParamsHead
	gerr := DecodeParamsHead(params, &got)
	werr := json.Unmarshal(params, &want)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", params, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", params, got, want)
	}
}

func TestDecodeParamsHead(t *testing.T) {
	for _, s := range headSeeds {
		checkHead(t, []byte(s))
	}
	var h ParamsHead
	if !h.scan([]byte(headSeeds[2])) {
		t.Error("a modern tools/call head took the slow path")
	}
}

// TestScanMeta: the _meta of a modern request is read without
// encoding/json's walk, and its client capabilities and info are shared
// by the heads decoded from the same bytes.
func TestScanMeta(t *testing.T) {
	var a, b ParamsHead
	for _, h := range []*ParamsHead{&a, &b} {
		if !h.scan([]byte(modernClientParams)) {
			t.Fatal("a modern client's head took the slow path")
		}
	}
	if _, ok := scanMeta([]byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)); !ok {
		t.Error("the required _meta took the slow path")
	}
	if a.Meta.ClientCapabilities == nil || a.Meta.ClientCapabilities != b.Meta.ClientCapabilities || a.Meta.ClientInfo != b.Meta.ClientInfo {
		t.Errorf("client capabilities %p and %p, info %p and %p: not shared", a.Meta.ClientCapabilities, b.Meta.ClientCapabilities, a.Meta.ClientInfo, b.Meta.ClientInfo)
	}
	for _, s := range []string{`5`, `null`, `{"traceparent":null}`, `{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}`, `{"Traceparent":"x"}`} {
		if _, ok := scanMeta([]byte(s)); ok {
			t.Errorf("_meta %s took the fast path", s)
		}
	}
}

func FuzzDecodeParamsHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) {
			checkHead(t, b)
		}
	})
}

// TestDecodeParamsHeadReused: decoding into a head that already holds
// shared client capabilities and info drops them, and never decodes into
// them (the _meta below takes encoding/json's path: its protocol version
// is escaped).
func TestDecodeParamsHeadReused(t *testing.T) {
	var h ParamsHead
	if err := DecodeParamsHead([]byte(modernClientParams), &h); err != nil || h.Meta == nil || h.Meta.ClientCapabilities == nil {
		t.Fatalf("head %+v: %v", h, err)
	}
	shared, info := h.Meta.ClientCapabilities, h.Meta.ClientInfo
	other := `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":null,"roots":{"listChanged":false}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"other","version":"2"},"io.modelcontextprotocol/protocolVersion":"\u0032026-07-28"}}`
	if err := DecodeParamsHead([]byte(other), &h); err != nil {
		t.Fatal(err)
	}
	if !shared.Roots.ListChanged || shared.Sampling == nil || info.Name != "c" {
		t.Errorf("the shared values were decoded into: %+v, %+v", shared, info)
	}
	if h.Name != nil || h.Meta.ClientInfo.Name != "other" || h.Meta.ClientCapabilities == shared {
		t.Errorf("the reused head kept old values: %+v, %+v", h, h.Meta)
	}
	var again ParamsHead
	if err := DecodeParamsHead([]byte(modernClientParams), &again); err != nil || again.Meta.ClientCapabilities != shared {
		t.Errorf("the cache no longer gives the shared capabilities: %v", err)
	}
}
