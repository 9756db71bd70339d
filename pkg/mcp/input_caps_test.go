package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The generic Input asks a client only for what it declared, like the
// typed Elicit, Sample and ListRoots: without the capability nothing is
// sent (legacy: an error the handler sees; modern: -32021).
func TestInputNeedsTheCapability(t *testing.T) {
	asks := []struct {
		method, capability string
		caps               protocol.ClientCapabilities
	}{
		{protocol.MethodElicitationCreate, "elicitation", protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}}},
		{protocol.MethodSamplingCreateMessage, "sampling", protocol.ClientCapabilities{Sampling: &protocol.SamplingCapability{}}},
		{protocol.MethodRootsList, "roots", protocol.ClientCapabilities{Roots: &protocol.RootsCapability{}}},
	}
	for _, a := range asks {
		t.Run(a.capability, func(t *testing.T) {
			s := newServer(t, nil)
			var handlerErr error
			if err := s.AddTool(&protocol.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
					_, err := req.Input(ctx, "k", a.method, map[string]any{})
					handlerErr = err
					if err != nil {
						return nil, err
					}
					return mcp.TextResult("asked"), nil
				}); err != nil {
				t.Fatal(err)
			}
			// Legacy, no capability: nothing reaches the client.
			rec := &recorder{reply: func(string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }}
			in := legacyInit(protocol.MethodToolsCall)
			in.Out = rec
			in.ClientCapabilities = &protocol.ClientCapabilities{}
			handle(t, s, mcp.NewRequest(in), `{"name":"ask"}`)
			if !errors.Is(handlerErr, mcp.ErrCapability) || len(rec.requests()) != 0 {
				t.Fatalf("legacy without %s: handler error %v, %d requests sent", a.capability, handlerErr, len(rec.requests()))
			}
			// Legacy, declared: the request goes out.
			in.ClientCapabilities = &a.caps
			mustResult(t, s, mcp.NewRequest(in), `{"name":"ask"}`)
			if len(rec.requests()) != 1 || rec.requests()[0].Method != a.method {
				t.Fatalf("legacy with %s: sent %v", a.capability, rec.requests())
			}
			// Modern, no capability: -32021 naming it.
			in = modernInit(protocol.MethodToolsCall)
			in.ClientCapabilities = &protocol.ClientCapabilities{}
			e := mustError(t, s, mcp.NewRequest(in), `{"name":"ask"}`, protocol.CodeMissingRequiredClientCapability)
			if !json.Valid(e.Data) || !strings.Contains(string(e.Data), `"`+a.capability+`"`) {
				t.Fatalf("modern without %s: %s %s", a.capability, e.Message, e.Data)
			}
			// Modern, declared: input_required.
			in.ClientCapabilities = &a.caps
			if raw := mustResult(t, s, mcp.NewRequest(in), `{"name":"ask"}`); !strings.Contains(string(raw), `"input_required"`) {
				t.Fatalf("modern with %s: %s", a.capability, raw)
			}
		})
	}
}
