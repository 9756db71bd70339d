package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
)

const (
	appOrigin  = "https://app.example.com"
	evilOrigin = "https://evil.example"
)

// corsTargets are the all-in-one binary and the cluster behind nginx,
// both allowing appOrigin.
func corsTargets(t *testing.T) map[string]string {
	t.Helper()
	_, aio := testenv.StartMCPFleet(t, "--fixture", "conformance", "--allowed-origins", appOrigin)
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Nginx: true, FrontendArgs: []string{"--allowed-origins", appOrigin}})
	return map[string]string{"all-in-one": aio, "cluster behind nginx": c.ProxyURL}
}

// headerList splits a comma-separated header (all its lines) into
// lower-case names.
func headerList(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// wantCORS checks the headers of an answer to appOrigin.
func wantCORS(t *testing.T, what string, h http.Header) {
	t.Helper()
	if got := h.Get("Access-Control-Allow-Origin"); got != appOrigin {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", what, got, appOrigin)
	}
	if !slices.Contains(headerList(h, "Vary"), "origin") {
		t.Errorf("%s: Vary %q lacks Origin", what, h.Values("Vary"))
	}
	exposed := headerList(h, "Access-Control-Expose-Headers")
	for _, want := range []string{"mcp-session-id", "mcp-protocol-version", "www-authenticate"} {
		if !slices.Contains(exposed, want) {
			t.Errorf("%s: Access-Control-Expose-Headers %q lacks %s", what, exposed, want)
		}
	}
}

// wantNoCORS checks that an answer carries no CORS header at all.
func wantNoCORS(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: CORS header %s: %q on a refusal", what, k, h.Values(k))
		}
	}
}

func preflight(t *testing.T, url, origin, method, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// CORS tied to --allowed-origins, on the all-in-one and through nginx to
// the cluster: preflights, every kind of answer, and refusals.
func TestCORS(t *testing.T) {
	for name, url := range corsTargets(t) {
		t.Run(name, func(t *testing.T) {
			// Preflight: every MCP request header, an Mcp-Param-* header
			// allowed by name.
			asked := "content-type, accept, authorization, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, mcp-param-region, last-event-id"
			resp := preflight(t, url, appOrigin, "POST", asked)
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight: HTTP %d", resp.StatusCode)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != appOrigin {
				t.Errorf("preflight: Access-Control-Allow-Origin %q", got)
			}
			methods := headerList(resp.Header, "Access-Control-Allow-Methods")
			for _, m := range []string{"get", "post", "delete", "options"} {
				if !slices.Contains(methods, m) {
					t.Errorf("preflight: Access-Control-Allow-Methods %q lacks %s", methods, m)
				}
			}
			allowed := headerList(resp.Header, "Access-Control-Allow-Headers")
			for _, h := range strings.Split(asked, ", ") {
				if !slices.Contains(allowed, h) {
					t.Errorf("preflight: Access-Control-Allow-Headers %q lacks %s", allowed, h)
				}
			}
			if resp.Header.Get("Access-Control-Max-Age") == "" {
				t.Error("preflight: no Access-Control-Max-Age")
			}
			// Refused preflights carry no CORS header.
			for what, r := range map[string]*http.Response{
				"an origin outside the list":          preflight(t, url, evilOrigin, "POST", "content-type"),
				"a header the endpoint does not read": preflight(t, url, appOrigin, "POST", "content-type, x-evil"),
				"an Mcp-Param- name that is no token": preflight(t, url, appOrigin, "POST", "mcp-param-a(b)"),
				"the method PUT":                      preflight(t, url, appOrigin, "PUT", ""),
			} {
				if r.StatusCode != http.StatusForbidden {
					t.Errorf("preflight for %s: HTTP %d, want 403", what, r.StatusCode)
				}
				wantNoCORS(t, "preflight for "+what, r.Header)
			}

			// Answers: JSON, an SSE stream, a 4xx error, a GET stream, a
			// listen stream (taken over by the hub).
			c := testenv.NewClient(t, url)
			c.Header.Set("Origin", appOrigin)
			init := c.Initialize(nil)
			wantCORS(t, "initialize", init.Header)
			sse := c.Post(testenv.Request(2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 150},
				"_meta": map[string]any{"progressToken": "p"}}), nil)
			if !sse.SSE {
				t.Fatalf("tools/call sleep with progress: not an SSE stream: %s", sse)
			}
			wantCORS(t, "an SSE answer", sse.Header)
			bad := c.Post(testenv.Request(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}), map[string]string{"Mcp-Session-Id": "no-such-session"})
			if bad.Status != http.StatusNotFound {
				t.Fatalf("unknown session: %s", bad)
			}
			wantCORS(t, "a 404", bad.Header)
			get := c.OpenGet(nil)
			if get.Status != 200 {
				t.Fatalf("GET stream: HTTP %d", get.Status)
			}
			wantCORS(t, "the GET stream", get.Header)
			get.Close()
			m := testenv.NewModernClient(t, url)
			m.Header.Set("Origin", appOrigin)
			ls, _ := openListen(t, m, 1, map[string]any{"toolsListChanged": true})
			wantCORS(t, "a listen stream", ls.Header)
			ls.Close()

			// A page of another origin is refused, without CORS headers.
			e := testenv.NewClient(t, url)
			e.Header.Set("Origin", evilOrigin)
			r := e.Post(testenv.Request(0, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
			if r.Status != http.StatusForbidden {
				t.Fatalf("initialize from %s: %s", evilOrigin, r)
			}
			wantNoCORS(t, "the refusal", r.Header)
		})
	}
}

// With authentication on, a preflight needs no token (browsers send
// none), and a 401 is readable by the page: CORS headers, WWW-Authenticate
// exposed.
func TestCORSWithAuthentication(t *testing.T) {
	ti := newTokenIssuer(t)
	v, err := auth.New(t.Context(), auth.Options{Issuer: testIssuer, Audience: testAudience, JWKSFile: ti.jwks})
	if err != nil {
		t.Fatal(err)
	}
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{Auth: v, AllowedOrigins: []string{appOrigin}}})
	if r := preflight(t, ip.URL, appOrigin, "POST", "authorization, content-type"); r.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight with authentication on: HTTP %d", r.StatusCode)
	}
	c := testenv.NewClient(t, ip.URL)
	c.Header.Set("Origin", appOrigin)
	r := c.Post(testenv.Request(0, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
	if r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %s", r)
	}
	wantCORS(t, "a 401", r.Header)
	c.Header.Set("Authorization", "Bearer "+ti.token(t, "alice", "", time.Hour))
	wantCORS(t, "initialize with a token", c.Initialize(nil).Header)
	// The metadata the 401 points to is readable by the page too.
	base := strings.TrimSuffix(ip.URL, "/mcp")
	req, _ := http.NewRequest(http.MethodGet, base+auth.MetadataPath, nil)
	req.Header.Set("Origin", appOrigin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: HTTP %d", auth.MetadataPath, resp.StatusCode)
	}
	wantCORS(t, "the protected-resource metadata", resp.Header)
}

// 2026-07-28 requests ignore a stray Mcp-Session-Id (gateways add one to
// every request) and Last-Event-ID; a session's request with a 2026-07-28
// version header is told what is wrong, not that the version is
// unsupported.
func TestEraRouting(t *testing.T) {
	for _, tg := range startTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			m := testenv.NewModernClient(t, tg.urls...)
			stray := map[string]string{"Mcp-Session-Id": "gateway-pinned-0123456789abcdef", "Last-Event-ID": "not-one-of-ours"}
			for _, method := range []string{"server/discover", "tools/call"} {
				params := map[string]any{}
				if method == "tools/call" {
					params = map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
				}
				msg, hdr := testenv.ModernRequest(1, method, params, nil)
				for k, v := range stray {
					hdr[k] = v
				}
				r := m.Post(msg, hdr)
				resp := r.Response()
				if r.Status != 200 || resp == nil || resp.Error != nil {
					t.Fatalf("%s with a stray Mcp-Session-Id: %s", method, r)
				}
				var res struct {
					ResultType        string   `json:"resultType"`
					SupportedVersions []string `json:"supportedVersions"`
				}
				_ = json.Unmarshal(resp.Result, &res)
				if res.ResultType != "complete" || (method == "server/discover" && !slices.Contains(res.SupportedVersions, "2026-07-28")) {
					t.Errorf("%s with a stray Mcp-Session-Id: not answered as 2026-07-28: %s", method, resp.Result)
				}
			}

			// A session that sends the 2026-07-28 version header.
			c := tg.client(t)
			c.Initialize(nil)
			r := c.Post(testenv.Request(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}),
				map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
			if r.Status != 400 || !strings.Contains(r.String(), "this session negotiated 2025-11-25") || strings.Contains(r.String(), "unsupported") {
				t.Errorf("a session's request with MCP-Protocol-Version 2026-07-28: %s", r)
			}
			g := c.OpenGet(map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
			if g.Status != 400 || !strings.Contains(string(g.Body), "this session negotiated 2025-11-25") {
				t.Errorf("a session's GET with MCP-Protocol-Version 2026-07-28: HTTP %d %s", g.Status, g.Body)
			}
			// initialize sent with the 2026-07-28 header.
			n := tg.client(t)
			r = n.Post(testenv.Request(0, "initialize", testenv.InitParams("2025-11-25", nil)), map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
			if r.Status != 400 || !strings.Contains(r.String(), "initialize starts a session") {
				t.Errorf("initialize with MCP-Protocol-Version 2026-07-28: %s", r)
			}
			// Per-request _meta naming a session version.
			msg, hdr := testenv.ModernRequest(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"},
				"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}, nil)
			hdr["Mcp-Protocol-Version"] = "2025-11-25"
			r = m.Post(msg, hdr)
			if r.Status != 400 || r.ErrorCode() != -32022 || strings.Contains(r.String(), "unsupported") || !strings.Contains(r.String(), "sessions") {
				t.Errorf("_meta protocolVersion 2025-11-25: %s", r)
			}
		})
	}
}
