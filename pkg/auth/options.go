package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
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
	// exactly one of JWKSFile and JWKSURL is required. It must be https
	// (redirects too) unless AllowInsecureJWKS.
	// default: none (required unless JWKSFile)
	JWKSURL string
	// AllowInsecureJWKS lets JWKSURL (and its redirects) be plain http,
	// loopback included: for tests and a local authorization server only,
	// since whoever can alter the JWKS in transit can mint tokens.
	// default: false (https required)
	AllowInsecureJWKS bool
	// Refresh is the longest time a fetched JWKS is used before it is
	// fetched again (keys rotate). The JWKS response's Cache-Control
	// max-age (or Expires) schedules the next fetch sooner, but never
	// sooner than MinRefresh. Negative is invalid.
	// default: 5 minutes
	Refresh time.Duration
	// MinRefresh is how often, at most, tokens signed by unknown key ids
	// trigger a fetch, and the shortest time a response's cache headers
	// (or a failed fetch, retried after it) can schedule the next one.
	// Negative is invalid.
	// default: 10 s
	MinRefresh time.Duration
	// FetchTimeout bounds each fetch of the JWKS (the HTTP request and
	// reading its body). A fetch runs on a context of its own, not a
	// request's: a caller gone does not cancel it, Close does. Negative
	// is invalid.
	// default: 10 s
	FetchTimeout time.Duration
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
	// HTTPClient fetches JWKSURL; the Verifier uses a copy whose
	// redirects must keep to https (unless AllowInsecureJWKS), and bounds
	// each fetch by FetchTimeout besides the client's own Timeout.
	// default: a client on http.DefaultTransport
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
// JWKSURL that is not an absolute https URL (http with
// AllowInsecureJWKS), a negative Refresh, MinRefresh or FetchTimeout.
// The keys are not loaded.
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
	case o.FetchTimeout < 0:
		return fmt.Errorf("%w: FetchTimeout %v is negative", ErrInvalidOptions, o.FetchTimeout)
	}
	if o.JWKSURL != "" {
		u, err := url.Parse(o.JWKSURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("%w: the JWKS URL %q is not an absolute https URL", ErrInvalidOptions, o.JWKSURL)
		}
		if err := checkScheme(u, o.AllowInsecureJWKS); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	return nil
}

// checkScheme refuses a JWKS URL (or redirect) that is not https, unless
// insecure allows http.
func checkScheme(u *url.URL, insecure bool) error {
	if u.Scheme == "https" || (insecure && u.Scheme == "http") {
		return nil
	}
	return fmt.Errorf("the JWKS URL %s is %s: https is required (AllowInsecureJWKS, --auth-jwks-allow-http, allows http)", u.Redacted(), u.Scheme)
}

// withDefaults returns o with its zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.Refresh == 0 {
		o.Refresh = 5 * time.Minute
	}
	if o.MinRefresh == 0 {
		o.MinRefresh = 10 * time.Second
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = 10 * time.Second
	}
	switch {
	case o.Leeway == 0:
		o.Leeway = 30 * time.Second
	case o.Leeway < 0:
		o.Leeway = 0 // off: exp and nbf exactly
	}
	if len(o.AuthorizationServers) == 0 {
		o.AuthorizationServers = []string{o.Issuer}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	hc := http.Client{}
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	}
	next, insecure := hc.CheckRedirect, o.AllowInsecureJWKS
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkScheme(req.URL, insecure); err != nil {
			return fmt.Errorf("redirected: %w", err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	o.HTTPClient = &hc
	return o
}
