package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestEvents(t *testing.T) {
	noPrompt := func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}
	noResource := func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, mcp.ErrResourceNotFound
	}
	tests := []struct {
		name   string
		change func(t *testing.T, s *mcp.Server)
		want   []string
	}{
		{"AddTool", func(t *testing.T, s *mcp.Server) { addTools(t, s, "new") }, []string{"tools"}},
		{"AddTool replacing", func(t *testing.T, s *mcp.Server) { addTools(t, s, "existing") }, []string{"tools"}},
		{"typed AddTool", func(t *testing.T, s *mcp.Server) {
			if err := mcp.AddTool(s, &protocol.Tool{Name: "typed"}, func(context.Context, *mcp.Request, struct{}) (*protocol.CallToolResult, any, error) {
				return nil, nil, nil
			}); err != nil {
				t.Fatal(err)
			}
		}, []string{"tools"}},
		{"RemoveTools", func(_ *testing.T, s *mcp.Server) { s.RemoveTools("existing") }, []string{"tools"}},
		{"RemoveTools of unknown names", func(_ *testing.T, s *mcp.Server) { s.RemoveTools("nope", "never") }, nil},
		{"AddPrompt", func(t *testing.T, s *mcp.Server) {
			if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, noPrompt); err != nil {
				t.Fatal(err)
			}
		}, []string{"prompts"}},
		{"AddResource", func(t *testing.T, s *mcp.Server) {
			if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, noResource); err != nil {
				t.Fatal(err)
			}
		}, []string{"resources"}},
		{"AddResourceTemplate", func(t *testing.T, s *mcp.Server) {
			if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://t/{x}", Name: "t"}, noResource); err != nil {
				t.Fatal(err)
			}
		}, []string{"resources"}},
		{"rejected AddTool", func(t *testing.T, s *mcp.Server) {
			if err := s.AddTool(&protocol.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"array"}`)}, textTool("")); err == nil {
				t.Fatal("AddTool accepted an array schema")
			}
		}, nil},
		{"RemovePrompts", func(_ *testing.T, s *mcp.Server) { s.RemovePrompts("nope", "existing") }, []string{"prompts"}},
		{"RemovePrompts of unknown names", func(_ *testing.T, s *mcp.Server) { s.RemovePrompts("nope") }, nil},
		{"RemoveResources", func(_ *testing.T, s *mcp.Server) { s.RemoveResources("test://existing") }, []string{"resources"}},
		{"RemoveResources of unknown URIs", func(_ *testing.T, s *mcp.Server) {
			s.RemoveResources("test://nope", "test://existing/{x}")
		}, nil},
		{"RemoveResourceTemplates", func(_ *testing.T, s *mcp.Server) {
			s.RemoveResourceTemplates("test://existing/{x}", "test://nope/{x}")
		}, []string{"resources"}},
		{"RemoveResourceTemplates of unknown templates", func(_ *testing.T, s *mcp.Server) {
			s.RemoveResourceTemplates("test://existing", "test://existing/{y}")
		}, nil},
		{"Remove with no names", func(_ *testing.T, s *mcp.Server) {
			s.RemoveTools()
			s.RemovePrompts()
			s.RemoveResources()
			s.RemoveResourceTemplates()
		}, nil},
		{"AddMiddleware", func(_ *testing.T, s *mcp.Server) {
			s.AddMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler { return next })
		}, nil},
		{"AddToolMiddleware", func(_ *testing.T, s *mcp.Server) {
			s.AddToolMiddleware(func(next mcp.ToolHandler) mcp.ToolHandler { return next })
		}, nil},
		{"SetCompletionHandler", func(_ *testing.T, s *mcp.Server) {
			s.SetCompletionHandler(func(context.Context, *mcp.Request, *protocol.CompleteParams) (*protocol.Completion, error) {
				return nil, nil
			})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, nil)
			addTools(t, s, "existing")
			if err := s.AddPrompt(&protocol.Prompt{Name: "existing"}, noPrompt); err != nil {
				t.Fatal(err)
			}
			if err := s.AddResource(&protocol.Resource{URI: "test://existing", Name: "r"}, noResource); err != nil {
				t.Fatal(err)
			}
			if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "test://existing/{x}", Name: "t"}, noResource); err != nil {
				t.Fatal(err)
			}
			events := &eventLog{}
			s.SetEvents(events)
			tt.change(t, s)
			if got := events.take(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRemove checks that the Remove calls take what they name out of the
// catalog and out of service, and nothing else.
func TestRemove(t *testing.T) {
	s := newServer(t, nil)
	addTools(t, s, "t1", "t2")
	doc := func(_ context.Context, _ *mcp.Request, uri string, _ map[string]string) (*protocol.ReadResourceResult, error) {
		return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, Text: "x"}}}, nil
	}
	for _, p := range []string{"p1", "p2"} {
		if err := s.AddPrompt(&protocol.Prompt{Name: p}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
			return &protocol.GetPromptResult{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, uri := range []string{"test://r1", "test://r2"} {
		if err := s.AddResource(&protocol.Resource{URI: uri, Name: uri}, doc); err != nil {
			t.Fatal(err)
		}
	}
	for _, tmpl := range []string{"test://a/{x}", "test://b/{x}"} {
		if err := s.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: tmpl, Name: tmpl}, doc); err != nil {
			t.Fatal(err)
		}
	}
	s.RemoveTools("t1")
	s.RemovePrompts("p1")
	s.RemoveResources("test://r1")
	s.RemoveResourceTemplates("test://a/{x}")
	c := s.Catalog()
	var got []string
	for _, x := range c.Tools {
		got = append(got, x.Name)
	}
	for _, x := range c.Prompts {
		got = append(got, x.Name)
	}
	for _, x := range c.Resources {
		got = append(got, x.URI)
	}
	for _, x := range c.Templates {
		got = append(got, x.URITemplate)
	}
	if want := []string{"t2", "p2", "test://r2", "test://b/{x}"}; !reflect.DeepEqual(got, want) {
		t.Errorf("catalog after the removals = %q, want %q", got, want)
	}
	mustError(t, s, legacyReq(protocol.MethodToolsCall), `{"name":"t1"}`, protocol.CodeInvalidParams)
	mustError(t, s, legacyReq(protocol.MethodPromptsGet), `{"name":"p1"}`, protocol.CodeInvalidParams)
	mustError(t, s, legacyReq(protocol.MethodResourcesRead), `{"uri":"test://r1"}`, protocol.CodeResourceNotFound)
	mustError(t, s, legacyReq(protocol.MethodResourcesRead), `{"uri":"test://a/1"}`, protocol.CodeResourceNotFound)
	mustResult(t, s, legacyReq(protocol.MethodResourcesRead), `{"uri":"test://b/1"}`)
}

func TestEventsRemovedSink(t *testing.T) {
	s := newServer(t, nil)
	events := &eventLog{}
	s.SetEvents(events)
	addTools(t, s, "a")
	s.SetEvents(nil)
	addTools(t, s, "b")
	if err := s.ResourceUpdated(context.Background(), "test://x"); err != nil {
		t.Errorf("ResourceUpdated without a sink: %v", err)
	}
	if got := events.take(); !reflect.DeepEqual(got, []string{"tools"}) {
		t.Errorf("events = %q, want only the one raised before SetEvents(nil)", got)
	}
}

type failingEvents struct{}

func (failingEvents) ListChanged(context.Context, string) error { return errors.New("bus down") }
func (failingEvents) ResourceUpdated(context.Context, string) error {
	return errors.New("bus down")
}

func TestEventsFailureDoesNotFailRegistration(t *testing.T) {
	s := newServer(t, nil)
	s.SetEvents(failingEvents{})
	if err := s.AddTool(&protocol.Tool{Name: "t"}, textTool("t")); err != nil {
		t.Fatalf("AddTool failed because the event sink did: %v", err)
	}
	if res := callTool(t, s, "t", ""); res.IsError {
		t.Errorf("the tool is not usable: %+v", res)
	}
}

func TestNotifyResourceUpdated(t *testing.T) {
	s := newServer(t, nil)
	events := &eventLog{}
	s.SetEvents(events)
	if err := mcp.AddTool(s, &protocol.Tool{Name: "touch"}, func(ctx context.Context, req *mcp.Request, in struct {
		URI string `json:"uri"`
	}) (*protocol.CallToolResult, any, error) {
		if err := req.NotifyResourceUpdated(ctx, in.URI); err != nil {
			return nil, nil, err
		}
		return mcp.TextResult("touched"), nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	events.take()
	if res := callTool(t, s, "touch", `{"uri":"test://doc/1"}`); res.IsError {
		t.Fatalf("touch failed: %+v", res)
	}
	if got := events.take(); !reflect.DeepEqual(got, []string{"updated:test://doc/1"}) {
		t.Errorf("events = %q, want the resource update", got)
	}
}
