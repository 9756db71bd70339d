package protocol_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Fuzz targets for the hostile-input parsers of this package besides
// FuzzDecode (message_test.go): the nesting cap of Decode and CheckDepth,
// the Mcp-Name / Mcp-Param-* header value decoder and the size caps of
// CheckSizes. `make fuzz` runs each for a bounded time; `go test` runs
// their seeds.

// jsonDepth returns the nesting depth of data when it is one valid JSON
// value, computed with encoding/json's tokenizer (a reference independent
// of CheckDepth's scanner).
func jsonDepth(data []byte) (depth int, valid bool) {
	if !json.Valid(data) {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a valid number beyond float64's range is not an error
	cur := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return depth, true
		}
		if err != nil {
			return 0, false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			cur++
			depth = max(depth, cur)
		case json.Delim('}'), json.Delim(']'):
			cur--
		}
	}
}

// checkDepthCap checks CheckDepth and Decode's nesting cap on one body
// against jsonDepth.
func checkDepthCap(t *testing.T, body []byte, maxDepth int) {
	t.Helper()
	limit := maxDepth
	if limit <= 0 {
		limit = protocol.DefaultMaxDepth
	}
	depth, valid := jsonDepth(body)
	cerr := protocol.CheckDepth(body, limit)
	if cerr != nil && !errors.Is(cerr, protocol.ErrTooDeep) {
		t.Fatalf("CheckDepth(%q, %d) = %v, not ErrTooDeep", body, limit, cerr)
	}
	if valid && (depth > limit) != (cerr != nil) {
		t.Fatalf("CheckDepth(%q, %d) = %v for valid JSON of depth %d", body, limit, cerr, depth)
	}

	m, err := protocol.Decode(body, maxDepth)
	if err == nil {
		switch {
		case m == nil || m.Kind() == protocol.KindInvalid:
			t.Fatalf("Decode(%q) = %+v, nil: not a valid message", body, m)
		case !valid:
			t.Fatalf("Decode(%q) accepted invalid JSON", body)
		case depth > limit:
			t.Fatalf("Decode(%q, %d) accepted a body of depth %d", body, maxDepth, depth)
		}
		return
	}
	var de *protocol.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Decode(%q) error %T %v is not a *DecodeError", body, err, err)
	}
	code := de.Err.Code
	switch {
	case code != protocol.CodeParseError && code != protocol.CodeInvalidRequest:
		t.Fatalf("Decode(%q) code %d: %v", body, code, err)
	case !valid && code != protocol.CodeParseError:
		t.Fatalf("Decode(%q) of invalid JSON: code %d, want %d: %v", body, code, protocol.CodeParseError, err)
	case valid && depth <= limit && code != protocol.CodeInvalidRequest:
		t.Fatalf("Decode(%q, %d) of valid JSON of depth %d: code %d, want %d: %v", body, maxDepth, depth, code, protocol.CodeInvalidRequest, err)
	case valid && depth > limit && bytes.TrimLeft(body, " \t\r\n")[0] == '{' && code != protocol.CodeParseError:
		// Arrays are refused as batches before the depth is looked at;
		// an object nested too deep is a parse error.
		t.Fatalf("Decode(%q, %d) of an object of depth %d: code %d, want %d: %v", body, maxDepth, depth, code, protocol.CodeParseError, err)
	}
}

// FuzzDecodeDepth checks the nesting cap: CheckDepth agrees with the real
// depth of valid JSON (brackets inside strings, escapes), Decode never
// accepts a body deeper than its cap or invalid JSON, answers -32700 for a
// too-deep object and invalid JSON and -32600 for valid JSON within the
// cap. data is checked as is and wrapped in wrap arrays inside the params
// of a request, so depths around the cap are cheap to reach.
func FuzzDecodeDepth(f *testing.F) {
	for _, s := range []struct {
		data     string
		wrap     uint8
		maxDepth int8
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":null}]}}`, 0, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":null}]}}`, 0, 3},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"b":null}]}}`, 0, 4},
		{`{"jsonrpc":"2.0","method":"m","params":{"s":"[[[[{{{{\"]]]"}}`, 0, 2},
		{`{"jsonrpc":"2.0","method":"m","params":{"s":"\\","t":[[[]]]}}`, 0, 4},
		{`{"jsonrpc":"2.0","method":"m","params":{"s":"\\\"{{"}}`, 0, 2},
		{`{"jsonrpc":"2.0","result":{"a":{}},"id":"x"}`, 0, 2},
		{`{"jsonrpc":"2.0","error":{"code":-1,"message":"m","data":[[]]}}`, 0, 3},
		{`{}`, 61, 0},
		{`{}`, 62, 0},
		{`[]`, 5, 8},
		{`"{"`, 6, 8},
		{"1", 0, 0},
		{"[[[[[[[[[[]]]]]]]]]]", 0, 3},
		{"{{{{{{{{", 0, 3},
		{`{"a":}`, 2, 0},
		{`]]]]{`, 1, 1},
		{`"\`, 0, 0},
		{" \t\r\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"} ", 0, 1},
		{"\ufeff{}", 0, 0},
	} {
		f.Add([]byte(s.data), s.wrap, s.maxDepth)
	}
	f.Fuzz(func(t *testing.T, data []byte, wrap uint8, maxDepth int8) {
		m := int(maxDepth) % 80 // negative and 0: the default cap
		checkDepthCap(t, data, m)
		w := int(wrap % 100)
		body := make([]byte, 0, len(data)+2*w+64)
		body = append(body, `{"jsonrpc":"2.0","id":7,"method":"m","params":{"v":`...)
		body = append(body, strings.Repeat("[", w)...)
		body = append(body, data...)
		body = append(body, strings.Repeat("]", w)...)
		body = append(body, "}}"...)
		checkDepthCap(t, body, m)
	})
}

// encodeHeaderValue is the client side of DecodeHeaderValue, as
// internal/loadgen writes it: plain when the value is printable ASCII that
// survives header whitespace trimming and cannot be read as the base64
// form, else =?base64?...?=.
func encodeHeaderValue(v string) string {
	safe := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, "=?base64?")
	for i := 0; safe && i < len(v); i++ {
		safe = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if safe {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// FuzzDecodeHeaderValue checks DecodeHeaderValue against its contract: a
// value in the =?base64?...?= form is accepted exactly when the text
// between the markers is the canonical (padded, standard alphabet)
// encoding of UTF-8, and then decodes to that UTF-8; any other value is
// accepted exactly when it is printable ASCII, and decodes to itself. And
// the encoder round trip: every UTF-8 string survives encodeHeaderValue
// and its base64 form; a non-UTF-8 string is refused in base64 form.
func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{
		"echo", "tools/call", "", " lead", "trail ", "a b", "a\tb", "caf\u00e9", "\x7f", "\x00",
		"=?base64?ZWNobw==?=",     // "echo"
		"=?base64?WsO8cmljaA==?=", // "Zürich"
		"=?base64??=",             // ""
		"=?base64?ZWNobw?=",       // missing padding
		"=?base64?ZWNobx==?=",     // non-canonical trailing bits
		"=?base64?ZW Nobw==?=",    // a space inside
		"=?base64?_-8=?=",         // URL alphabet
		"=?base64?/w==?=",         // 0xff: not UTF-8
		"=?base64?7aCA?=",         // a UTF-16 surrogate: not UTF-8
		"=?base64?", "=?base64?=", "?=", "=?base64?ZWNobw==", "=?BASE64?ZWNobw==?=", "=?base64?ZWNobw==?=?=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := protocol.DecodeHeaderValue(v)
		if err != nil && got != "" {
			t.Fatalf("DecodeHeaderValue(%q) = %q and error %v", v, got, err)
		}
		const pre, suf = "=?base64?", "?="
		if strings.HasPrefix(v, pre) && strings.HasSuffix(v, suf) && len(v) >= len(pre)+len(suf) {
			inner := v[len(pre) : len(v)-len(suf)]
			if err == nil {
				if !utf8.ValidString(got) {
					t.Fatalf("DecodeHeaderValue(%q) = %q: not UTF-8", v, got)
				}
				if canon := base64.StdEncoding.EncodeToString([]byte(got)); canon != inner {
					t.Fatalf("DecodeHeaderValue(%q) = %q, but that encodes as %q: a non-canonical base64 value was accepted", v, got, canon)
				}
			} else if b, derr := base64.StdEncoding.DecodeString(inner); derr == nil && utf8.Valid(b) && base64.StdEncoding.EncodeToString(b) == inner {
				t.Fatalf("DecodeHeaderValue(%q) = %v; want %q", v, err, b)
			}
		} else {
			printable := true
			for i := 0; i < len(v); i++ {
				printable = printable && v[i] >= 0x20 && v[i] <= 0x7e
			}
			switch {
			case printable && err != nil:
				t.Fatalf("DecodeHeaderValue(%q) = %v for a printable ASCII value", v, err)
			case !printable && err == nil:
				t.Fatalf("DecodeHeaderValue(%q) = %q; want an error (not printable ASCII)", v, got)
			case err == nil && got != v:
				t.Fatalf("DecodeHeaderValue(%q) = %q; a plain value decodes to itself", v, got)
			}
		}

		b64 := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		back, err := protocol.DecodeHeaderValue(b64)
		switch {
		case utf8.ValidString(v) && (err != nil || back != v):
			t.Fatalf("DecodeHeaderValue(%q) = %q, %v; want %q", b64, back, err, v)
		case !utf8.ValidString(v) && err == nil:
			t.Fatalf("DecodeHeaderValue(%q) = %q: accepted bytes that are not UTF-8", b64, back)
		}
		if utf8.ValidString(v) {
			enc := encodeHeaderValue(v)
			if back, err := protocol.DecodeHeaderValue(enc); err != nil || back != v {
				t.Fatalf("DecodeHeaderValue(encodeHeaderValue(%q) = %q) = %q, %v", v, enc, back, err)
			}
		}
	})
}

// sizesOf returns the longest string (as written, escapes included, keys
// too) and the largest container (array elements or object members) of
// data when it is one valid JSON value, computed with encoding/json's
// tokenizer (a reference independent of CheckSizes' scanner).
func sizesOf(data []byte) (maxStr, maxArr int, valid bool) {
	if !json.Valid(data) {
		return 0, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	type container struct {
		object, wantKey bool
		n               int
	}
	var open []*container
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return maxStr, maxArr, true
		}
		if err != nil {
			return 0, 0, false
		}
		var top *container
		if len(open) > 0 {
			top = open[len(open)-1]
		}
		isKey := top != nil && top.object && top.wantKey
		if top != nil && tok != json.Delim(']') && tok != json.Delim('}') && (!top.object || isKey) {
			top.n++
			maxArr = max(maxArr, top.n)
		}
		if isKey {
			top.wantKey = false
		}
		if _, ok := tok.(string); ok {
			start := before
			for data[start] != '"' {
				start++ // whitespace, ',' or ':' before the string
			}
			maxStr = max(maxStr, int(dec.InputOffset())-start-2)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			open = append(open, &container{object: tok == json.Delim('{'), wantKey: true})
			continue
		case json.Delim(']'), json.Delim('}'):
			open = open[:len(open)-1]
		default:
			if isKey {
				continue // its value comes next
			}
		}
		// A value ended: an object that holds it wants its next key.
		if len(open) > 0 && open[len(open)-1].object {
			open[len(open)-1].wantKey = true
		}
	}
}

func FuzzCheckSizes(f *testing.F) {
	for _, s := range []string{
		`{"a":"short","b":[1,2,3]}`, `["aaaaaaaaa"]`, `[1,2,3,4]`, `{"aaaaaaaaa":1}`,
		`[[1,2,3],[4,5,6,7]]`, `["a\"b\\\"c"]`, `{"requestState":"aaaaaaaaaaaa"}`,
		`[{},[],"",0,true,null]`, `{"a":1,"b":2,"c":3,"d":4}`, `"\u0000\u0000"`, ` [ 1 , 2 , 3 , 4 ] `, `{"a":{"b":[[],[],[],[]]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxString, maxArray = 8, 3
		err := protocol.CheckSizes(data, maxString, maxArray) // never panics, whatever data is
		if err != nil && !errors.Is(err, protocol.ErrTooLong) {
			t.Fatalf("error %v is not ErrTooLong", err)
		}
		if protocol.CheckSizes(data, 0, 0) != nil {
			t.Fatal("no caps, yet an error")
		}
		if protocol.CheckDepth(data, 64) != nil {
			return
		}
		maxStr, maxArr, valid := sizesOf(data)
		if !valid {
			return
		}
		if want := maxStr > maxString || maxArr > maxArray; (err != nil) != want {
			t.Fatalf("CheckSizes(%q) = %v; the longest string is %d bytes, the largest container %d elements", data, err, maxStr, maxArr)
		}
	})
}
