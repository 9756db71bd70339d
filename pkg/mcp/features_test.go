package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestPromptsAbsent(t *testing.T) {
	s := newServer(t, nil)
	addTools(t, s, "t")
	for _, m := range []string{protocol.MethodPromptsList, protocol.MethodPromptsGet} {
		t.Run(m, func(t *testing.T) {
			mustError(t, s, legacyReq(m), `{"name":"p"}`, protocol.CodeMethodNotFound)
		})
	}
}

func TestPromptsGet(t *testing.T) {
	s := newServer(t, nil)
	var (
		mu      sync.Mutex
		gotArgs map[string]string
	)
	err := s.AddPrompt(&protocol.Prompt{
		Name: "greet",
		Arguments: []*protocol.PromptArgument{
			{Name: "name", Required: true},
			{Name: "tone"},
		},
	}, func(_ context.Context, _ *mcp.Request, args map[string]string) (*protocol.GetPromptResult, error) {
		mu.Lock()
		gotArgs = args
		mu.Unlock()
		return &protocol.GetPromptResult{
			Description: "a greeting",
			Messages: []*protocol.PromptMessage{
				{Role: "user", Content: &protocol.TextContent{Text: "Say hello to " + args["name"]}},
			},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddPrompt(&protocol.Prompt{Name: "bare"}, func(_ context.Context, _ *mcp.Request, args map[string]string) (*protocol.GetPromptResult, error) {
		mu.Lock()
		gotArgs = args
		mu.Unlock()
		return &protocol.GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}

	errTests := []struct {
		name, params string
	}{
		{"unknown prompt", `{"name":"nope"}`},
		{"missing required argument", `{"name":"greet","arguments":{"tone":"warm"}}`},
		{"no arguments at all", `{"name":"greet"}`},
		{"argument that is not a string", `{"name":"greet","arguments":{"name":5}}`},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			gotArgs = nil
			mu.Unlock()
			mustError(t, s, legacyReq(protocol.MethodPromptsGet), tt.params, protocol.CodeInvalidParams)
			mu.Lock()
			defer mu.Unlock()
			if gotArgs != nil {
				t.Errorf("the handler ran with %v", gotArgs)
			}
		})
	}
	okTests := []struct {
		name, params string
		want         map[string]string
	}{
		{"arguments passed", `{"name":"greet","arguments":{"name":"Ada","tone":"warm"}}`, map[string]string{"name": "Ada", "tone": "warm"}},
		{"optional argument omitted", `{"name":"greet","arguments":{"name":"Ada"}}`, map[string]string{"name": "Ada"}},
		{"no arguments is an empty map", `{"name":"bare"}`, map[string]string{}},
	}
	for _, tt := range okTests {
		t.Run(tt.name, func(t *testing.T) {
			raw := mustResult(t, s, legacyReq(protocol.MethodPromptsGet), tt.params)
			validate(t, protocol.Version20251125, "GetPromptResult", raw)
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(gotArgs, tt.want) || gotArgs == nil {
				t.Errorf("handler got %#v, want %#v", gotArgs, tt.want)
			}
		})
	}
	t.Run("list", func(t *testing.T) {
		raw := mustResult(t, s, legacyReq(protocol.MethodPromptsList), `{}`)
		validate(t, protocol.Version20251125, "ListPromptsResult", raw)
		got := decode[protocol.ListPromptsResult](t, raw)
		var names []string
		for _, p := range got.Prompts {
			names = append(names, p.Name)
		}
		if want := []string{"bare", "greet"}; !reflect.DeepEqual(names, want) {
			t.Errorf("prompts = %v, want %v", names, want)
		}
	})
}

// resourceFixture is a server with a plain resource, a template, and a
// resource whose handler reports not found; reads are recorded.
type resourceFixture struct {
	s *mcp.Server

	mu    sync.Mutex
	reads []string // "uri vars"
}

func newResourceFixture(t *testing.T, opts *mcp.ServerOptions) *resourceFixture {
	t.Helper()
	f := &resourceFixture{s: newServer(t, opts)}
	read := func(_ context.Context, _ *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
		f.mu.Lock()
		f.reads = append(f.reads, fmt.Sprintf("%s %v", uri, vars))
		f.mu.Unlock()
		if vars != nil && vars["id"] == "missing" {
			return nil, fmt.Errorf("looking up %s: %w", vars["id"], mcp.ErrResourceNotFound)
		}
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, MimeType: "text/plain", Text: "data of " + uri}}}, nil
	}
	if err := f.s.AddResource(&protocol.Resource{URI: "test://static", Name: "static"}, read); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AddResource(&protocol.Resource{URI: "test://gone", Name: "gone"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, mcp.ErrResourceNotFound
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AddResource(&protocol.Resource{URI: "test://broken", Name: "broken"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, errors.New("disk unplugged")
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://t/{id}/data", Name: "by id"}, read); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://a/{name}", Name: "by name"}, read); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *resourceFixture) takeReads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reads
	f.reads = nil
	return r
}

func TestResourcesRead(t *testing.T) {
	f := newResourceFixture(t, nil)
	tests := []struct {
		name, uri string
		wantRead  string
	}{
		{"exact URI", "test://static", "test://static map[]"},
		{"template match passes vars", "test://t/42/data", "test://t/42/data map[id:42]"},
		{"another template", "test://a/readme", "test://a/readme map[name:readme]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := mustResult(t, f.s, legacyReq(protocol.MethodResourcesRead), `{"uri":`+quote(tt.uri)+`}`)
			validate(t, protocol.Version20251125, "ReadResourceResult", raw)
			wantJSON(t, raw, `{"contents":[{"uri":`+quote(tt.uri)+`,"mimeType":"text/plain","text":"data of `+tt.uri+`"}]}`)
			if got := f.takeReads(); !reflect.DeepEqual(got, []string{tt.wantRead}) {
				t.Errorf("handler calls = %q, want [%q]", got, tt.wantRead)
			}
		})
	}
	t.Run("plain resources get nil vars", func(t *testing.T) {
		var gotVars map[string]string
		called := false
		s := newServer(t, nil)
		if err := s.AddResource(&protocol.Resource{URI: "test://x", Name: "x"}, func(_ context.Context, _ *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
			called, gotVars = true, vars
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, Text: ""}}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		mustResult(t, s, legacyReq(protocol.MethodResourcesRead), `{"uri":"test://x"}`)
		if !called || gotVars != nil {
			t.Errorf("called=%v vars=%#v, want called with nil vars", called, gotVars)
		}
	})
	t.Run("missing uri", func(t *testing.T) {
		mustError(t, f.s, legacyReq(protocol.MethodResourcesRead), `{}`, protocol.CodeInvalidParams)
	})
	t.Run("handler failure is internal and does not leak", func(t *testing.T) {
		e := mustError(t, f.s, legacyReq(protocol.MethodResourcesRead), `{"uri":"test://broken"}`, protocol.CodeInternalError)
		if strings.Contains(e.Message, "disk") {
			t.Errorf("message %q leaks the handler's error", e.Message)
		}
	})
}

func TestResourcesNotFound(t *testing.T) {
	f := newResourceFixture(t, nil)
	uris := []struct{ name, uri string }{
		{"no such resource", "test://nothing"},
		{"template that does not match", "test://t/42/other"},
		{"handler returns ErrResourceNotFound", "test://gone"},
		{"template handler wraps ErrResourceNotFound", "test://t/missing/data"},
	}
	eras := []struct {
		name string
		req  func(string) *mcp.Request
		code int64
	}{
		{"legacy", legacyReq, protocol.CodeResourceNotFound},
		{"modern", modernReq, protocol.CodeInvalidParams},
	}
	for _, era := range eras {
		for _, u := range uris {
			t.Run(era.name+"/"+u.name, func(t *testing.T) {
				e := mustError(t, f.s, era.req(protocol.MethodResourcesRead), `{"uri":`+quote(u.uri)+`}`, era.code)
				wantJSON(t, e.Data, `{"uri":`+quote(u.uri)+`}`)
			})
		}
	}
}

func TestResourcesTemplatesList(t *testing.T) {
	f := newResourceFixture(t, nil)
	raw := mustResult(t, f.s, legacyReq(protocol.MethodResourcesTemplatesList), `{}`)
	validate(t, protocol.Version20251125, "ListResourceTemplatesResult", raw)
	wantJSON(t, raw, `{"resourceTemplates":[
		{"uriTemplate":"test://a/{name}","name":"by name"},
		{"uriTemplate":"test://t/{id}/data","name":"by id"}
	]}`)

	raw = mustResult(t, f.s, legacyReq(protocol.MethodResourcesList), `{}`)
	validate(t, protocol.Version20251125, "ListResourcesResult", raw)
	got := decode[protocol.ListResourcesResult](t, raw)
	var uris []string
	for _, r := range got.Resources {
		uris = append(uris, r.URI)
	}
	if want := []string{"test://broken", "test://gone", "test://static"}; !reflect.DeepEqual(uris, want) {
		t.Errorf("resources = %v, want %v", uris, want)
	}
}

func TestResourcesAbsent(t *testing.T) {
	s := newServer(t, nil)
	for _, m := range []string{protocol.MethodResourcesList, protocol.MethodResourcesTemplatesList, protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe} {
		t.Run(m, func(t *testing.T) {
			mustError(t, s, legacyReq(m), `{"uri":"test://x"}`, protocol.CodeMethodNotFound)
		})
	}
}

func TestResourcesSubscribe(t *testing.T) {
	methods := []string{protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe}
	t.Run("without ResourceSubscriptions", func(t *testing.T) {
		f := newResourceFixture(t, nil)
		for _, m := range methods {
			mustError(t, f.s, legacyReq(m), `{"uri":"test://static"}`, protocol.CodeMethodNotFound)
		}
	})
	t.Run("with ResourceSubscriptions", func(t *testing.T) {
		var (
			mu    sync.Mutex
			calls []string
		)
		f := newResourceFixture(t, &mcp.ServerOptions{
			ResourceSubscriptions: true,
			SubscribeHook: func(_ context.Context, req *mcp.Request, uri string, subscribe bool) error {
				mu.Lock()
				calls = append(calls, fmt.Sprintf("%s %s %v", req.SessionID(), uri, subscribe))
				mu.Unlock()
				switch uri {
				case "test://forbidden":
					return protocol.NewError(-31001, "not for you")
				case "test://hook-broken":
					return errors.New("store down")
				}
				return nil
			},
		})
		for _, m := range methods {
			raw := mustResult(t, f.s, legacyReq(m), `{"uri":"test://static"}`)
			validate(t, protocol.Version20251125, "EmptyResult", raw)
			wantJSON(t, raw, `{}`)
		}
		mu.Lock()
		if want := []string{"sess-1 test://static true", "sess-1 test://static false"}; !reflect.DeepEqual(calls, want) {
			t.Errorf("hook calls = %q, want %q", calls, want)
		}
		mu.Unlock()
		e := mustError(t, f.s, legacyReq(protocol.MethodResourcesSubscribe), `{"uri":"test://forbidden"}`, -31001)
		if e.Message != "not for you" {
			t.Errorf("veto message = %q, want the hook's", e.Message)
		}
		mustError(t, f.s, legacyReq(protocol.MethodResourcesSubscribe), `{"uri":"test://hook-broken"}`, protocol.CodeInternalError)
		mustError(t, f.s, legacyReq(protocol.MethodResourcesSubscribe), `{}`, protocol.CodeInvalidParams)
	})
	t.Run("with ResourceSubscriptions but no session stream to deliver updates", func(t *testing.T) {
		f := newResourceFixture(t, &mcp.ServerOptions{ResourceSubscriptions: true})
		for _, m := range methods {
			in := legacyInit(m)
			in.Features = mcp.Features{}
			mustError(t, f.s, mcp.NewRequest(in), `{"uri":"test://static"}`, protocol.CodeMethodNotFound)
		}
	})
}

func TestCompletion(t *testing.T) {
	s := newServer(t, nil)
	if err := s.AddPrompt(&protocol.Prompt{Name: "greet"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, mcp.ErrResourceNotFound
	}); err != nil {
		t.Fatal(err)
	}
	var gotParams *protocol.CompleteParams
	s.SetCompletionHandler(func(_ context.Context, _ *mcp.Request, p *protocol.CompleteParams) (*protocol.Completion, error) {
		gotParams = p
		n := 3
		if p.Argument.Value == "many" {
			n = 150
		}
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("%s-%03d", p.Argument.Value, i)
		}
		return &protocol.Completion{Values: vals}, nil
	})

	errTests := []struct{ name, params string }{
		{"unknown prompt ref", `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"a","value":"x"}}`},
		{"unknown resource ref", `{"ref":{"type":"ref/resource","uri":"other://x"},"argument":{"name":"id","value":"x"}}`},
		{"unknown ref type", `{"ref":{"type":"ref/tool","name":"greet"},"argument":{"name":"a","value":"x"}}`},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			gotParams = nil
			mustError(t, s, legacyReq(protocol.MethodCompletionComplete), tt.params, protocol.CodeInvalidParams)
			if gotParams != nil {
				t.Errorf("the completion handler ran for %s", tt.params)
			}
		})
	}
	t.Run("values capped at 100 with hasMore", func(t *testing.T) {
		raw := mustResult(t, s, legacyReq(protocol.MethodCompletionComplete), `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"a","value":"many"}}`)
		validate(t, protocol.Version20251125, "CompleteResult", raw)
		got := decode[protocol.CompleteResult](t, raw)
		if len(got.Completion.Values) != 100 || !got.Completion.HasMore {
			t.Errorf("got %d values hasMore=%v, want 100 and hasMore", len(got.Completion.Values), got.Completion.HasMore)
		}
		if got.Completion.Values[99] != "many-099" {
			t.Errorf("last value = %q, want the first 100 in order", got.Completion.Values[99])
		}
	})
	t.Run("short list passes through", func(t *testing.T) {
		raw := mustResult(t, s, legacyReq(protocol.MethodCompletionComplete), `{"ref":{"type":"ref/resource","uri":"test://t/{id}"},"argument":{"name":"id","value":"a"},"context":{"arguments":{"x":"y"}}}`)
		validate(t, protocol.Version20251125, "CompleteResult", raw)
		wantJSON(t, raw, `{"completion":{"values":["a-000","a-001","a-002"]}}`)
		if gotParams == nil || gotParams.Argument.Name != "id" || gotParams.Context == nil || gotParams.Context.Arguments["x"] != "y" {
			t.Errorf("handler got %+v, want the argument and context", gotParams)
		}
	})
	t.Run("without a handler the values are empty", func(t *testing.T) {
		s := newServer(t, nil)
		if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
			return &protocol.GetPromptResult{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		raw := mustResult(t, s, legacyReq(protocol.MethodCompletionComplete), `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}`)
		validate(t, protocol.Version20251125, "CompleteResult", raw)
		wantJSON(t, raw, `{"completion":{"values":[]}}`)
	})
	t.Run("without completions capability", func(t *testing.T) {
		mustError(t, newServer(t, nil), legacyReq(protocol.MethodCompletionComplete), `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}`, protocol.CodeMethodNotFound)
	})
}

func TestLoggingSetLevel(t *testing.T) {
	s := newServer(t, nil)
	raw := mustResult(t, s, legacyReq(protocol.MethodLoggingSetLevel), `{"level":"warning"}`)
	wantJSON(t, raw, `{}`)
	mustError(t, s, legacyReq(protocol.MethodLoggingSetLevel), `{"level":"loud"}`, protocol.CodeInvalidParams)
}
