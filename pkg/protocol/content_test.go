package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func ptr[T any](v T) *T { return &v }

// contentCases are one block of every content type, with their exact JSON.
func contentCases() []struct {
	name  string
	typ   string
	block protocol.Content
	json  string
} {
	return []struct {
		name  string
		typ   string
		block protocol.Content
		json  string
	}{
		{"text", "text", &protocol.TextContent{Text: "hello"}, `{"type":"text","text":"hello"}`},
		{"empty text", "text", &protocol.TextContent{}, `{"type":"text","text":""}`},
		{"text with annotations and meta", "text",
			&protocol.TextContent{Text: "x", Annotations: &protocol.Annotations{Audience: []string{"user"}, Priority: ptr(0.5)}, Meta: protocol.Meta{"k": "v"}},
			`{"type":"text","text":"x","annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":"v"}}`},
		{"image", "image", &protocol.ImageContent{Data: "aGk=", MimeType: "image/png"}, `{"type":"image","data":"aGk=","mimeType":"image/png"}`},
		{"audio", "audio", &protocol.AudioContent{Data: "aGk=", MimeType: "audio/wav"}, `{"type":"audio","data":"aGk=","mimeType":"audio/wav"}`},
		{"resource link", "resource_link",
			&protocol.ResourceLink{Resource: protocol.Resource{URI: "file:///a.txt", Name: "a", MimeType: "text/plain", Size: ptr(int64(3))}},
			`{"type":"resource_link","uri":"file:///a.txt","name":"a","mimeType":"text/plain","size":3}`},
		{"embedded text resource", "resource",
			&protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///a.txt", MimeType: "text/plain", Text: "hi"}},
			`{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hi"}}`},
		{"embedded blob resource", "resource",
			&protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///a.bin", Blob: []byte("hi")}},
			`{"type":"resource","resource":{"uri":"file:///a.bin","blob":"aGk="}}`},
		{"tool use", "tool_use",
			&protocol.ToolUseContent{ID: "tu1", Name: "calc", Input: map[string]any{"x": 1.0}},
			`{"type":"tool_use","id":"tu1","name":"calc","input":{"x":1}}`},
		{"tool result", "tool_result",
			&protocol.ToolResultContent{ToolUseID: "tu1", Content: protocol.ContentList{&protocol.TextContent{Text: "2"}}, StructuredContent: map[string]any{"v": 2.0}},
			`{"type":"tool_result","toolUseId":"tu1","content":[{"type":"text","text":"2"}],"structuredContent":{"v":2}}`},
		{"tool result error", "tool_result",
			&protocol.ToolResultContent{ToolUseID: "tu2", Content: protocol.ContentList{}, IsError: true},
			`{"type":"tool_result","toolUseId":"tu2","content":[],"isError":true}`},
	}
}

// firstMember returns the name and value of the first member of a JSON
// object.
func firstMember(t testing.TB, raw []byte) (string, any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("%s does not start an object: %v %v", raw, tok, err)
	}
	key, err := dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	name, ok := key.(string)
	if !ok {
		t.Fatalf("%s: first token %v is not a member name", raw, key)
	}
	val, err := dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return name, val
}

func TestContentMarshal(t *testing.T) {
	for _, tc := range contentCases() {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.block)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(raw) != tc.json {
				t.Errorf("Marshal = %s\nwant      %s", raw, tc.json)
			}
			name, val := firstMember(t, raw)
			if name != "type" || val != tc.typ {
				t.Errorf("first member = %q: %v, want \"type\": %q", name, val, tc.typ)
			}
			// Inside a list too (values, not only pointers taken by the test).
			list, err := json.Marshal([]protocol.Content{tc.block})
			if err != nil {
				t.Fatal(err)
			}
			if string(list) != "["+tc.json+"]" {
				t.Errorf("Marshal([]Content) = %s, want [%s]", list, tc.json)
			}
		})
	}
}

func TestUnmarshalContentRoundTrip(t *testing.T) {
	for _, tc := range contentCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := protocol.UnmarshalContent([]byte(tc.json))
			if err != nil {
				t.Fatalf("UnmarshalContent(%s): %v", tc.json, err)
			}
			if !reflect.DeepEqual(got, tc.block) {
				t.Errorf("UnmarshalContent(%s) = %#v, want %#v", tc.json, got, tc.block)
			}
		})
	}
}

func TestUnmarshalContentErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // substring of the error
	}{
		{"unknown type", `{"type":"video","data":"x"}`, `unknown content type "video"`},
		{"missing type", `{"text":"x"}`, `unknown content type ""`},
		{"not an object", `"text"`, "cannot unmarshal"},
		{"invalid JSON", `{"type":`, "unexpected end"},
		{"wrong member type", `{"type":"text","text":5}`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := protocol.UnmarshalContent([]byte(tc.in))
			if err == nil {
				t.Fatalf("UnmarshalContent(%s) = %#v, want an error", tc.in, c)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestContentListRoundTrip(t *testing.T) {
	var blocks protocol.ContentList
	for _, tc := range contentCases() {
		blocks = append(blocks, tc.block)
	}
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var back protocol.ContentList
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("Unmarshal(%s): %v", raw, err)
	}
	if !reflect.DeepEqual(back, blocks) {
		t.Errorf("round trip = %#v, want %#v", back, blocks)
	}

	var empty protocol.ContentList
	if err := json.Unmarshal([]byte(`[]`), &empty); err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("Unmarshal([]) = %#v, %v; want an empty non-nil list", empty, err)
	}
	var bad protocol.ContentList
	if err := json.Unmarshal([]byte(`[{"type":"text","text":"ok"},{"type":"nope"}]`), &bad); err == nil {
		t.Errorf("a list with an unknown block decoded to %#v", bad)
	}
	if err := json.Unmarshal([]byte(`{"type":"text","text":"ok"}`), &bad); err == nil {
		t.Error("an object decoded as a ContentList")
	}
}

func TestSingleOrList(t *testing.T) {
	text := &protocol.TextContent{Text: "hi"}
	use := &protocol.ToolUseContent{ID: "1", Name: "n", Input: map[string]any{}}
	tests := []struct {
		name string
		in   string
		want protocol.SingleOrList
	}{
		{"single object", `{"type":"text","text":"hi"}`, protocol.SingleOrList{Blocks: []protocol.Content{text}}},
		{"array of one", `[{"type":"text","text":"hi"}]`, protocol.SingleOrList{Blocks: []protocol.Content{text}, List: true}},
		{"array of two", `[{"type":"text","text":"hi"},{"type":"tool_use","id":"1","name":"n","input":{}}]`,
			protocol.SingleOrList{Blocks: []protocol.Content{text, use}, List: true}},
		{"empty array", `[]`, protocol.SingleOrList{Blocks: []protocol.Content{}, List: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got protocol.SingleOrList
			if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", tc.in, err)
			}
			if got.List != tc.want.List || len(got.Blocks) != len(tc.want.Blocks) {
				t.Fatalf("Unmarshal(%s) = %#v, want %#v", tc.in, got, tc.want)
			}
			for i := range got.Blocks {
				if !reflect.DeepEqual(got.Blocks[i], tc.want.Blocks[i]) {
					t.Errorf("block %d = %#v, want %#v", i, got.Blocks[i], tc.want.Blocks[i])
				}
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.in {
				t.Errorf("Marshal = %s, want the input back: %s", out, tc.in)
			}
		})
	}

	marshal := []struct {
		name string
		in   protocol.SingleOrList
		want string
	}{
		{"nil blocks", protocol.SingleOrList{}, `[]`},
		{"nil blocks forced list", protocol.SingleOrList{List: true}, `[]`},
		{"one block", protocol.SingleOrList{Blocks: []protocol.Content{text}}, `{"type":"text","text":"hi"}`},
		{"one block forced list", protocol.SingleOrList{Blocks: []protocol.Content{text}, List: true}, `[{"type":"text","text":"hi"}]`},
		{"two blocks without List", protocol.SingleOrList{Blocks: []protocol.Content{text, text}}, `[{"type":"text","text":"hi"},{"type":"text","text":"hi"}]`},
	}
	for _, tc := range marshal {
		t.Run("marshal "+tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("Marshal = %s, want %s", out, tc.want)
			}
		})
	}

	var bad protocol.SingleOrList
	for _, in := range []string{`{"type":"nope"}`, `[{"type":"nope"}]`, `"x"`} {
		if err := json.Unmarshal([]byte(in), &bad); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %#v", in, bad)
		}
	}
}

func TestResourceContentsTextOrBlob(t *testing.T) {
	tests := []struct {
		name string
		in   protocol.ResourceContents
		want string
	}{
		{"text", protocol.ResourceContents{URI: "file:///a", Text: "x"}, `{"uri":"file:///a","text":"x"}`},
		{"empty text", protocol.ResourceContents{URI: "file:///a"}, `{"uri":"file:///a","text":""}`},
		{"blob wins over text", protocol.ResourceContents{URI: "file:///b", MimeType: "application/octet-stream", Text: "ignored", Blob: []byte{0, 1, 2}},
			`{"uri":"file:///b","mimeType":"application/octet-stream","blob":"AAEC"}`},
		{"empty blob is still a blob", protocol.ResourceContents{URI: "file:///c", Blob: []byte{}}, `{"uri":"file:///c","blob":""}`},
		{"meta", protocol.ResourceContents{URI: "file:///d", Text: "t", Meta: protocol.Meta{"k": "v"}}, `{"uri":"file:///d","text":"t","_meta":{"k":"v"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(&tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.want {
				t.Errorf("Marshal = %s, want %s", raw, tc.want)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			_, hasText := m["text"]
			_, hasBlob := m["blob"]
			if hasText == hasBlob {
				t.Errorf("%s: text present %v, blob present %v; want exactly one", raw, hasText, hasBlob)
			}
		})
	}
}

func TestCallToolResultJSON(t *testing.T) {
	tests := []struct {
		name string
		in   protocol.CallToolResult
		want string
	}{
		{"nil content", protocol.CallToolResult{}, `{"content":[]}`},
		{"nil content, error", protocol.CallToolResult{IsError: true}, `{"content":[],"isError":true}`},
		{"content and structured", protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: "4"}}, StructuredContent: map[string]any{"sum": 4.0}},
			`{"content":[{"type":"text","text":"4"}],"structuredContent":{"sum":4}}`},
		{"modern", protocol.CallToolResult{ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete, Meta: protocol.Meta{"k": "v"}}},
			`{"_meta":{"k":"v"},"resultType":"complete","content":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(&tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.want {
				t.Errorf("Marshal = %s, want %s", raw, tc.want)
			}
			var back protocol.CallToolResult
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", raw, err)
			}
			want := tc.in
			if want.Content == nil {
				want.Content = []protocol.Content{}
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip = %#v, want %#v", back, want)
			}
		})
	}
	t.Run("receiver untouched", func(t *testing.T) {
		r := &protocol.CallToolResult{}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if r.Content != nil {
			t.Errorf("Marshal set the receiver's Content to %#v", r.Content)
		}
	})
}

func TestCallToolResultUnmarshalErrors(t *testing.T) {
	for _, in := range []string{
		`{"content":[{"type":"nope"}]}`,
		`{"content":{"type":"text","text":"x"}}`,
		`{"content":[],"isError":"yes"}`,
	} {
		var r protocol.CallToolResult
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %#v", in, r)
		}
	}
}

func TestPromptMessageRoundTrip(t *testing.T) {
	in := protocol.GetPromptResult{
		Description: "d",
		Messages: []*protocol.PromptMessage{
			{Role: "user", Content: &protocol.TextContent{Text: "hi"}},
			{Role: "assistant", Content: &protocol.ImageContent{Data: "aGk=", MimeType: "image/png"}},
			{Role: "user", Content: &protocol.EmbeddedResource{Resource: &protocol.ResourceContents{URI: "file:///a", Text: "t"}}},
		},
	}
	raw, err := json.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var back protocol.GetPromptResult
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("Unmarshal(%s): %v", raw, err)
	}
	if !reflect.DeepEqual(back, in) {
		t.Errorf("round trip of %s = %#v, want %#v", raw, back, in)
	}
	var pm protocol.PromptMessage
	if err := json.Unmarshal([]byte(`{"role":"user","content":{"type":"nope"}}`), &pm); err == nil {
		t.Error("a prompt message with an unknown block decoded")
	}
}
