package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

var toolParamSeeds = []string{
	`{"name":"echo","arguments":{"text":"hi"}}`,
	`{"name":"echo"}`, `{}`, `{"arguments":null,"name":"x"}`, `{"name":null}`, `{"name":5}`, `{"name":"e\u0063ho"}`,
	`{"Name":"echo"}`, `{"NAME":"a","name":"b"}`, `{"name":"a","name":"b"}`, `{"na\u006de":"x"}`,
	`{"name":"echo","task":{"ttl":1}}`, `{"name":"echo","requestState":"s","inputResponses":{"a":1}}`,
	`{"name":"echo","_meta":{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}`,
	`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"\u0032026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":null}}}`,
	`{"name":"echo","_meta":null}`, `{"name":"echo","_meta":{"traceparent":null,"progressToken":null}}`,
	`{"name":"echo","_meta":5}`, `{"name":"echo","_meta":{"io.modelcontextprotocol/logLevel":7}}`,
	`{"name":"日本","extra":[1,{"name":2}]}`, "{\"name\":\"\xff\"}", "{\"ta\u017fk\":1,\"name\":\"x\"}",
	`{"name":"x",}`, `[1]`, `null`, ``, `{"name":"x"} `, ` {"name":"x"}x`,
}

// checkToolParams: the fast decode gives what encoding/json gives.
func checkToolParams(t *testing.T, params []byte) {
	t.Helper()
	var got, want protocol.CallToolParams
	gerr := decodeCallToolParams(params, &got)
	werr := decodeParams(params, &want)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", params, gerr, werr)
	}
	if gerr != nil {
		if gerr.Error() != werr.Error() {
			t.Fatalf("%q: error %q, encoding/json %q", params, gerr, werr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", params, got, want)
	}
}

func TestDecodeCallToolParams(t *testing.T) {
	for _, s := range toolParamSeeds {
		checkToolParams(t, []byte(s))
	}
	var p protocol.CallToolParams
	if !fastCallToolParams([]byte(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"t"}}`), &p) {
		t.Error("the common case took the slow path")
	}
	// A modern client's _meta is read without encoding/json: its
	// capabilities are the ones every request with those bytes shares.
	caps := `{"roots":{"listChanged":true}}`
	if err := decodeCallToolParams([]byte(`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps+`}}`), &p); err != nil {
		t.Fatal(err)
	}
	if shared, _ := protocol.SharedClientCapabilities([]byte(caps)); p.Meta == nil || p.Meta.ClientCapabilities != shared {
		t.Errorf("a modern _meta was decoded by encoding/json: %+v", p.Meta)
	}
	params := []byte(`{"name":"echo","arguments":{"a":1}}`)
	if err := decodeCallToolParams(params, &p); err != nil {
		t.Fatal(err)
	}
	params[len(params)-3] = '2'
	if string(p.Arguments) != `{"a":1}` {
		t.Errorf("arguments alias the params: %s", p.Arguments)
	}
}

func FuzzDecodeCallToolParams(f *testing.F) {
	for _, s := range toolParamSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			// Transports pass valid JSON; invalid params must still fail.
			var p protocol.CallToolParams
			if decodeCallToolParams(b, &p) == nil {
				t.Fatalf("%q: invalid JSON decoded", b)
			}
			return
		}
		checkToolParams(t, b)
	})
}
