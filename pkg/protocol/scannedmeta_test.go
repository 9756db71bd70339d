package protocol

import (
	"reflect"
	"testing"
)

var scannedMetaSeeds = []string{
	`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/logLevel":"debug",` +
		`"progressToken":"t","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v","other":[1]}`,
	`{}`, ` {"progressToken":7} `, `{"progressToken":null}`, `{"traceparent":null}`, `{"traceparent":5}`,
	`{"traceparent":"a\u0062"}`, `{"io.modelcontextprotocol/protocolVersion":"\u0032026-07-28"}`,
	`{"io.modelcontextprotocol/logLevel":7}`, `{"io.modelcontextprotocol/clientCapabilities":{"roots":5}}`,
	`{"io.modelcontextprotocol/clientCapabilities":null}`, `{"io.modelcontextprotocol/clientInfo":"x"}`,
	"{\"tracestate\":\"\xff\"}",
	`{"Traceparent":"x"}`, `{"progressToken":1,"progressToken":2}`, `{"pr\u006fgressToken":1}`,
	`null`, `5`, `[]`, `{"progressToken":}`,
}

// TestScannedMetaDecode: Decode gives what DecodeRequestMeta gives for
// the _meta that ScanRequestMeta read, which it reads as ScanMembers does.
func TestScannedMetaDecode(t *testing.T) {
	for _, s := range scannedMetaSeeds {
		raw := []byte(s)
		var v [7][]byte
		scanned := ScanMembers(raw, requestMetaMembers, v[:])
		sm, ok := ScanRequestMeta(raw)
		if ok != scanned {
			t.Fatalf("%s: ScanRequestMeta %v, ScanMembers %v", s, ok, scanned)
		}
		if !ok {
			continue
		}
		if got := [7][]byte{sm.ProgressToken, sm.ProtocolVersion, sm.ClientCapabilities, sm.ClientInfo, sm.LogLevel, sm.Traceparent, sm.Tracestate}; !reflect.DeepEqual(got, v) {
			t.Fatalf("%s: members %q, want %q", s, got, v)
		}
		want, werr := DecodeRequestMeta(raw)
		_, fast := sm.decode() // then the client description is shared
		for range 2 {
			got, gerr := sm.Decode()
			if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("%s: error %v, want %v", s, gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n got %+v\nwant %+v", s, got, want)
			}
			if got != nil && (got == want || fast && (got.ClientCapabilities != want.ClientCapabilities || got.ClientInfo != want.ClientInfo)) {
				t.Fatalf("%s: the RequestMeta is shared, or its client description is not", s)
			}
		}
	}
	sm, ok := ScanRequestMeta([]byte(scannedMetaSeeds[0]))
	if !ok {
		t.Fatal("a modern client's _meta was not read")
	}
	if m, err := sm.Decode(); err != nil || m.ClientCapabilities == nil || m.ClientInfo == nil {
		t.Errorf("a modern client's _meta: %+v, %v", m, err)
	}
}
