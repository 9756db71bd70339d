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
			events := &eventLog{}
			s.SetEvents(events)
			tt.change(t, s)
			if got := events.take(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
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
