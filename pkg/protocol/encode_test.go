package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

const legacyVersion = "2025-11-25"
const modernVersion = "2026-07-28"

// validate fails the test unless raw matches def in the official schema of
// version.
func validate(t testing.TB, version, def string, raw []byte) {
	t.Helper()
	if err := testenv.SchemasFor(t, version).Validate(def, raw); err != nil {
		t.Error(err)
	}
}

func TestEncoders(t *testing.T) {
	tricky := "he said \"hi\"\n\t<b>&</b> \\ é \u2028"
	tests := []struct {
		name     string
		got      []byte
		wantJSON string // exact bytes; "" to skip
		def      string
		want     protocol.Message
	}{
		{
			name:     "response with int id",
			got:      protocol.AppendResponse(nil, protocol.Int64ID(7), []byte(`{"content":[]}`)),
			wantJSON: `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
			def:      "JSONRPCResultResponse",
			want:     protocol.Message{ID: protocol.Int64ID(7), Result: json.RawMessage(`{"content":[]}`)},
		},
		{
			name:     "response with string id",
			got:      protocol.AppendResponse(nil, protocol.StringID("a\"b"), []byte(`{}`)),
			wantJSON: `{"jsonrpc":"2.0","id":"a\"b","result":{}}`,
			def:      "JSONRPCResultResponse",
			want:     protocol.Message{ID: protocol.StringID("a\"b"), Result: json.RawMessage(`{}`)},
		},
		{
			name:     "error response with id",
			got:      protocol.AppendErrorResponse(nil, protocol.StringID("r1"), protocol.NewError(protocol.CodeMethodNotFound, "method not found")),
			wantJSON: `{"jsonrpc":"2.0","id":"r1","error":{"code":-32601,"message":"method not found"}}`,
			def:      "JSONRPCErrorResponse",
			want:     protocol.Message{ID: protocol.StringID("r1"), Error: &protocol.Error{Code: -32601, Message: "method not found"}},
		},
		{
			name:     "error response without id",
			got:      protocol.AppendErrorResponse(nil, protocol.ID{}, protocol.NewError(protocol.CodeParseError, "parse error")),
			wantJSON: `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}`,
			def:      "JSONRPCErrorResponse",
			want:     protocol.Message{Error: &protocol.Error{Code: -32700, Message: "parse error"}},
		},
		{
			name: "error response with data",
			got: protocol.AppendErrorResponse(nil, protocol.Int64ID(3),
				protocol.NewError(protocol.CodeUnsupportedProtocolVersion, "unsupported").WithData(protocol.UnsupportedVersionData{Supported: []string{"2026-07-28"}, Requested: "x"})),
			wantJSON: `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"requested":"x"}}}`,
			def:      "JSONRPCErrorResponse",
			want: protocol.Message{ID: protocol.Int64ID(3), Error: &protocol.Error{Code: -32022, Message: "unsupported",
				Data: json.RawMessage(`{"supported":["2026-07-28"],"requested":"x"}`)}},
		},
		{
			name: "error response escapes the message",
			got:  protocol.AppendErrorResponse(nil, protocol.Int64ID(4), protocol.NewError(protocol.CodeInternalError, "%s", tricky)),
			def:  "JSONRPCErrorResponse",
			want: protocol.Message{ID: protocol.Int64ID(4), Error: &protocol.Error{Code: -32603, Message: tricky}},
		},
		{
			name:     "notification without params",
			got:      protocol.AppendNotification(nil, "notifications/tools/list_changed", nil),
			wantJSON: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
			def:      "JSONRPCNotification",
			want:     protocol.Message{Method: "notifications/tools/list_changed"},
		},
		{
			name:     "notification with params",
			got:      protocol.AppendNotification(nil, "notifications/progress", []byte(`{"progressToken":"p","progress":1}`)),
			wantJSON: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
			def:      "JSONRPCNotification",
			want:     protocol.Message{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"p","progress":1}`)},
		},
		{
			name: "notification escapes the method",
			got:  protocol.AppendNotification(nil, tricky, nil),
			def:  "JSONRPCNotification",
			want: protocol.Message{Method: tricky},
		},
		{
			name:     "request without params",
			got:      protocol.AppendRequest(nil, protocol.StringID("mcpf-w-1"), "roots/list", nil),
			wantJSON: `{"jsonrpc":"2.0","id":"mcpf-w-1","method":"roots/list"}`,
			def:      "JSONRPCRequest",
			want:     protocol.Message{ID: protocol.StringID("mcpf-w-1"), Method: "roots/list"},
		},
		{
			name:     "request with params",
			got:      protocol.AppendRequest(nil, protocol.Int64ID(-1), "sampling/createMessage", []byte(`{"messages":[],"maxTokens":5}`)),
			wantJSON: `{"jsonrpc":"2.0","id":-1,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`,
			def:      "JSONRPCRequest",
			want:     protocol.Message{ID: protocol.Int64ID(-1), Method: "sampling/createMessage", Params: json.RawMessage(`{"messages":[],"maxTokens":5}`)},
		},
		{
			name: "request escapes the method",
			got:  protocol.AppendRequest(nil, protocol.Int64ID(1), tricky, nil),
			def:  "JSONRPCRequest",
			want: protocol.Message{ID: protocol.Int64ID(1), Method: tricky},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid(tc.got) {
				t.Fatalf("output is not valid JSON: %s", tc.got)
			}
			if tc.wantJSON != "" && string(tc.got) != tc.wantJSON {
				t.Errorf("output = %s\nwant     %s", tc.got, tc.wantJSON)
			}
			m, err := protocol.Decode(tc.got, 0)
			if err != nil {
				t.Fatalf("Decode(%s) = %v", tc.got, err)
			}
			if d := diffMessage(m, &tc.want); d != "" {
				t.Errorf("Decode(%s): %s", tc.got, d)
			}
			validate(t, legacyVersion, tc.def, tc.got)
			validate(t, legacyVersion, "JSONRPCMessage", tc.got)
		})
	}
}

func TestEncodersAppend(t *testing.T) {
	prefix := []byte("data: ")
	tests := []struct {
		name string
		got  []byte
	}{
		{"response", protocol.AppendResponse(prefix, protocol.Int64ID(1), []byte(`{}`))},
		{"error response", protocol.AppendErrorResponse(prefix, protocol.Int64ID(1), protocol.ErrInternal)},
		{"notification", protocol.AppendNotification(prefix, "m", nil)},
		{"request", protocol.AppendRequest(prefix, protocol.Int64ID(1), "m", nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rest, ok := strings.CutPrefix(string(tc.got), string(prefix))
			if !ok {
				t.Fatalf("output %q lost the prefix", tc.got)
			}
			if !json.Valid([]byte(rest)) {
				t.Errorf("appended part %q is not valid JSON", rest)
			}
		})
	}
}

func TestSchemaRejectsBadEnvelopes(t *testing.T) {
	// The schema checks above must be able to fail.
	s := testenv.SchemasFor(t, legacyVersion)
	bad := []struct{ def, raw string }{
		{"JSONRPCResultResponse", `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"JSONRPCErrorResponse", `{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"}}`},
		{"JSONRPCNotification", `{"jsonrpc":"2.0","method":"m","params":[]}`},
		{"JSONRPCRequest", `{"jsonrpc":"2.0","method":"m"}`},
	}
	for _, tc := range bad {
		t.Run(tc.def, func(t *testing.T) {
			if err := s.Validate(tc.def, []byte(tc.raw)); err == nil {
				t.Errorf("%s accepted %s", tc.def, tc.raw)
			}
		})
	}
}

func TestEncodeResponse(t *testing.T) {
	got, err := protocol.EncodeResponse(protocol.Int64ID(9), &protocol.CallToolResult{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":9,"result":{"content":[]}}`; string(got) != want {
		t.Errorf("EncodeResponse = %s, want %s", got, want)
	}
	validate(t, legacyVersion, "JSONRPCResultResponse", got)
	if _, err := protocol.EncodeResponse(protocol.Int64ID(1), make(chan int)); err == nil {
		t.Error("EncodeResponse of a channel succeeded")
	}
}

func TestEncodeNotification(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params any
		want   string
	}{
		{"nil params", "notifications/initialized", nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"typed params", "notifications/resources/updated", &protocol.ResourceUpdatedParams{URI: "file:///a"},
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := protocol.EncodeNotification(tc.method, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("EncodeNotification = %s, want %s", got, tc.want)
			}
			validate(t, legacyVersion, "JSONRPCNotification", got)
		})
	}
	if _, err := protocol.EncodeNotification("m", func() {}); err == nil {
		t.Error("EncodeNotification of a func succeeded")
	}
}
