package mcp

import (
	"encoding/json"
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
