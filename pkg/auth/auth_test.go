package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpfleet/mcpfleet/pkg/auth"
)

const (
	issuer   = "https://auth.example.com"
	audience = "https://mcp.example.com/mcp"
)

// signer signs tokens with one key, named kid.
type signer struct {
	key any
	kid string
	alg jose.SignatureAlgorithm
}

func newRSA(t *testing.T, kid string) *signer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{key: k, kid: kid, alg: jose.RS256}
}

func newEC(t *testing.T, kid string) *signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{key: k, kid: kid, alg: jose.ES256}
}

func (s *signer) public() jose.JSONWebKey {
	var pub any
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		pub = &k.PublicKey
	case *ecdsa.PrivateKey:
		pub = &k.PublicKey
	}
	return jose.JSONWebKey{Key: pub, KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
}

func (s *signer) token(t *testing.T, c map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", s.kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func claims(extra map[string]any) map[string]any {
	c := map[string]any{"iss": issuer, "aud": audience, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp files:read"}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func jwksFile(t *testing.T, keys ...*signer) string {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.public())
	}
	b, _ := json.Marshal(set)
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerify(t *testing.T) {
	rk, ek, other := newRSA(t, "r1"), newEC(t, "e1"), newRSA(t, "r1")
	v, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSFile: jwksFile(t, rk, ek)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(t.Context(), rk.token(t, claims(nil)))
	if err != nil || p.Subject != "alice" || !p.HasScopes([]string{"files:read"}) || p.HasScopes([]string{"files:write"}) {
		t.Fatalf("a valid RS256 token: %+v, %v", p, err)
	}
	if p, err := v.Verify(t.Context(), ek.token(t, claims(map[string]any{"scope": nil, "scp": []string{"a", "b"}}))); err != nil || !p.HasScopes([]string{"a", "b"}) {
		t.Fatalf("a valid ES256 token with scp: %+v, %v", p, err)
	}
	bad := []struct {
		name  string
		token string
	}{
		{"expired", rk.token(t, claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}))},
		{"not yet valid", rk.token(t, claims(map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}))},
		{"no exp", rk.token(t, claims(map[string]any{"exp": nil}))},
		{"no sub", rk.token(t, claims(map[string]any{"sub": nil}))},
		{"another issuer", rk.token(t, claims(map[string]any{"iss": "https://evil.example.com"}))},
		{"another audience", rk.token(t, claims(map[string]any{"aud": "https://other.example.com/mcp"}))},
		{"signed by another key with the same kid", other.token(t, claims(nil))},
		{"unknown kid", newRSA(t, "r9").token(t, claims(nil))},
		{"garbage", "not.a.token"},
		{"unsigned (alg none)", "eyJhbGciOiJub25lIn0." + strings.TrimRight(b64(`{"iss":"`+issuer+`","aud":"`+audience+`","sub":"x","exp":9999999999}`), "=") + "."},
	}
	for _, tc := range bad {
		if _, err := v.Verify(t.Context(), tc.token); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: err = %v, want ErrInvalidToken", tc.name, err)
		}
	}
}

func b64(s string) string {
	return strings.NewReplacer("+", "-", "/", "_").Replace(base64Std(s))
}

// The keys of a JWKS URL rotate: a token with a new key id makes the
// verifier fetch the set again (at most every MinRefresh).
func TestJWKSRotation(t *testing.T) {
	k1, k2 := newRSA(t, "k1"), newRSA(t, "k2")
	var current atomic.Pointer[jose.JSONWebKeySet]
	current.Store(&jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1.public()}})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_ = json.NewEncoder(w).Encode(current.Load())
	}))
	defer srv.Close()
	v, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSURL: srv.URL, AllowInsecureJWKS: true, MinRefresh: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), k1.token(t, claims(nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), k2.token(t, claims(nil))); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("a key not published yet: %v", err)
	}
	current.Store(&jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k2.public()}})
	time.Sleep(60 * time.Millisecond) // the behaviour under test: the key set's refresh interval passes
	if _, err := v.Verify(t.Context(), k2.token(t, claims(nil))); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
	// Unknown key ids do not make a fetch per request: at most one per
	// MinRefresh (a minute here).
	slow, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSURL: srv.URL, AllowInsecureJWKS: true, MinRefresh: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	unknown := newRSA(t, "k7").token(t, claims(nil))
	n := fetches.Load()
	for range 20 {
		if _, err := slow.Verify(t.Context(), unknown); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if got := fetches.Load() - n; got > 1 {
		t.Fatalf("20 tokens with unknown kids made %d fetches", got)
	}
}

func TestNewInvalid(t *testing.T) {
	ctx := context.Background()
	for _, o := range []auth.Options{
		{Audience: audience, JWKSFile: "x"},
		{Issuer: issuer, JWKSFile: "x"},
		{Issuer: issuer, Audience: audience},
		{Issuer: issuer, Audience: audience, JWKSFile: "/nonexistent/jwks.json"},
	} {
		if _, err := auth.New(ctx, o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestChallengeAndMetadata(t *testing.T) {
	k := newRSA(t, "k")
	v, err := auth.New(t.Context(), auth.Options{Issuer: issuer, Audience: audience, JWKSFile: jwksFile(t, k), RequiredScopes: []string{"mcp"}, ScopesSupported: []string{"mcp", "files:read"}})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "http://mcp.example.com/mcp", nil)
	w := httptest.NewRecorder()
	v.Challenge(w, r, auth.ErrNoToken)
	if h := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(h, `Bearer resource_metadata="http://mcp.example.com/.well-known/oauth-protected-resource"`) || !strings.Contains(h, `scope="mcp"`) || strings.Contains(h, "invalid_token") {
		t.Fatalf("challenge without a token: %q", h)
	}
	w = httptest.NewRecorder()
	v.Challenge(w, r, auth.ErrInvalidToken)
	if h := w.Header().Get("WWW-Authenticate"); !strings.Contains(h, `error="invalid_token"`) {
		t.Fatalf("challenge for a bad token: %q", h)
	}
	w = httptest.NewRecorder()
	v.Metadata(w, httptest.NewRequest(http.MethodGet, "http://mcp.example.com/.well-known/oauth-protected-resource", nil))
	var doc map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc["resource"] != audience || doc["authorization_servers"].([]any)[0] != issuer {
		t.Fatalf("metadata: %s", w.Body)
	}
	for _, h := range []string{"", "Basic abc", "Bearer ", "Bearer"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		if _, err := auth.BearerToken(req); err == nil {
			t.Errorf("BearerToken(%q) succeeded", h)
		}
	}
}
