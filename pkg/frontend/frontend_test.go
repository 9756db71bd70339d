package frontend

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestResponseErrorCode(t *testing.T) {
	tests := []struct {
		name  string
		resp  []byte
		code  int64
		isErr bool
	}{
		{"result", protocol.AppendResponse(nil, protocol.Int64ID(1), []byte(`{"content":[]}`)), 0, false},
		{"error", protocol.AppendErrorResponse(nil, protocol.Int64ID(1), protocol.NewError(-32601, "x")), -32601, true},
		{"error without id", protocol.AppendErrorResponse(nil, protocol.ID{}, protocol.NewError(-32700, "x")), -32700, true},
		{"string id that looks like an error", protocol.AppendResponse(nil, protocol.StringID(`"error":{"code":1,`), []byte(`{}`)), 0, false},
		{"result containing an error object", protocol.AppendResponse(nil, protocol.Int64ID(1), []byte(`{"structuredContent":{"error":{"code":-32601,"message":"m"}}}`)), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, isErr := responseErrorCode(tc.resp)
			if code != tc.code || isErr != tc.isErr {
				t.Errorf("responseErrorCode(%s) = %d, %v; want %d, %v", tc.resp, code, isErr, tc.code, tc.isErr)
			}
		})
	}
}

func TestEventIDs(t *testing.T) {
	stream := postStreamID("fe-1", "abc123")
	id := formatEventID(stream, 42)
	s, idx, ok := parseEventID(id)
	if !ok || s != stream || idx != 42 {
		t.Fatalf("parseEventID(%q) = %q, %d, %v", id, s, idx, ok)
	}
	fe, bus, ok := splitPostStream(stream)
	if !ok || fe != "fe-1" || bus != "abc123" {
		t.Fatalf("splitPostStream(%q) = %q, %q, %v", stream, fe, bus, ok)
	}
	for _, bad := range []string{"", "x", ":1", "p:1", "g1", "gAB:1", "q123:1", "g12:-1", "g12:x", "pzz:1", "p" + string(make([]byte, 200)) + ":1"} {
		if _, _, ok := parseEventID(bad); ok {
			t.Errorf("parseEventID(%q) accepted", bad)
		}
	}
	if _, _, ok := parseEventID(newStreamID('g') + ":7"); !ok {
		t.Error("a GET stream id was refused")
	}
}

func TestAllowList(t *testing.T) {
	def, err := newAllowList(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:9": true, "evil.example.com": false, "127.0.0.1.evil.com": false} {
		if got := def.hostOK(host); got != want {
			t.Errorf("hostOK(%q) = %v", host, got)
		}
	}
	for origin, want := range map[string]bool{"": true, "http://localhost:3000": true, "https://127.0.0.1": true, "http://evil.example.com": false, "null": false, "file://localhost": false} {
		if got := def.originOK(origin); got != want {
			t.Errorf("originOK(%q) = %v", origin, got)
		}
	}
	custom, err := newAllowList([]string{"mcp.example.com"}, []string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if !custom.hostOK("MCP.example.com:443") || custom.hostOK("localhost") || !custom.originOK("https://app.example.com/") || custom.originOK("http://app.example.com") {
		t.Error("custom allow-list")
	}
	if _, err := newAllowList([]string{"bad host/x"}, nil); err == nil {
		t.Error("an invalid host was accepted")
	}
}
