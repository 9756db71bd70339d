// Package auth makes mcpfleet an OAuth 2.1 resource server, as the MCP
// authorization spec asks: bearer tokens (JWT) verified against the
// authorization server's keys (a JWKS file or URL, cached, refreshed on
// rotation), with issuer, audience (this resource), expiry and scopes
// checked; the protected-resource metadata document
// (/.well-known/oauth-protected-resource); and the 401/403 answers with
// WWW-Authenticate that point clients to it.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Options configure a Verifier. Issuer, Audience and one of JWKSFile and
// JWKSURL are required; see [Options.Validate] for what else is invalid.
type Options struct {
	// Issuer is the authorization server's issuer; tokens must carry it
	// as iss.
	// default: none (required)
	Issuer string
	// Audience is this resource's identifier (its canonical URL, e.g.
	// https://mcp.example.com/mcp); tokens must name it in aud.
	// default: none (required)
	Audience string
	// JWKSFile is a file holding the token signing keys (a JWKS); exactly
	// one of JWKSFile and JWKSURL is required.
	// default: none (required unless JWKSURL)
	JWKSFile string
	// JWKSURL is where the token signing keys (a JWKS) are fetched;
	// exactly one of JWKSFile and JWKSURL is required.
	// default: none (required unless JWKSFile)
	JWKSURL string
	// Refresh is how often the JWKS is fetched again (keys rotate).
	// Negative is invalid.
	// default: 5 minutes
	Refresh time.Duration
	// MinRefresh is how often, at most, a token signed by an unknown key
	// id triggers a fetch. Negative is invalid.
	// default: 10 s
	MinRefresh time.Duration
	// Leeway is the clock skew allowed on exp and nbf; negative means off:
	// no skew allowed.
	// default: 30 s
	Leeway time.Duration
	// RequiredScopes must all be granted for any access.
	// default: none
	RequiredScopes []string
	// AuthorizationServers are listed in the metadata document.
	// default: Issuer
	AuthorizationServers []string
	// ScopesSupported are listed in the metadata document.
	// default: none
	ScopesSupported []string
	// MetadataURL is the metadata document's absolute URL named in
	// WWW-Authenticate; empty means derived from each request's host.
	// default: derived from each request
	MetadataURL string
	// HTTPClient fetches JWKSURL.
	// default: a client with a 10 s timeout
	HTTPClient *http.Client
	// Logger receives the failed refreshes of the JWKS.
	// default: slog.Default()
	Logger *slog.Logger
}

// ErrInvalidOptions is wrapped by every error about Options: what
// [Options.Validate] reports, and [New] returns.
var ErrInvalidOptions = errors.New("auth: invalid options")

// optionsError is an options error whose message predates
// ErrInvalidOptions and is kept as it was; it wraps ErrInvalidOptions.
type optionsError struct{ msg string }

func (e *optionsError) Error() string { return e.msg }
func (e *optionsError) Unwrap() error { return ErrInvalidOptions }

// Validate reports what is invalid in o, wrapping ErrInvalidOptions: no
// Issuer, no Audience, not exactly one of JWKSFile and JWKSURL, a
// negative Refresh or MinRefresh. The keys are not loaded.
func (o *Options) Validate() error {
	switch {
	case o.Issuer == "":
		return &optionsError{"auth: an issuer is required"}
	case o.Audience == "":
		return &optionsError{"auth: an audience (this resource's URL) is required"}
	case (o.JWKSFile == "") == (o.JWKSURL == ""):
		return &optionsError{"auth: exactly one of a JWKS file and a JWKS URL is required"}
	case o.Refresh < 0:
		return fmt.Errorf("%w: Refresh %v is negative", ErrInvalidOptions, o.Refresh)
	case o.MinRefresh < 0:
		return fmt.Errorf("%w: MinRefresh %v is negative", ErrInvalidOptions, o.MinRefresh)
	}
	return nil
}

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

// Verifier checks bearer tokens. Safe for concurrent use.
type Verifier struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	fetched   time.Time
	lastForce time.Time
}

// New returns a Verifier; it loads the keys once (failing if it cannot).
// Invalid options are an error wrapping ErrInvalidOptions (see
// [Options.Validate]); a ctx done before the keys are loaded is
// ctx.Err().
func New(ctx context.Context, opts Options) (*Verifier, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Refresh == 0 {
		opts.Refresh = 5 * time.Minute
	}
	if opts.MinRefresh == 0 {
		opts.MinRefresh = 10 * time.Second
	}
	switch {
	case opts.Leeway == 0:
		opts.Leeway = 30 * time.Second
	case opts.Leeway < 0:
		opts.Leeway = 0 // off: exp and nbf exactly
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if len(opts.AuthorizationServers) == 0 {
		opts.AuthorizationServers = []string{opts.Issuer}
	}
	v := &Verifier{opts: opts, log: opts.Logger}
	if v.log == nil {
		v.log = slog.Default()
	}
	keys, err := v.load(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetched = keys, time.Now()
	return v, nil
}

// Issuer returns the configured issuer.
func (v *Verifier) Issuer() string { return v.opts.Issuer }

func (v *Verifier) load(ctx context.Context) (*jose.JSONWebKeySet, error) {
	var (
		b   []byte
		err error
	)
	if v.opts.JWKSFile != "" {
		b, err = os.ReadFile(v.opts.JWKSFile)
	} else {
		b, err = v.fetch(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: loading the JWKS: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("auth: malformed JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("auth: the JWKS has no keys")
	}
	return &set, nil
}

func (v *Verifier) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", v.opts.JWKSURL, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// keySet returns the keys, refreshed when stale or when force asks (an
// unknown key id: a rotation), at most every MinRefresh.
func (v *Verifier) keySet(ctx context.Context, force bool) *jose.JSONWebKeySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	stale := now.Sub(v.fetched) > v.opts.Refresh
	if force && now.Sub(v.lastForce) < v.opts.MinRefresh {
		force = false
	}
	if !stale && !force {
		return v.keys
	}
	if force {
		v.lastForce = now
	}
	keys, err := v.load(ctx)
	if err != nil {
		v.log.Warn("auth: refreshing the JWKS failed; keeping the old keys", "err", err)
		v.fetched = now // retry after Refresh, not at every request
		return v.keys
	}
	v.keys, v.fetched = keys, now
	return keys
}

// algorithms are the accepted signature algorithms (asymmetric only).
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

type claims struct {
	jwt.Claims
	Scope string `json:"scope"`
	// scp is an array form some servers use.
	Scp []string `json:"scp"`
}

// Verify checks a bearer token: signature by a JWKS key, issuer, audience,
// expiry (exp required) and not-before.
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
	var verr error
	for attempt := 0; attempt < 2; attempt++ {
		keys := v.keySet(ctx, attempt == 1)
		candidates := keys.Keys
		if kid != "" {
			candidates = keys.Key(kid)
		}
		if len(candidates) == 0 {
			verr = fmt.Errorf("%w: unknown key id %q", ErrInvalidToken, kid)
			continue
		}
		verr = fmt.Errorf("%w: bad signature", ErrInvalidToken)
		for _, k := range candidates {
			if err := tok.Claims(k.Key, &c); err == nil {
				verr = nil
				break
			}
		}
		if verr == nil || kid == "" {
			break
		}
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
