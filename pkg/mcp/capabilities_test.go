package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// capsServer offers everything whose capability can carry listChanged or
// subscribe: tools, a prompt, a resource, resource subscriptions.
func capsServer(t *testing.T) *mcp.Server {
	t.Helper()
	s := newServer(t, &mcp.ServerOptions{ResourceSubscriptions: true})
	addTools(t, s, "t")
	if err := s.AddPrompt(&protocol.Prompt{Name: "p"}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResource(&protocol.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.Request, string, map[string]string) (*protocol.ReadResourceResult, error) {
		return nil, mcp.ErrResourceNotFound
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	capsNoPush = `{"logging":{},"tools":{},"prompts":{},"resources":{},"completions":{}}`
	capsPush   = `{"logging":{},"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{}}`
)

// capsCases: in the modern era only listen streams deliver list_changed and
// resource updates, so only Features.Listen may declare them (a legacy
// session stream does not serve modern clients); in the legacy era only
// the session stream may.
var capsCases = []struct {
	name     string
	era      protocol.Era
	features mcp.Features
	want     string
}{
	{"modern without listen streams", protocol.EraModern, mcp.Features{}, capsNoPush},
	{"modern without listen streams, with a session stream", protocol.EraModern, mcp.Features{SessionStream: true}, capsNoPush},
	{"modern with listen streams", protocol.EraModern, mcp.Features{Listen: true}, capsPush},
	{"modern with listen and session streams", protocol.EraModern, mcp.Features{Listen: true, SessionStream: true}, capsPush},
	{"legacy with listen streams only", protocol.EraLegacy, mcp.Features{Listen: true}, capsNoPush},
	{"legacy with a session stream", protocol.EraLegacy, mcp.Features{SessionStream: true}, capsPush},
}

// TestCatalogCapabilities checks Catalog.Capabilities (and
// Server.Capabilities) per era and transport features, on the server's
// own catalog and on one that went through JSON as a worker announces it
// to the frontends.
func TestCatalogCapabilities(t *testing.T) {
	s := capsServer(t)
	b, err := json.Marshal(s.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	var announced mcp.Catalog
	if err := json.Unmarshal(b, &announced); err != nil {
		t.Fatal(err)
	}
	for _, tc := range capsCases {
		t.Run(tc.name, func(t *testing.T) {
			for name, got := range map[string]protocol.ServerCapabilities{
				"Server.Capabilities":            s.Capabilities(tc.era, tc.features),
				"Catalog.Capabilities":           s.Catalog().Capabilities(tc.era, tc.features),
				"announced Catalog.Capabilities": announced.Capabilities(tc.era, tc.features),
			} {
				raw, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(name, func(t *testing.T) { wantJSON(t, raw, tc.want) })
			}
		})
	}
}

// TestDiscoverCapabilitiesFollowListen checks the capabilities of
// server/discover, answered by the server (Handle) and from the catalog
// (Catalog.Answer, as a frontend does), on a transport with and without
// listen streams.
func TestDiscoverCapabilitiesFollowListen(t *testing.T) {
	s := capsServer(t)
	for _, tc := range capsCases {
		if tc.era != protocol.EraModern {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			in := modernInit(protocol.MethodServerDiscover)
			in.Features = tc.features
			raw := mustResult(t, s, mcp.NewRequest(in), `{}`)
			validate(t, protocol.Version20260728, "DiscoverResult", raw)
			wantJSON(t, members(t, raw)["capabilities"], tc.want)

			res, handled, err := s.Catalog().Answer(mcp.NewRequest(in), json.RawMessage(`{}`))
			if !handled || err != nil {
				t.Fatalf("Catalog.Answer(server/discover): handled %v, err %v", handled, err)
			}
			raw, err = json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, protocol.Version20260728, "DiscoverResult", raw)
			wantJSON(t, members(t, raw)["capabilities"], tc.want)
		})
	}
}
