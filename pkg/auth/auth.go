// Package auth makes mcpfleet an OAuth 2.1 resource server, as the MCP
// authorization spec asks: bearer tokens (JWT) verified against the
// authorization server's keys (a JWKS file or https URL, cached and
// refreshed in the background as its cache headers say and on rotation,
// one fetch at a time, never making a token of a known key wait), with
// issuer, audience (this resource), expiry and scopes checked; the protected-resource metadata document
// (/.well-known/oauth-protected-resource); and the 401/403 answers with
// WWW-Authenticate that point clients to it.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// MetadataPath is where the protected-resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Principal is the authenticated caller.
type Principal struct {
	// Subject is the token's sub (with the issuer, it names the caller).
	Subject string
	// Scopes are the granted scopes (the scope claim).
	Scopes []string
}

// ID is the principal's identifier for binding sessions, tasks, listen
// streams and MRTR state: issuer and subject.
func (p *Principal) ID(issuer string) string { return issuer + "#" + p.Subject }

// HasScopes reports whether every scope in want was granted.
func (p *Principal) HasScopes(want []string) bool {
	for _, s := range want {
		if !slices.Contains(p.Scopes, s) {
			return false
		}
	}
	return true
}

// Errors of Verify. A *Error carries what the 401 says.
var (
	ErrNoToken      = errors.New("auth: no bearer token")
	ErrInvalidToken = errors.New("auth: invalid token")
)

// Verifier checks bearer tokens. Safe for concurrent use. It keeps the
// JWKS cached and refreshes it in a goroutine of its own (see keys.go);
// Close stops that.
type Verifier struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	next      time.Time  // when keys are stale: the next Verify starts a refresh
	lastForce time.Time  // when an unknown key id last started a fetch
	call      *fetchCall // the fetch in flight, or nil
	closed    bool
	wg        sync.WaitGroup // the fetch goroutine
}

// New returns a Verifier; it loads the keys once (failing if it cannot
// within FetchTimeout). Invalid options are an error wrapping
// ErrInvalidOptions (see [Options.Validate]); a ctx done before the keys
// are loaded is ctx.Err(). Close the Verifier to stop its refreshes.
func New(ctx context.Context, opts Options) (*Verifier, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	v := &Verifier{opts: opts, log: opts.Logger}
	lctx, cancel := context.WithTimeout(ctx, opts.FetchTimeout)
	keys, ttl, err := v.load(lctx)
	cancel()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	v.keys, v.next = keys, time.Now().Add(ttl)
	return v, nil
}

// Issuer returns the configured issuer.
func (v *Verifier) Issuer() string { return v.opts.Issuer }

// algorithms are the accepted signature algorithms (asymmetric only).
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

type claims struct {
	jwt.Claims
	Scope string `json:"scope"`
	// scp is an array form some servers use.
	Scp []string `json:"scp"`
}

// Verify checks a bearer token: signature by a JWKS key, issuer, audience,
// expiry (exp required) and not-before. A token signed by a key the
// Verifier knows is checked at once, without waiting for any fetch of the
// JWKS. A token naming an unknown key id waits for a refresh of the JWKS
// (the one in flight, or a new one at most every MinRefresh), bounded by
// ctx; rate limited, it is refused at once. A known key id whose key
// does not verify the signature is a bad signature, fetching nothing.
// Every error wraps ErrInvalidToken.
func (v *Verifier) Verify(ctx context.Context, token string) (*Principal, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: one signature expected", ErrInvalidToken)
	}
	kid := tok.Headers[0].KeyID
	var c claims
	verr := verifySig(tok, v.current(), kid, &c)
	if errors.Is(verr, errUnknownKey) {
		// A key id not in the set: perhaps a rotation. Wait for a fetch
		// (rate limited; never one per made-up token), then try again.
		keys, err := v.refreshed(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: unknown key id %q (the JWKS refresh did not end in time: %w)", ErrInvalidToken, kid, err)
		}
		verr = verifySig(tok, keys, kid, &c)
	}
	if verr != nil {
		return nil, verr
	}
	if c.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp claim", ErrInvalidToken)
	}
	if err := c.Claims.ValidateWithLeeway(jwt.Expected{Issuer: v.opts.Issuer, AnyAudience: jwt.Audience{v.opts.Audience}, Time: time.Now()}, v.opts.Leeway); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no sub claim", ErrInvalidToken)
	}
	p := &Principal{Subject: c.Subject, Scopes: strings.Fields(c.Scope)}
	p.Scopes = append(p.Scopes, c.Scp...)
	return p, nil
}

// errUnknownKey is verifySig's error for a key id not in the set; it
// wraps ErrInvalidToken.
var errUnknownKey = fmt.Errorf("%w: unknown key id", ErrInvalidToken)

// verifySig checks tok's signature against the keys named kid (all keys
// when kid is empty) and decodes its claims into c.
func verifySig(tok *jwt.JSONWebToken, keys *jose.JSONWebKeySet, kid string, c *claims) error {
	candidates := keys.Keys
	if kid != "" {
		candidates = keys.Key(kid)
		if len(candidates) == 0 {
			return fmt.Errorf("%w %q", errUnknownKey, kid)
		}
	}
	for _, k := range candidates {
		if err := tok.Claims(k.Key, c); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: bad signature", ErrInvalidToken)
}

// RequiredScopes are the scopes every access needs.
func (v *Verifier) RequiredScopes() []string { return v.opts.RequiredScopes }

// MetadataURL returns the metadata document's URL for a request to host
// (scheme from the request or X-Forwarded-Proto).
func (v *Verifier) MetadataURL(r *http.Request) string {
	if v.opts.MetadataURL != "" {
		return v.opts.MetadataURL
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host + MetadataPath
}

// Challenge writes 401 (no or invalid token) with the WWW-Authenticate
// header pointing to the metadata document.
func (v *Verifier) Challenge(w http.ResponseWriter, r *http.Request, err error) {
	h := `Bearer resource_metadata="` + v.MetadataURL(r) + `"`
	if errors.Is(err, ErrInvalidToken) {
		h += `, error="invalid_token", error_description="` + sanitize(err.Error()) + `"`
	}
	if len(v.opts.RequiredScopes) > 0 {
		h += `, scope="` + strings.Join(v.opts.RequiredScopes, " ") + `"`
	}
	w.Header().Set("WWW-Authenticate", h)
}

// InsufficientScope sets the 403 WWW-Authenticate header naming the scopes
// needed.
func (v *Verifier) InsufficientScope(w http.ResponseWriter, r *http.Request, scopes []string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(scopes, " ")+`", resource_metadata="`+v.MetadataURL(r)+`"`)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return ' '
		}
		return r
	}, s)
}

// Metadata serves the protected-resource metadata document (RFC 9728).
func (v *Verifier) Metadata(w http.ResponseWriter, r *http.Request) {
	doc := map[string]any{
		"resource":                 v.opts.Audience,
		"authorization_servers":    v.opts.AuthorizationServers,
		"bearer_methods_supported": []string{"header"},
	}
	if len(v.opts.ScopesSupported) > 0 {
		doc["scopes_supported"] = v.opts.ScopesSupported
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_ = json.NewEncoder(w).Encode(doc)
}

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoToken
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: the Authorization header must be Bearer <token>", ErrInvalidToken)
	}
	return strings.TrimSpace(tok), nil
}
