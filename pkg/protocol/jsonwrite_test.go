package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refCallToolResult encodes r as before the hand-written writers: by
// reflection, text blocks through marshalTyped.
func refCallToolResult(t *testing.T, r *CallToolResult) []byte {
	t.Helper()
	content := make([]json.RawMessage, len(r.Content))
	for i, c := range r.Content {
		var b []byte
		var err error
		if tc, ok := c.(*TextContent); ok && tc != nil {
			b, err = marshalTyped("text", (*textAlias)(tc))
		} else {
			b, err = json.Marshal(c)
		}
		if err != nil {
			t.Fatal(err)
		}
		content[i] = b
	}
	ref := struct {
		ResultBase
		Content           []json.RawMessage `json:"content"`
		StructuredContent any               `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
	}{r.ResultBase, content, r.StructuredContent, r.IsError}
	b, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var jsonStrings = []string{
	"", "hello", `quote " backslash \ slash /`, "<b>&amp;</b>", "\x00\x01\b\f\n\r\t\x1f\x7f",
	"é ü 日本 🎉", "\u2028 and \u2029", "bad \xff utf8 \xc3", "\xe2\x80", "tab\tend",
}

// TestFastResults: the hand-written encodings are byte for byte what
// encoding/json wrote for the same results.
func TestFastResults(t *testing.T) {
	var typedNil *TextContent
	results := []*CallToolResult{
		{},
		{Content: []Content{}},
		{Content: []Content{&TextContent{Text: "hello"}}},
		{ResultBase: ResultBase{ResultType: ResultTypeComplete, Meta: Meta{"z": 1, "a": map[string]any{"n": "<x>"}}},
			Content: []Content{&TextContent{Text: "a"}, &TextContent{Text: "b", Annotations: &Annotations{Priority: new(0.5)}},
				&TextContent{Text: "m", Meta: Meta{"k": "v"}}, &ImageContent{Data: "AAAA", MimeType: "image/png"}, nil, typedNil},
			StructuredContent: map[string]any{"isError": true, "v": []int{1, 2}}, IsError: true},
		{StructuredContent: (*struct{ A int })(nil)},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: &Implementation{Name: "mcpfleet", Version: "1.0.0"}}}},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: &Implementation{Name: "<n>", Version: "\u2028", Title: "t", Description: "d\n", WebsiteURL: "https://x/?a&b"}}}},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: &Implementation{Name: "i", Icons: []Icon{{Src: "s"}}}}}},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: (*Implementation)(nil)}}},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: Implementation{Name: "by value"}}}},
		{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: &Implementation{Name: "n"}, "other": 1}}},
	}
	for _, s := range jsonStrings {
		results = append(results, &CallToolResult{ResultBase: ResultBase{Meta: Meta{MetaServerInfo: &Implementation{Name: s, Version: s, Title: s, Description: s, WebsiteURL: s}}}})
	}
	for _, s := range jsonStrings {
		results = append(results, &CallToolResult{Content: []Content{&TextContent{Text: s}}, ResultBase: ResultBase{ResultType: s}})
	}
	for i, r := range results {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		want := refCallToolResult(t, r)
		if !bytes.Equal(got, want) {
			t.Errorf("%d:\n got %s\nwant %s", i, got, want)
		}
		resp, err := AppendResultResponse([]byte("x"), StringID("q"), r)
		if err != nil || !bytes.Equal(resp, append([]byte("x"), AppendResponse(nil, StringID("q"), want)...)) {
			t.Errorf("%d: AppendResultResponse = %s, %v", i, resp, err)
		}
	}
	var nilResult *CallToolResult
	for _, r := range []Result{&EmptyResult{}, &ListToolsResult{Tools: []*Tool{{Name: "t"}}}, nilResult} {
		raw, _ := json.Marshal(r)
		if got, err := AppendResultResponse(nil, Int64ID(1), r); err != nil || !bytes.Equal(got, AppendResponse(nil, Int64ID(1), raw)) {
			t.Errorf("%T: AppendResultResponse = %s, %v", r, got, err)
		}
	}
	for _, r := range []Result{&CallToolResult{StructuredContent: func() {}}, &CallToolResult{ResultBase: ResultBase{Meta: Meta{"f": func() {}}}}} {
		if got, err := AppendResultResponse([]byte("keep"), Int64ID(1), r); err == nil || string(got) != "keep" {
			t.Errorf("an unencodable result: %s, %v", got, err)
		}
	}
	for _, s := range jsonStrings {
		c := &TextContent{Text: s}
		got, _ := json.Marshal(c)
		want, _ := marshalTyped("text", (*textAlias)(c))
		if !bytes.Equal(got, want) {
			t.Errorf("text %q:\n got %s\nwant %s", s, got, want)
		}
	}
	if _, err := json.Marshal(&CallToolResult{StructuredContent: func() {}}); err == nil {
		t.Error("an unencodable structuredContent encoded")
	}
}

// FuzzAppendJSONString: appendJSONString writes what json.Marshal writes
// for any string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	})
}

func BenchmarkMarshalCallToolResult(b *testing.B) {
	r := &CallToolResult{ResultBase: ResultBase{ResultType: ResultTypeComplete},
		Content: []Content{&TextContent{Text: "hello from the benchmark"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
