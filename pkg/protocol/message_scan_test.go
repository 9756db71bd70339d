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
	if !fast.scan(data) {
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
	if !w.scan([]byte(wireSeeds[0])) {
		t.Error("a plain request took the slow path")
	}
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":5}`, `{"JSONRPC":"2.0"}`, `{"jsonrpc":"2.0","method":"m\u0041"}`} {
		if w := (wireMessage{}); w.scan([]byte(s)) {
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
}

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
