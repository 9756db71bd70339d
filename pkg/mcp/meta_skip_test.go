package mcp

import (
	"encoding/json"
	"testing"
)

// TestMayHaveMeta: the skipped decode would never have found a _meta.
func TestMayHaveMeta(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   bool
	}{
		{`{"name":"echo","arguments":{"text":"hi"}}`, false},
		{`  {"name":"echo"}`, false},
		{`{"name":"a_b","arguments":{"x_y":1}}`, false},
		{`{"_meta":{"progressToken":1},"name":"echo"}`, true},
		{`{"name":"echo","_META":{"progressToken":1}}`, true},
		{`{"name":"echo","_MeTa":{}}`, true},
		{`{"name":"echo","\u005fmeta":{"progressToken":1}}`, true},
		{`{"name":"x","arguments":{"s":"\"quoted\""}}`, true}, // any escape: decoded
		{`[1,2]`, true},
		{`"x"`, true},
		{``, true},
		{`{"arguments":{"_meta":1}}`, true}, // a nested _meta: decoded (harmless)
	} {
		if got := mayHaveMeta([]byte(tc.params)); got != tc.want {
			t.Errorf("mayHaveMeta(%s) = %v, want %v", tc.params, got, tc.want)
		}
		if !mayHaveMeta([]byte(tc.params)) {
			var head struct {
				Meta *json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal([]byte(tc.params), &head); err != nil || head.Meta != nil {
				t.Errorf("%s: skipped, but its decode gives %v, %v", tc.params, head.Meta, err)
			}
		}
	}
}

// FuzzMayHaveMeta: whenever the decode is skipped, decoding would have
// found no _meta (or failed only on what the method's decode reports).
func FuzzMayHaveMeta(f *testing.F) {
	for _, s := range []string{`{"name":"echo"}`, `{"_meta":{}}`, `{"_Meta":1}`, `{"a":"_meta"}`, `{"x":{"y":"_"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) || mayHaveMeta(params) {
			return
		}
		var head struct {
			Meta *json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(params, &head); err == nil && head.Meta != nil {
			t.Fatalf("%q: skipped, but it has a _meta", params)
		}
	})
}
