package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// decodeOK is one body Decode must accept, and the message it must return.
type decodeOK struct {
	name string
	in   string
	want protocol.Message
}

// decodeBad is one body Decode must reject: the JSON-RPC code, the id it
// must recover (zero: none) and whether it was a batch.
type decodeBad struct {
	name  string
	in    string
	code  int64
	id    protocol.ID
	batch bool
}

// nest wraps inner in n objects {"a":...}.
func nest(n int, inner string) string {
	return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
}

// withParams builds a notification whose params are params.
func withParams(params string) string {
	return `{"jsonrpc":"2.0","method":"m","params":` + params + `}`
}

func decodeOKCases() []decodeOK {
	brackets := strings.Repeat("[", 200)
	return []decodeOK{
		{
			name: "request with string id",
			in:   `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo"}}`,
			want: protocol.Message{ID: protocol.StringID("abc"), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)},
		},
		{
			name: "request with empty string id",
			in:   `{"jsonrpc":"2.0","id":"","method":"ping"}`,
			want: protocol.Message{ID: protocol.StringID(""), Method: "ping"},
		},
		{
			name: "request with int id",
			in:   `{"jsonrpc":"2.0","id":42,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(42), Method: "ping"},
		},
		{
			name: "request with negative int id",
			in:   `{"jsonrpc":"2.0","id":-7,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(-7), Method: "ping"},
		},
		{
			name: "request with id 1.0 is integer 1",
			in:   `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(1), Method: "ping"},
		},
		{
			name: "request with id 1e2 is integer 100",
			in:   `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(100), Method: "ping"},
		},
		{
			name: "request with id 2.50E+1 is integer 25",
			in:   `{"jsonrpc":"2.0","id":2.50E+1,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(25), Method: "ping"},
		},
		{
			name: "request with max int64 id",
			in:   `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`,
			want: protocol.Message{ID: protocol.Int64ID(9223372036854775807), Method: "ping"},
		},
		{
			name: "request members in any order with whitespace",
			in:   " \n\t{ \"method\" : \"ping\" , \"id\" : 3 , \"jsonrpc\" : \"2.0\" }\r\n",
			want: protocol.Message{ID: protocol.Int64ID(3), Method: "ping"},
		},
		{
			name: "request with null params has no params",
			in:   `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
			want: protocol.Message{ID: protocol.Int64ID(1), Method: "ping"},
		},
		{
			name: "notification",
			in:   `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want: protocol.Message{Method: "notifications/initialized"},
		},
		{
			name: "notification with params",
			in:   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
			want: protocol.Message{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":1}`)},
		},
		{
			name: "result response",
			in:   `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
			want: protocol.Message{ID: protocol.Int64ID(1), Result: json.RawMessage(`{"content":[]}`)},
		},
		{
			name: "result response with null error",
			in:   `{"jsonrpc":"2.0","id":"r","result":{},"error":null}`,
			want: protocol.Message{ID: protocol.StringID("r"), Result: json.RawMessage(`{}`)},
		},
		{
			name: "error response",
			in:   `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope","data":{"a":1}}}`,
			want: protocol.Message{ID: protocol.StringID("x"), Error: &protocol.Error{Code: -32601, Message: "nope", Data: json.RawMessage(`{"a":1}`)}},
		},
		{
			name: "error response with null result",
			in:   `{"jsonrpc":"2.0","id":2,"result":null,"error":{"code":-1,"message":"rejected"}}`,
			want: protocol.Message{ID: protocol.Int64ID(2), Error: &protocol.Error{Code: -1, Message: "rejected"}},
		},
		{
			name: "error response without id",
			in:   `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}`,
			want: protocol.Message{Error: &protocol.Error{Code: -32700, Message: "parse error"}},
		},
		{
			name: "params nested exactly to the cap",
			in:   withParams(nest(protocol.DefaultMaxDepth-1, "1")),
			want: protocol.Message{Method: "m", Params: json.RawMessage(nest(protocol.DefaultMaxDepth-1, "1"))},
		},
		{
			name: "brackets inside a string are not nesting",
			in:   withParams(`{"s":"` + brackets + `"}`),
			want: protocol.Message{Method: "m", Params: json.RawMessage(`{"s":"` + brackets + `"}`)},
		},
		{
			name: "escaped quotes do not end a string",
			in:   withParams(`{"s":"\"` + brackets + `\"{{{"}`),
			want: protocol.Message{Method: "m", Params: json.RawMessage(`{"s":"\"` + brackets + `\"{{{"}`)},
		},
	}
}

func decodeBadCases() []decodeBad {
	deep := protocol.DefaultMaxDepth // params at depth 2, so this is cap+1
	return []decodeBad{
		{name: "batch array", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: protocol.CodeInvalidRequest, batch: true},
		{name: "empty array", in: `[]`, code: protocol.CodeInvalidRequest, batch: true},
		{name: "invalid array", in: `[{"jsonrpc":"2.0",`, code: protocol.CodeParseError},
		{name: "number", in: `1`, code: protocol.CodeInvalidRequest},
		{name: "string", in: `"ping"`, code: protocol.CodeInvalidRequest},
		{name: "true", in: `true`, code: protocol.CodeInvalidRequest},
		{name: "null", in: `null`, code: protocol.CodeInvalidRequest},
		{name: "empty body", in: ``, code: protocol.CodeParseError},
		{name: "whitespace only", in: " \n\t ", code: protocol.CodeParseError},
		{name: "not JSON", in: `hello`, code: protocol.CodeParseError},
		{name: "trailing comma", in: `{"jsonrpc":"2.0","method":"ping",}`, code: protocol.CodeParseError},
		{name: "truncated object", in: `{"jsonrpc":"2.0","id":1,"method":"ping"`, code: protocol.CodeParseError},
		{name: "truncated string", in: `{"jsonrpc":"2.0","id":1,"method":"pi`, code: protocol.CodeParseError},
		{name: "two objects", in: `{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}`, code: protocol.CodeParseError},
		{name: "byte order mark", in: "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"m\"}", code: protocol.CodeParseError},
		{name: "objects nested beyond the cap", in: withParams(nest(deep, "1")), code: protocol.CodeParseError},
		{name: "arrays nested beyond the cap", in: withParams(`{"a":` + strings.Repeat("[", deep-1) + strings.Repeat("]", deep-1) + `}`), code: protocol.CodeParseError},
		{name: "escaped backslash ends the string before nesting", in: withParams(`{"s":"\\","t":` + nest(deep-1, "1") + `}`), code: protocol.CodeParseError},
		{name: "missing jsonrpc", in: `{"id":1,"method":"ping"}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(1)},
		{name: "jsonrpc 1.0", in: `{"jsonrpc":"1.0","id":"a","method":"ping"}`, code: protocol.CodeInvalidRequest, id: protocol.StringID("a")},
		{name: "jsonrpc as a number", in: `{"jsonrpc":2.0,"id":5,"method":"ping"}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(5)},
		{name: "null id", in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "bool id", in: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "array id", in: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "fraction id", in: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "fraction id with exponent", in: `{"jsonrpc":"2.0","id":1e-1,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "fraction id beyond float precision", in: `{"jsonrpc":"2.0","id":1.0000000000000000001,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "id beyond int64", in: `{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "id below int64", in: `{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "id 1e19", in: `{"jsonrpc":"2.0","id":1e19,"method":"ping"}`, code: protocol.CodeInvalidRequest},
		{name: "method not a string", in: `{"jsonrpc":"2.0","id":7,"method":5}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(7)},
		{name: "method an object", in: `{"jsonrpc":"2.0","id":"o","method":{}}`, code: protocol.CodeInvalidRequest, id: protocol.StringID("o")},
		{name: "null method", in: `{"jsonrpc":"2.0","id":8,"method":null}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(8)},
		{name: "empty method", in: `{"jsonrpc":"2.0","id":9,"method":""}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(9)},
		{name: "params an array", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(1)},
		{name: "params a string", in: `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":"x"}`, code: protocol.CodeInvalidRequest, id: protocol.StringID("s")},
		{name: "params a number", in: `{"jsonrpc":"2.0","method":"n","params":3}`, code: protocol.CodeInvalidRequest},
		{name: "result an array", in: `{"jsonrpc":"2.0","id":1,"result":[1]}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(1)},
		{name: "result a string", in: `{"jsonrpc":"2.0","id":1,"result":"ok"}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(1)},
		{name: "result null", in: `{"jsonrpc":"2.0","id":1,"result":null}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(1)},
		{name: "result without id", in: `{"jsonrpc":"2.0","result":{}}`, code: protocol.CodeInvalidRequest},
		{name: "both result and error", in: `{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(2)},
		{name: "neither result nor error nor method", in: `{"jsonrpc":"2.0","id":3}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(3)},
		{name: "empty object", in: `{}`, code: protocol.CodeInvalidRequest},
		{name: "method with result", in: `{"jsonrpc":"2.0","id":4,"method":"ping","result":{}}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(4)},
		{name: "method with error", in: `{"jsonrpc":"2.0","id":4,"method":"ping","error":{"code":1,"message":"m"}}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(4)},
		{name: "error a string", in: `{"jsonrpc":"2.0","id":6,"error":"boom"}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(6)},
		{name: "error code a fraction", in: `{"jsonrpc":"2.0","id":6,"error":{"code":1.5,"message":"m"}}`, code: protocol.CodeInvalidRequest, id: protocol.Int64ID(6)},
	}
}

// diffMessage describes how got differs from want ("" when equal).
func diffMessage(got, want *protocol.Message) string {
	var d []string
	if got.ID != want.ID {
		d = append(d, fmt.Sprintf("ID: got %v, want %v", got.ID, want.ID))
	}
	if got.Method != want.Method {
		d = append(d, fmt.Sprintf("Method: got %q, want %q", got.Method, want.Method))
	}
	if !bytes.Equal(got.Params, want.Params) || (got.Params == nil) != (want.Params == nil) {
		d = append(d, fmt.Sprintf("Params: got %q, want %q", got.Params, want.Params))
	}
	if !bytes.Equal(got.Result, want.Result) || (got.Result == nil) != (want.Result == nil) {
		d = append(d, fmt.Sprintf("Result: got %q, want %q", got.Result, want.Result))
	}
	if !reflect.DeepEqual(got.Error, want.Error) {
		d = append(d, fmt.Sprintf("Error: got %#v, want %#v", got.Error, want.Error))
	}
	return strings.Join(d, "; ")
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeOKCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := protocol.Decode([]byte(tc.in), 0)
			if err != nil {
				t.Fatalf("Decode(%s) = %v, want success", tc.in, err)
			}
			if got.Kind() == protocol.KindInvalid {
				t.Fatalf("Decode(%s) returned a message of kind %v", tc.in, got.Kind())
			}
			if got.Kind() != tc.want.Kind() {
				t.Errorf("Kind() = %v, want %v", got.Kind(), tc.want.Kind())
			}
			if d := diffMessage(got, &tc.want); d != "" {
				t.Errorf("Decode(%s): %s", tc.in, d)
			}
		})
	}
}

func TestDecodeKinds(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want protocol.Kind
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, protocol.KindRequest},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, protocol.KindNotification},
		{"result response", `{"jsonrpc":"2.0","id":1,"result":{}}`, protocol.KindResponse},
		{"error response", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, protocol.KindResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := protocol.Decode([]byte(tc.in), 0)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got := m.Kind(); got != tc.want {
				t.Errorf("Kind() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		kind protocol.Kind
		want string
	}{
		{protocol.KindInvalid, "invalid"},
		{protocol.KindRequest, "request"},
		{protocol.KindNotification, "notification"},
		{protocol.KindResponse, "response"},
		{protocol.Kind(99), "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.kind.String(); got != tc.want {
				t.Errorf("Kind(%d).String() = %q, want %q", tc.kind, got, tc.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range decodeBadCases() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := protocol.Decode([]byte(tc.in), 0)
			if err == nil {
				t.Fatalf("Decode(%s) = %+v (kind %v), want error %d", tc.in, m, m.Kind(), tc.code)
			}
			if m != nil {
				t.Errorf("Decode returned a message %+v alongside the error", m)
			}
			var de *protocol.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Err.Code != tc.code {
				t.Errorf("code = %d (%s), want %d", de.Err.Code, de.Err.Message, tc.code)
			}
			if de.ID != tc.id {
				t.Errorf("recovered ID = %v, want %v", de.ID, tc.id)
			}
			if de.Batch != tc.batch {
				t.Errorf("Batch = %v, want %v", de.Batch, tc.batch)
			}
			if de.Error() != de.Err.Error() {
				t.Errorf("Error() = %q, want the JSON-RPC error's %q", de.Error(), de.Err.Error())
			}
			sentinel := protocol.ErrInvalidRequest
			if tc.code == protocol.CodeParseError {
				sentinel = protocol.ErrParse
			}
			if !errors.Is(err, sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, sentinel)
			}
		})
	}
}

func TestDecodeMaxDepth(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		maxDepth int
		wantErr  bool
	}{
		{"empty params within 2", withParams(`{}`), 2, false},
		{"nested params beyond 2", withParams(`{"a":{}}`), 2, true},
		{"array in params beyond 2", withParams(`{"a":[]}`), 2, true},
		{"nested params within 3", withParams(`{"a":{}}`), 3, false},
		{"negative means the default: at the cap", withParams(nest(protocol.DefaultMaxDepth-1, "1")), -1, false},
		{"negative means the default: beyond", withParams(nest(protocol.DefaultMaxDepth, "1")), -1, true},
		{"a larger cap lets deeper bodies in", withParams(nest(protocol.DefaultMaxDepth, "1")), protocol.DefaultMaxDepth + 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := protocol.Decode([]byte(tc.in), tc.maxDepth)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Decode(depth %d) error = %v, wantErr %v", tc.maxDepth, err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, protocol.ErrParse) {
				t.Errorf("error %v is not a parse error", err)
			}
		})
	}
}

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want error
	}{
		{"scalar", `1`, 0, nil},
		{"object at the cap", `{"a":{"b":{}}}`, 3, nil},
		{"object beyond the cap", `{"a":{"b":{}}}`, 2, protocol.ErrTooDeep},
		{"mixed arrays and objects", `[{"a":[1]}]`, 2, protocol.ErrTooDeep},
		{"siblings do not add up", `[[],[],[],{}]`, 2, nil},
		{"brackets in a string", `["[[[[{{{{"]`, 1, nil},
		{"escaped quote keeps the string open", `["\"[[[["]`, 1, nil},
		{"escaped backslash closes the string", `["\\",[[]]]`, 2, protocol.ErrTooDeep},
		{"trailing backslash", `"\`, 0, nil},
		{"unbalanced closers", `]]]]{`, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := protocol.CheckDepth([]byte(tc.in), tc.max); got != tc.want {
				t.Errorf("CheckDepth(%s, %d) = %v, want %v", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

// reencode writes m back with the encoder matching its kind.
func reencode(t testing.TB, m *protocol.Message) []byte {
	t.Helper()
	switch m.Kind() {
	case protocol.KindRequest:
		return protocol.AppendRequest(nil, m.ID, m.Method, m.Params)
	case protocol.KindNotification:
		return protocol.AppendNotification(nil, m.Method, m.Params)
	case protocol.KindResponse:
		if m.Error != nil {
			return protocol.AppendErrorResponse(nil, m.ID, m.Error)
		}
		return protocol.AppendResponse(nil, m.ID, m.Result)
	}
	t.Fatalf("cannot re-encode a message of kind %v", m.Kind())
	return nil
}

// TestDecodeReencode checks on every accepted table case what FuzzDecode
// checks on random input.
func TestDecodeReencode(t *testing.T) {
	for _, tc := range decodeOKCases() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := protocol.Decode([]byte(tc.in), 0)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			out := reencode(t, m)
			back, err := protocol.Decode(out, 0)
			if err != nil {
				t.Fatalf("Decode(re-encoded %s) = %v", out, err)
			}
			if d := diffMessage(back, m); d != "" {
				t.Errorf("re-encoded %s decodes differently: %s", out, d)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range decodeOKCases() {
		f.Add([]byte(tc.in))
	}
	for _, tc := range decodeBadCases() {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range []int{-1, 0, 1, 3, protocol.DefaultMaxDepth} {
			_ = protocol.CheckDepth(data, max) // must not panic
		}
		m, err := protocol.Decode(data, 0)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned both a message and the error %v", err)
			}
			var de *protocol.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			switch de.Err.Code {
			case protocol.CodeParseError:
				if de.ID.IsValid() || de.Batch {
					t.Fatalf("parse error with id %v batch %v", de.ID, de.Batch)
				}
			case protocol.CodeInvalidRequest:
			default:
				t.Fatalf("unexpected code %d: %v", de.Err.Code, err)
			}
			return
		}
		if m.Kind() == protocol.KindInvalid {
			t.Fatalf("Decode(%q) returned an invalid message %+v", data, m)
		}
		out := reencode(t, m)
		if !json.Valid(out) {
			t.Fatalf("re-encoded %q is not valid JSON", out)
		}
		back, err := protocol.Decode(out, 0)
		if err != nil {
			t.Fatalf("Decode(re-encoded %q) = %v; original %q", out, err, data)
		}
		if back.ID != m.ID || back.Method != m.Method || back.Kind() != m.Kind() {
			t.Fatalf("re-encoded %q decodes to id %v method %q kind %v, want %v %q %v",
				out, back.ID, back.Method, back.Kind(), m.ID, m.Method, m.Kind())
		}
		if d := diffMessage(back, m); d != "" {
			t.Fatalf("re-encoded %q: %s", out, d)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"search",` +
		`"arguments":{"query":"nats queue groups","limit":10,"filters":{"lang":["go","rust"]}},` +
		`"_meta":{"progressToken":"p-17","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := protocol.Decode(body, 0)
		if err != nil || m.Kind() != protocol.KindRequest {
			b.Fatalf("Decode = %v, %v", m, err)
		}
	}
}

func TestCheckSizes(t *testing.T) {
	long := `"` + strings.Repeat("a", 101) + `"`
	tests := []struct {
		data string
		ok   bool
	}{
		{`{"a":"short","b":[1,2,3]}`, true},
		{`{"a":` + long + `}`, false},
		{`{"` + strings.Repeat("k", 101) + `":1}`, false},
		{`[` + strings.Repeat("1,", 10) + `1]`, false},
		{`[` + strings.Repeat("1,", 9) + `1]`, true},
		{`{"a":[[1,2],[3,4],[5,6]]}`, true},
		{`[{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11}]`, false}, // 11 members
		{`[{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":[1,2,3,4,5,6,7,8,9,10]}]`, true},
		{`["a\"b","` + strings.Repeat(`\"`, 60) + `"]`, false},
		{`[]`, true},
	}
	for _, tc := range tests {
		err := protocol.CheckSizes([]byte(tc.data), 100, 10)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSizes(%.60s...) = %v, want ok=%v", tc.data, err, tc.ok)
		}
		if err != nil && !errors.Is(err, protocol.ErrTooLong) {
			t.Errorf("error %v is not ErrTooLong", err)
		}
	}
	if err := protocol.CheckSizes([]byte(`{"a":`+long+`}`), 0, 0); err != nil {
		t.Errorf("no caps: %v", err)
	}
	// Exempt members: their values, whatever they hold, are not checked;
	// the rest still is.
	many := `[` + strings.Repeat("1,", 10) + `1]`
	exempt := []struct {
		data string
		ok   bool
	}{
		{`{"requestState":` + long + `}`, true},
		{`{"requestState":` + long + `,"a":` + long + `}`, false},
		{`{"inputResponses":{"x":{"result":{"data":` + long + `,"list":` + many + `}}},"b":1}`, true},
		{`{"inputResponses":{"x":1},"b":` + many + `}`, false},
		{`{"inputResponses":[` + long + `],"c":"` + `short"}`, true},
		{`{"a":{"requestState":` + long + `}}`, true},
		{`{"a":"requestState","b":` + long + `}`, false}, // a value named like the member is not a member
		{`{"requestState":1,"b":` + long + `}`, false},
		{`{"` + strings.Repeat("k", 101) + `":1,"requestState":1}`, false},
	}
	for _, tc := range exempt {
		err := protocol.CheckSizes([]byte(tc.data), 100, 10, "requestState", "inputResponses")
		if (err == nil) != tc.ok {
			t.Errorf("CheckSizes(%.80s..., exempt) = %v, want ok=%v", tc.data, err, tc.ok)
		}
	}
}

// TestIsToolError: a tools/call result (or the response around it) is a
// tool's error only when its own isError member is true, whatever else
// holds the bytes "isError":true.
func TestIsToolError(t *testing.T) {
	for _, tt := range []struct {
		result string
		want   bool
	}{
		{`{"content":[],"isError":true}`, true},
		// Only "isError":true as encoding/json writes it is read (the
		// workers' results are encoded so).
		{`{"isError" : true,"content":[]}`, false},
		{`{"content":[],"isError":false}`, false},
		{`{"content":[]}`, false},
		{`{"content":[],"structuredContent":{"isError":true}}`, false},
		{`{"content":[{"type":"text","text":"\"isError\":true"}]}`, false},
		{`{"content":[],"structuredContent":{"isError":true},"isError":true}`, true},
		{`{"\u0069sError":true,"content":[]}`, false},
		{`{"isError":true,"isError":false}`, false}, // the last one counts, as encoding/json decodes
		{`{"\u0069sError":false,"isError":true}`, true},
		{`{"IsError":true}`, false},
		{`{"isError":"true","x":{"isError":true}}`, false}, // not a boolean
		{`5`, false},
		{`null`, false},
	} {
		if got := protocol.IsToolError([]byte(tt.result)); got != tt.want {
			t.Errorf("IsToolError(%s) = %v, want %v", tt.result, got, tt.want)
		}
		resp := `{"jsonrpc":"2.0","id":1,"result":` + tt.result + `}`
		if got := protocol.IsToolErrorResult([]byte(resp)); got != tt.want {
			t.Errorf("IsToolErrorResult(%s) = %v, want %v", resp, got, tt.want)
		}
	}
	for _, resp := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"isError":true}}}`,
		`{"jsonrpc":"2.0","id":1,"isError":true,"result":{}}`,
	} {
		if protocol.IsToolErrorResult([]byte(resp)) {
			t.Errorf("IsToolErrorResult(%s) = true", resp)
		}
	}
}
