package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

const (
	testIssuer   = "https://auth.test"
	testAudience = "http://mcp.test/mcp"
)

// tokenIssuer signs test tokens with an RSA key published in a JWKS file.
type tokenIssuer struct {
	key  *rsa.PrivateKey
	jwks string
}

func newTokenIssuer(t *testing.T) *tokenIssuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "test-key", Algorithm: "RS256", Use: "sig"}}}
	b, _ := json.Marshal(set)
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tokenIssuer{key: k, jwks: p}
}

func (ti *tokenIssuer) token(t *testing.T, sub, scope string, ttl time.Duration) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: ti.key}, (&jose.SignerOptions{}).WithHeader("kid", "test-key"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": testIssuer, "aud": testAudience, "sub": sub, "scope": scope, "exp": time.Now().Add(ttl).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func authClient(t *testing.T, url, token string, modern bool) *testenv.Client {
	var c *testenv.Client
	if modern {
		c = testenv.NewModernClient(t, url)
	} else {
		c = testenv.NewClient(t, url)
	}
	if token != "" {
		c.Header.Set("Authorization", "Bearer "+token)
	}
	return c
}

func TestAuthentication(t *testing.T) {
	ti := newTokenIssuer(t)
	v, err := auth.New(t.Context(), auth.Options{Issuer: testIssuer, Audience: testAudience, JWKSFile: ti.jwks,
		RequiredScopes: []string{"mcp"}, ScopesSupported: []string{"mcp", "files:write"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fixture.NewExampleServer("conformance", "test", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddTool(&protocol.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			return mcp.TextResult(req.Principal()), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddTool(&protocol.Tool{Name: "write_file", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			return mcp.TextResult("written"), nil
		}, mcp.RequireScopes("files:write")); err != nil {
		t.Fatal(err)
	}
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: srv, Frontend: frontend.Options{Auth: v}})
	alice := ti.token(t, "alice", "mcp", time.Hour)
	bob := ti.token(t, "bob", "mcp files:write", time.Hour)

	// No token, a bad one, an expired one: 401 pointing to the metadata.
	base := strings.TrimSuffix(ip.URL, "/mcp")
	for name, tok := range map[string]string{"none": "", "garbage": "abc.def.ghi", "expired": ti.token(t, "alice", "mcp", -time.Hour)} {
		c := authClient(t, ip.URL, tok, false)
		r := c.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
		h := r.Header.Get("WWW-Authenticate")
		if r.Status != http.StatusUnauthorized || !strings.Contains(h, `resource_metadata="`+base+auth.MetadataPath+`"`) {
			t.Fatalf("%s token: HTTP %d, WWW-Authenticate %q", name, r.Status, h)
		}
		if (tok != "") != strings.Contains(h, `error="invalid_token"`) {
			t.Fatalf("%s token: WWW-Authenticate %q", name, h)
		}
	}
	// A token without the required scope: 403 insufficient_scope.
	c := authClient(t, ip.URL, ti.token(t, "carol", "files:write", time.Hour), false)
	if r := c.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil); r.Status != http.StatusForbidden || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="mcp"`) {
		t.Fatalf("without the required scope: %s %q", r, r.Header.Get("WWW-Authenticate"))
	}
	// The metadata document.
	resp, err := http.Get(base + auth.MetadataPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if doc["resource"] != testAudience || doc["authorization_servers"].([]any)[0] != testIssuer {
		t.Fatalf("metadata: %v", doc)
	}

	// The principal reaches handlers; sessions belong to it.
	a := authClient(t, ip.URL, alice, false)
	a.Initialize(nil)
	if got := resultTextOf(t, a.Call(2, "tools/call", callParams("whoami", nil))); got != testIssuer+"#alice" {
		t.Fatalf("whoami: %q", got)
	}
	b := authClient(t, ip.URL, bob, false)
	b.SessionID, b.ProtocolVersion = a.SessionID, a.ProtocolVersion
	if r := b.Post(testenv.Request(3, "tools/call", callParams("echo", map[string]any{"text": "x"})), nil); r.Status != http.StatusNotFound {
		t.Fatalf("bob using alice's session: %s", r)
	}
	// Per-tool scopes: alice lacks files:write, bob has it.
	if r := a.Post(testenv.Request(4, "tools/call", callParams("write_file", nil)), nil); r.Status != http.StatusForbidden || !strings.Contains(r.Header.Get("WWW-Authenticate"), `scope="files:write"`) {
		t.Fatalf("write_file without files:write: %s %q", r, r.Header.Get("WWW-Authenticate"))
	}
	b.SessionID = ""
	b.Initialize(nil)
	if got := resultTextOf(t, b.Call(5, "tools/call", callParams("write_file", nil))); got != "written" {
		t.Fatalf("write_file with files:write: %q", got)
	}

	// Modern: tasks and MRTR state belong to the principal.
	am := authClient(t, ip.URL, alice, true)
	bm := authClient(t, ip.URL, bob, true)
	task := startTask(t, am, 1, "slow_compute", map[string]any{"seconds": 30, "label": "alice's"})
	wantError(t, modern(t, bm, 2, "tasks/get", map[string]any{"taskId": task.TaskID}, tasksCaps, nil), 200, protocol.CodeInvalidParams)
	if v := getTask(t, am, 3, task.TaskID); v.Status != "working" {
		t.Fatalf("alice's own task: %+v", v)
	}
	// A listen stream naming alice's task: honoured for alice, dropped
	// from bob's acknowledged filter (its notifications carry the result).
	for _, who := range []struct {
		c    *testenv.Client
		name string
		want bool
	}{{am, "alice", true}, {bm, "bob", false}} {
		msg, hdr := testenv.ModernRequest("watch-"+who.name, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{task.TaskID}}}, tasksCaps)
		s := who.c.PostStream(msg, hdr)
		if s.Status != 200 {
			t.Fatalf("%s's listen: HTTP %d %s", who.name, s.Status, s.Body)
		}
		_, ack := s.NextMessage(t, 10*time.Second)
		if ack.Method != "notifications/subscriptions/acknowledged" || strings.Contains(string(ack.Params), task.TaskID) != who.want {
			t.Fatalf("%s's listen on alice's task: %s %s", who.name, ack.Method, ack.Params)
		}
		s.Close()
	}
	// Listen streams are keyed by principal: a second open stream of alice
	// with the same subscription id is 409; bob may use the id.
	msg, hdr := testenv.ModernRequest("dup", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	first := am.PostStream(msg, hdr)
	if _, ack := first.NextMessage(t, 10*time.Second); first.Status != 200 || ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("alice's listen dup: HTTP %d %s", first.Status, ack.Method)
	}
	wantError(t, am.Post(msg, hdr), http.StatusConflict, protocol.CodeInvalidRequest)
	if s := bm.PostStream(msg, hdr); s.Status != 200 {
		t.Fatalf("bob's listen dup while alice's is open: HTTP %d %s", s.Status, s.Body)
	} else {
		s.Close()
	}
	first.Close()
	modern(t, am, 4, "tasks/cancel", map[string]any{"taskId": task.TaskID}, tasksCaps, nil)
	caps := map[string]any{"elicitation": map[string]any{}}
	r := modern(t, am, 5, "tools/call", map[string]any{"name": "test_input_required_result_elicitation"}, caps, nil)
	var ir struct {
		RequestState string `json:"requestState"`
	}
	_ = json.Unmarshal(r.Response().Result, &ir)
	retry := map[string]any{"name": "test_input_required_result_elicitation", "requestState": ir.RequestState,
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Mallory"}}}}
	wantError(t, modern(t, bm, 6, "tools/call", retry, caps, nil), 200, protocol.CodeInvalidParams)
	// Bob's refused attempt did not use alice's state up: her retry works.
	retry["inputResponses"] = map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}
	if r := modern(t, am, 7, "tools/call", retry, caps, nil); r.Response() == nil || r.Response().Error != nil {
		t.Fatalf("alice's retry after bob's attempt: %s", r)
	}
}

func resultTextOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result: %s", raw)
	}
	return r.Content[0].Text
}
