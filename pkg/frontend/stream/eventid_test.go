package stream

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
			code, isErr := protocol.ResponseErrorCode(tc.resp)
			if code != tc.code || isErr != tc.isErr {
				t.Errorf("ResponseErrorCode(%s) = %d, %v; want %d, %v", tc.resp, code, isErr, tc.code, tc.isErr)
			}
		})
	}
}

func TestEventIDs(t *testing.T) {
	stream := PostStreamID("fe-1", "abc123")
	id := FormatEventID(stream, 42)
	s, idx, ok := ParseEventID(id)
	if !ok || s != stream || idx != 42 {
		t.Fatalf("ParseEventID(%q) = %q, %d, %v", id, s, idx, ok)
	}
	fe, bus, ok := SplitPostStream(stream)
	if !ok || fe != "fe-1" || bus != "abc123" {
		t.Fatalf("SplitPostStream(%q) = %q, %q, %v", stream, fe, bus, ok)
	}
	for _, bad := range []string{"", "x", ":1", "p:1", "g1", "gAB:1", "q123:1", "g12:-1", "g12:x", "pzz:1", "p" + string(make([]byte, 200)) + ":1"} {
		if _, _, ok := ParseEventID(bad); ok {
			t.Errorf("ParseEventID(%q) accepted", bad)
		}
	}
	if _, _, ok := ParseEventID(NewStreamID('g') + ":7"); !ok {
		t.Error("a GET stream id was refused")
	}
}

// TestNewStreamID: the kind, then 16 lowercase hex digits, fresh each
// time; AppendStreamID appends the same form.
func TestNewStreamID(t *testing.T) {
	ok := func(s string, kind byte) bool {
		if len(s) != 17 || s[0] != kind {
			return false
		}
		for _, c := range []byte(s[1:]) {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	a, b := NewStreamID('g'), NewStreamID('g')
	if !ok(a, 'g') || !ok(b, 'g') || a == b {
		t.Errorf("NewStreamID: %q, %q", a, b)
	}
	if got := string(AppendStreamID([]byte("fe/"), 'c')); got[:3] != "fe/" || !ok(got[3:], 'c') {
		t.Errorf("AppendStreamID: %q", got)
	}
}
