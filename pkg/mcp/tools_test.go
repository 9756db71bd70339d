package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// listPage is the decoded shape of a list result page.
type listPage struct {
	Tools []struct {
		Name         string          `json:"name"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	} `json:"tools"`
	NextCursor *string `json:"nextCursor"`
}

func (p listPage) names() []string {
	var n []string
	for _, t := range p.Tools {
		n = append(n, t.Name)
	}
	return n
}

// listTools fetches one tools/list page after cursor (nil: the first).
func listTools(tb testing.TB, s *mcp.Server, cursor *string) listPage {
	tb.Helper()
	params := `{}`
	if cursor != nil {
		params = `{"cursor":` + quote(*cursor) + `}`
	}
	raw := mustResult(tb, s, legacyReq(protocol.MethodToolsList), params)
	validate(tb, protocol.Version20251125, "ListToolsResult", raw)
	p := decode[listPage](tb, raw)
	if _, ok := members(tb, raw)["nextCursor"]; ok != (p.NextCursor != nil) {
		tb.Fatalf("nextCursor member present=%v but decoded %v", ok, p.NextCursor)
	}
	return p
}

func TestToolsListIsSorted(t *testing.T) {
	s := newServer(t, nil)
	addTools(t, s, "zeta", "alpha", "mid", "Beta")
	p := listTools(t, s, nil)
	if want := []string{"Beta", "alpha", "mid", "zeta"}; !reflect.DeepEqual(p.names(), want) {
		t.Errorf("tools = %v, want %v", p.names(), want)
	}
	if p.NextCursor != nil {
		t.Errorf("nextCursor = %q on a single page, want none", *p.NextCursor)
	}
}

func TestToolsListPagination(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{PageSize: 2})
	addTools(t, s, "e", "b", "d", "a", "c")

	var (
		got    []string
		sizes  []int
		cursor *string
	)
	for range 10 { // bounded: 5 tools in pages of 2 need 3 pages
		p := listTools(t, s, cursor)
		got = append(got, p.names()...)
		sizes = append(sizes, len(p.Tools))
		if p.NextCursor == nil {
			break
		}
		cursor = p.NextCursor
	}
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cursor chain listed %v, want %v (each tool exactly once, in order)", got, want)
	}
	if want := []int{2, 2, 1}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("page sizes = %v, want %v", sizes, want)
	}
}

func TestToolsListInvalidCursor(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{PageSize: 2})
	addTools(t, s, "a", "b", "c")
	for _, c := range []string{"not base64!", "%%%", "a=b=c", ""} {
		t.Run(fmt.Sprintf("%q", c), func(t *testing.T) {
			mustError(t, s, legacyReq(protocol.MethodToolsList), `{"cursor":`+quote(c)+`}`, protocol.CodeInvalidParams)
		})
	}
	t.Run("cursor of the wrong type", func(t *testing.T) {
		mustError(t, s, legacyReq(protocol.MethodToolsList), `{"cursor":42}`, protocol.CodeInvalidParams)
	})
}

func TestToolsListCursorSurvivesChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, s *mcp.Server)
		want   []string // the rest of the list after the first page [a b]
	}{
		{"no change", func(*testing.T, *mcp.Server) {}, []string{"c", "d", "e"}},
		{"the cursor's own tool removed", func(_ *testing.T, s *mcp.Server) { s.RemoveTools("b") }, []string{"c", "d", "e"}},
		{"the next tool removed", func(_ *testing.T, s *mcp.Server) { s.RemoveTools("c") }, []string{"d", "e"}},
		{"a tool added after the cursor", func(t *testing.T, s *mcp.Server) { addTools(t, s, "bb") }, []string{"bb", "c", "d", "e"}},
		{"a tool added before the cursor", func(t *testing.T, s *mcp.Server) { addTools(t, s, "aa") }, []string{"c", "d", "e"}},
		{"every later tool removed", func(_ *testing.T, s *mcp.Server) { s.RemoveTools("c", "d", "e") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, &mcp.ServerOptions{PageSize: 2})
			addTools(t, s, "a", "b", "c", "d", "e")
			first := listTools(t, s, nil)
			if want := []string{"a", "b"}; !reflect.DeepEqual(first.names(), want) || first.NextCursor == nil {
				t.Fatalf("first page = %v (next %v), want %v with a cursor", first.names(), first.NextCursor, want)
			}
			tt.change(t, s)
			var rest []string
			cursor := first.NextCursor
			for i := 0; cursor != nil; i++ {
				if i == 10 {
					t.Fatal("the cursor chain does not end")
				}
				p := listTools(t, s, cursor)
				rest = append(rest, p.names()...)
				cursor = p.NextCursor
			}
			if !reflect.DeepEqual(rest, tt.want) {
				t.Errorf("after the change the cursor listed %v, want %v", rest, tt.want)
			}
		})
	}
}

func TestToolsCall(t *testing.T) {
	s := newServer(t, nil)
	var gotArgs json.RawMessage
	record := func(_ context.Context, _ *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
		gotArgs = append(json.RawMessage(nil), args...)
		return mcp.TextResult("recorded"), nil
	}
	if err := s.AddTool(&protocol.Tool{Name: "record"}, record); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	if err := s.AddTool(&protocol.Tool{Name: "strict", InputSchema: json.RawMessage(schema)}, record); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(&protocol.Tool{Name: "fails"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return nil, errors.New("the database is on fire")
	}); err != nil {
		t.Fatal(err)
	}
	protoErr := protocol.NewError(-31000, "quota exceeded").WithData(map[string]int{"retryAfter": 3})
	if err := s.AddTool(&protocol.Tool{Name: "refuses"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return nil, fmt.Errorf("wrapped: %w", protoErr)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(&protocol.Tool{Name: "panics"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		panic("boom")
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTool(&protocol.Tool{Name: "nil"}, func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}

	t.Run("unknown tool is invalid params", func(t *testing.T) {
		e := mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"nope"}`, protocol.CodeInvalidParams)
		if !strings.Contains(e.Message, "nope") {
			t.Errorf("message %q does not name the tool", e.Message)
		}
	})
	t.Run("missing name is invalid params", func(t *testing.T) {
		mustError(t, s, legacyReq(protocol.MethodToolsCall), `{}`, protocol.CodeInvalidParams)
	})
	for _, tt := range []struct{ name, args string }{
		{"wrong type", `{"n":"seven"}`},
		{"missing required", `{}`},
		{"unknown member", `{"n":1,"extra":true}`},
		{"not an object", `[1]`},
	} {
		t.Run("arguments invalid vs schema: "+tt.name, func(t *testing.T) {
			gotArgs = nil
			res := callTool(t, s, "strict", tt.args)
			if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" {
				t.Fatalf("got %+v, want an isError result with one text block", res)
			}
			if msg := res.Content[0].Text; !strings.Contains(msg, "invalid arguments") || !strings.Contains(msg, `"strict"`) {
				t.Errorf("message %q should say the arguments of \"strict\" are invalid", msg)
			}
			if gotArgs != nil {
				t.Errorf("the handler ran with invalid arguments %s", gotArgs)
			}
		})
	}
	t.Run("valid arguments reach the handler", func(t *testing.T) {
		res := callTool(t, s, "strict", `{"n":7}`)
		if res.IsError {
			t.Fatalf("got a tool error %+v", res)
		}
		wantJSON(t, gotArgs, `{"n":7}`)
	})
	for _, tt := range []struct{ name, params string }{
		{"absent", `{"name":"record"}`},
		{"null", `{"name":"record","arguments":null}`},
	} {
		t.Run("arguments "+tt.name+" are treated as {}", func(t *testing.T) {
			gotArgs = nil
			mustResult(t, s, legacyReq(protocol.MethodToolsCall), tt.params)
			if string(gotArgs) != `{}` {
				t.Errorf("handler got arguments %q, want {}", gotArgs)
			}
		})
	}
	t.Run("plain handler error is a tool error", func(t *testing.T) {
		res := callTool(t, s, "fails", "")
		if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != "the database is on fire" {
			t.Errorf("got %+v, want isError with the error text", res)
		}
	})
	t.Run("protocol error is a JSON-RPC error", func(t *testing.T) {
		e := mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"refuses"}`, -31000)
		if e.Message != "quota exceeded" {
			t.Errorf("message = %q, want %q", e.Message, "quota exceeded")
		}
		wantJSON(t, e.Data, `{"retryAfter":3}`)
	})
	t.Run("panic is an internal error and the server keeps working", func(t *testing.T) {
		e := mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"panics"}`, protocol.CodeInternalError)
		if strings.Contains(e.Message, "boom") {
			t.Errorf("message %q leaks the panic value", e.Message)
		}
		if res := callTool(t, s, "record", `{}`); res.IsError || res.Content[0].Text != "recorded" {
			t.Errorf("after a panic: got %+v, want a normal result", res)
		}
	})
	t.Run("nil result is an empty content list", func(t *testing.T) {
		raw := mustResult(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"nil"}`)
		validate(t, protocol.Version20251125, "CallToolResult", raw)
		wantJSON(t, raw, `{"content":[]}`)
	})
}

type sumIn struct {
	A    int     `json:"a" jsonschema:"the first addend"`
	B    int     `json:"b,omitempty" jsonschema:"the second addend"`
	Note *string `json:"note"`
}

type sumOut struct {
	Sum  int    `json:"sum"`
	Note string `json:"note,omitempty"`
}

// toolDef returns the tools/list entry of name.
func toolDef(tb testing.TB, s *mcp.Server, name string) (input, output json.RawMessage) {
	tb.Helper()
	for _, tl := range listTools(tb, s, nil).Tools {
		if tl.Name == name {
			return tl.InputSchema, tl.OutputSchema
		}
	}
	tb.Fatalf("tool %q is not listed", name)
	return nil, nil
}

func TestTypedTool(t *testing.T) {
	s := newServer(t, nil)
	err := mcp.AddTool(s, &protocol.Tool{Name: "sum"}, func(_ context.Context, _ *mcp.Request, in sumIn) (*protocol.CallToolResult, sumOut, error) {
		out := sumOut{Sum: in.A + in.B}
		if in.Note != nil {
			out.Note = *in.Note
		}
		return nil, out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = mcp.AddTool(s, &protocol.Tool{Name: "sum_text"}, func(_ context.Context, _ *mcp.Request, in sumIn) (*protocol.CallToolResult, sumOut, error) {
		return mcp.TextResult(fmt.Sprintf("%d", in.A+in.B)), sumOut{Sum: in.A + in.B}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = mcp.AddTool(s, &protocol.Tool{Name: "untyped_out"}, func(_ context.Context, _ *mcp.Request, in sumIn) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult("plain"), map[string]int{"ignored": 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = mcp.AddTool(s, &protocol.Tool{Name: "typed_fails"}, func(_ context.Context, _ *mcp.Request, in sumIn) (*protocol.CallToolResult, sumOut, error) {
		return nil, sumOut{}, errors.New("cannot add today")
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("input schema derived from In", func(t *testing.T) {
		in, _ := toolDef(t, s, "sum")
		wantJSON(t, in, `{
			"type":"object",
			"properties":{
				"a":{"type":"integer","description":"the first addend"},
				"b":{"type":"integer","description":"the second addend"},
				"note":{"type":"string"}
			},
			"required":["a"]
		}`)
	})
	t.Run("output schema derived from a struct Out", func(t *testing.T) {
		_, out := toolDef(t, s, "sum")
		wantJSON(t, out, `{"type":"object","properties":{"sum":{"type":"integer"},"note":{"type":"string"}},"required":["sum"]}`)
	})
	t.Run("no output schema when Out is any", func(t *testing.T) {
		if _, out := toolDef(t, s, "untyped_out"); out != nil {
			t.Errorf("outputSchema = %s, want none", out)
		}
	})
	t.Run("structuredContent and a JSON text block when the handler returns no content", func(t *testing.T) {
		res := callTool(t, s, "sum", `{"a":2,"b":3,"note":"hi"}`)
		wantJSON(t, res.StructuredContent, `{"sum":5,"note":"hi"}`)
		if len(res.Content) != 1 || res.Content[0].Type != "text" {
			t.Fatalf("content = %+v, want one text block", res.Content)
		}
		wantJSON(t, []byte(res.Content[0].Text), `{"sum":5,"note":"hi"}`)
		_, out := toolDef(t, s, "sum")
		v, err := jsonschema.Compile(out)
		if err != nil {
			t.Fatalf("compiling the output schema: %v", err)
		}
		if err := v.ValidateJSON(res.StructuredContent); err != nil {
			t.Errorf("structuredContent does not match the tool's outputSchema: %v", err)
		}
	})
	t.Run("the handler's content is kept", func(t *testing.T) {
		res := callTool(t, s, "sum_text", `{"a":2,"b":3}`)
		wantJSON(t, res.StructuredContent, `{"sum":5}`)
		if len(res.Content) != 1 || res.Content[0].Text != "5" {
			t.Errorf("content = %+v, want the handler's single text block \"5\"", res.Content)
		}
	})
	t.Run("no structuredContent when Out is any", func(t *testing.T) {
		res := callTool(t, s, "untyped_out", `{"a":1}`)
		if res.StructuredContent != nil {
			t.Errorf("structuredContent = %s, want none", res.StructuredContent)
		}
	})
	t.Run("required In member missing is a tool error", func(t *testing.T) {
		res := callTool(t, s, "sum", `{"b":1}`)
		if !res.IsError || res.StructuredContent != nil {
			t.Errorf("got %+v, want isError without structuredContent", res)
		}
	})
	t.Run("nil pointer Out adds no structuredContent", func(t *testing.T) {
		// Regression: a nil *Out used to be sent as "structuredContent":null
		// with a "null" text block, which no schema accepts.
		s := newServer(t, nil)
		if err := mcp.AddTool(s, &protocol.Tool{Name: "maybe"}, func(_ context.Context, _ *mcp.Request, in sumIn) (*protocol.CallToolResult, *sumOut, error) {
			if in.A == 0 {
				return nil, nil, nil
			}
			return nil, &sumOut{Sum: in.A}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, out := toolDef(t, s, "maybe"); out == nil {
			t.Error("no outputSchema derived from *sumOut")
		}
		raw := mustResult(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"maybe","arguments":{"a":0}}`)
		validate(t, protocol.Version20251125, "CallToolResult", raw)
		wantJSON(t, raw, `{"content":[]}`)
		res := callTool(t, s, "maybe", `{"a":4}`)
		wantJSON(t, res.StructuredContent, `{"sum":4}`)
	})
	t.Run("handler error is a tool error without structuredContent", func(t *testing.T) {
		res := callTool(t, s, "typed_fails", `{"a":1}`)
		if !res.IsError || res.StructuredContent != nil || len(res.Content) != 1 || res.Content[0].Text != "cannot add today" {
			t.Errorf("got %+v, want isError with the error text only", res)
		}
	})
}

func TestHandWrittenInputSchemaServedVerbatim(t *testing.T) {
	// Member order, an extension keyword and a $defs reference must all
	// survive: the schema is never re-marshalled through a map.
	schema := `{"type":"object","properties":{"zeta":{"$ref":"#/$defs/z"},"alpha":{"type":"number","minimum":0}},"required":["zeta"],"x-vendor":{"keep":true},"$defs":{"z":{"type":"string"}}}`
	output := `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "raw", InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(output)}, textTool("raw")); err != nil {
		t.Fatal(err)
	}
	typed := func(context.Context, *mcp.Request, sumIn) (*protocol.CallToolResult, sumOut, error) {
		return nil, sumOut{}, nil
	}
	if err := mcp.AddTool(s, &protocol.Tool{Name: "typed_raw", InputSchema: json.RawMessage(schema)}, typed); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"raw", "typed_raw"} {
		t.Run(name, func(t *testing.T) {
			in, out := toolDef(t, s, name)
			if string(in) != schema {
				t.Errorf("inputSchema served as\n\t%s\nwant byte-equal\n\t%s", in, schema)
			}
			if name == "raw" && string(out) != output {
				t.Errorf("outputSchema served as\n\t%s\nwant byte-equal\n\t%s", out, output)
			}
		})
	}
	t.Run("arguments are validated against it", func(t *testing.T) {
		if res := callTool(t, s, "raw", `{"zeta":1}`); !res.IsError {
			t.Errorf("zeta=1 violates the $ref'd string schema but got %+v", res)
		}
		if res := callTool(t, s, "raw", `{"zeta":"z","alpha":1.5}`); res.IsError {
			t.Errorf("valid arguments rejected: %+v", res)
		}
	})
}

func TestAddToolRejects(t *testing.T) {
	tests := []struct {
		name    string
		tool    *protocol.Tool
		handler mcp.ToolHandler
	}{
		{"string schema", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)}, textTool("")},
		{"schema without a type", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`{"properties":{}}`)}, textTool("")},
		{"type list", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":["object","null"]}`)}, textTool("")},
		{"array", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`[{"type":"object"}]`)}, textTool("")},
		{"boolean schema", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`true`)}, textTool("")},
		{"null", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`null`)}, textTool("")},
		{"invalid JSON", &protocol.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"`)}, textTool("")},
		{"nil tool", nil, textTool("")},
		{"empty name", &protocol.Tool{}, textTool("")},
		{"nil handler", &protocol.Tool{Name: "t"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, nil)
			events := &eventLog{}
			s.SetEvents(events)
			if err := s.AddTool(tt.tool, tt.handler); err == nil {
				t.Fatal("AddTool accepted it")
			}
			if n := listTools(t, s, nil).names(); len(n) != 0 {
				t.Errorf("tools/list = %v after a rejected AddTool, want none", n)
			}
			if got := events.take(); len(got) != 0 {
				t.Errorf("events %v after a rejected AddTool, want none", got)
			}
		})
	}
	// Regression: a non-object Out used to derive an outputSchema such as
	// {"type":"string"} and a string structuredContent, both invalid for
	// 2025-11-25 clients.
	for _, tt := range []struct {
		name string
		add  func(s *mcp.Server) error
	}{
		{"string Out", func(s *mcp.Server) error {
			return mcp.AddTool(s, &protocol.Tool{Name: "t"}, func(context.Context, *mcp.Request, struct{}) (*protocol.CallToolResult, string, error) {
				return nil, "", nil
			})
		}},
		{"slice Out", func(s *mcp.Server) error {
			return mcp.AddTool(s, &protocol.Tool{Name: "t"}, func(context.Context, *mcp.Request, struct{}) (*protocol.CallToolResult, []int, error) {
				return nil, nil, nil
			})
		}},
	} {
		t.Run("typed tool with a non-object "+tt.name, func(t *testing.T) {
			s := newServer(t, nil)
			if err := tt.add(s); err == nil {
				t.Error("AddTool accepted an Out whose schema is not an object")
			}
			if n := listTools(t, s, nil).names(); len(n) != 0 {
				t.Errorf("tools/list = %v after a rejected AddTool, want none", n)
			}
		})
	}
	t.Run("typed tool with a map Out", func(t *testing.T) {
		s := newServer(t, nil)
		if err := mcp.AddTool(s, &protocol.Tool{Name: "m"}, func(context.Context, *mcp.Request, struct{}) (*protocol.CallToolResult, map[string]int, error) {
			return nil, map[string]int{"n": 1}, nil
		}); err != nil {
			t.Fatalf("AddTool rejected a map Out: %v", err)
		}
		wantJSON(t, callTool(t, s, "m", "").StructuredContent, `{"n":1}`)
	})
	t.Run("typed tool with a non-object In", func(t *testing.T) {
		s := newServer(t, nil)
		err := mcp.AddTool(s, &protocol.Tool{Name: "t"}, func(context.Context, *mcp.Request, string) (*protocol.CallToolResult, any, error) {
			return nil, nil, nil
		})
		if err == nil {
			t.Error("AddTool accepted a string In, whose schema is not an object")
		}
	})
}

func TestAddToolDefaultsAndReplaces(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddTool(&protocol.Tool{Name: "t", Description: "v1"}, textTool("v1")); err != nil {
		t.Fatal(err)
	}
	in, _ := toolDef(t, s, "t")
	if string(in) != `{"type":"object"}` {
		t.Errorf("default inputSchema = %s, want {\"type\":\"object\"}", in)
	}
	if err := s.AddTool(&protocol.Tool{Name: "t", Description: "v2"}, textTool("v2")); err != nil {
		t.Fatal(err)
	}
	if n := listTools(t, s, nil).names(); !reflect.DeepEqual(n, []string{"t"}) {
		t.Errorf("tools after replacing = %v, want [t]", n)
	}
	if res := callTool(t, s, "t", ""); res.Content[0].Text != "v2" {
		t.Errorf("replaced tool answered %q, want v2", res.Content[0].Text)
	}
	s.RemoveTools("t", "never-existed")
	mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"t"}`, protocol.CodeInvalidParams)
}

// TestAddToolFlatArguments: a flat input struct's arguments reach the
// handler as encoding/json decodes them, also when the fast decode sets
// some fields and then hands over to encoding/json. The schema accepts any
// object, so that the decode, not the validation, meets bad arguments.
func TestAddToolFlatArguments(t *testing.T) {
	type in struct {
		Count int     `json:"count,omitempty"`
		Ratio float64 `json:"ratio,omitempty"`
		Loud  bool    `json:"loud,omitempty"`
		Name  string  `json:"name"`
	}
	s := newServer(t, nil)
	if err := mcp.AddTool(s, &protocol.Tool{Name: "flat", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, _ *mcp.Request, v in) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult(fmt.Sprintf("%q %d %g %v", v.Name, v.Count, v.Ratio, v.Loud)), nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"name":"a","count":3,"ratio":0.5,"loud":true}`: `"a" 3 0.5 true`,
		`{"count":3,"ratio":2,"name":"\u00e9t\u00e9"}`:   `"été" 3 2 false`, // declined at the escaped name, after count and ratio: decoded anew
		`{"count":3,"loud":"\u0074rue"}`:                 "error",           // declined after count: encoding/json reports it
		`{"count":3,"ratio":1e400}`:                      "error",
		`{"count":1.5,"name":"a"}`:                       "error",
		`{"name":"a","NAME":"b"}`:                        `"b" 0 0 false`, // encoding/json's case folding
	} {
		res := callTool(t, s, "flat", args)
		got := "error"
		if !res.IsError {
			got = res.Content[0].Text
		} else if !strings.Contains(res.Content[0].Text, "invalid arguments") {
			got = "unexpected: " + res.Content[0].Text
		}
		if got != want {
			t.Errorf("%s: got %s, want %s (%+v)", args, got, want, res)
		}
	}
}
