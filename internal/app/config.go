// Package app assembles mcpfleet's processes (all-in-one, frontend,
// worker) from configuration: flags with MCPFLEET_* environment twins.
package app

import (
	"errors"

	"flag"
	"fmt"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the configuration shared by the binaries. Each binary uses the
// fields that apply to it.
type Config struct {
	Listen          string        // HTTP listen address
	Path            string        // MCP endpoint path
	NATSURL         string        // "" = embedded NATS (all-in-one only)
	NATSListen      string        // all-in-one: also expose the embedded NATS on this address
	RedisURL        string        // "" = in-memory store (all-in-one only)
	Fixture         string        // "" or "conformance"
	SessionTTL      time.Duration // idle TTL of legacy sessions
	RequestTimeout  time.Duration
	KeepAlive       time.Duration
	AllowedHosts    []string
	AllowedOrigins  []string
	MaxBodyBytes    int64
	BodyTimeout     time.Duration
	ID              string // frontend or worker id on the bus
	LogLevel        string
	LogFormat       string // text or json
	DrainTimeout    time.Duration
	StateKey        string   // base64 of the requestState sealing key
	HTTPListen      string   // worker: address of /healthz, /readyz, /metrics
	ServeTools      []string // worker: tool name patterns served (nil: all)
	ServePrompts    []string
	ServeResources  []string
	PprofListen     string // address of net/http/pprof ("" off)
	MaxListen       int64
	ListenKeepAlive time.Duration
	// Authentication (OAuth 2.1 resource server); off when AuthIssuer is
	// empty.
	AuthIssuer          string
	AuthAudience        string
	AuthJWKSFile        string
	AuthJWKSURL         string
	AuthRequiredScopes  []string
	AuthScopesSupported []string
	AuthServers         []string
	AuthMetadataURL     string
	// Limits (0: the frontend's default; negative: off).
	MaxStringBytes          int64
	MaxSessions             int64 // the memory store's capacity
	MaxSessionBytes         int64
	MaxArrayLen             int64
	MaxInFlightPerSession   int64
	MaxInFlightPerPrincipal int64
	RatePerPrincipal        int64
	RateBurst               int64
	MaxSessionsPerPrincipal int64
	MaxListenPerPrincipal   int64
}

// flagSet binds c's fields to flags whose defaults come from MCPFLEET_*
// environment variables (the environment wins over built-in defaults;
// flags win over the environment).
type flagSet struct {
	fs   *flag.FlagSet
	errs []error
}

func envName(flagName string) string {
	return "MCPFLEET_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (f *flagSet) str(p *string, name, def, usage string) {
	if v, ok := os.LookupEnv(envName(name)); ok {
		def = v
	}
	f.fs.StringVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (f *flagSet) dur(p *time.Duration, name string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(envName(name)); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: %v", envName(name), v, err))
		} else {
			def = d
		}
	}
	f.fs.DurationVar(p, name, def, usage+" (env "+envName(name)+")")
}

func (f *flagSet) i64(p *int64, name string, def int64, usage string) {
	if v, ok := os.LookupEnv(envName(name)); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: %v", envName(name), v, err))
		} else {
			def = n
		}
	}
	f.fs.Int64Var(p, name, def, usage+" (env "+envName(name)+")")
}

func (f *flagSet) list(p *[]string, name, usage string) {
	def := ""
	if v, ok := os.LookupEnv(envName(name)); ok {
		def = v
	}
	*p = splitList(def)
	f.fs.Func(name, usage+"; comma-separated (env "+envName(name)+")", func(s string) error {
		*p = splitList(s)
		return nil
	})
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Role selects which flags apply.
type Role int

// The roles.
const (
	RoleAllInOne Role = iota
	RoleFrontend
	RoleWorker
	// RoleStdio is `mcpfleet stdio`: the handlers on stdin/stdout, no
	// HTTP, NATS or store.
	RoleStdio
)

// servesHTTP reports whether the role has an MCP HTTP endpoint.
func (r Role) servesHTTP() bool { return r == RoleAllInOne || r == RoleFrontend }

// Parse parses args for role into a validated Config.
func Parse(role Role, name string, args []string) (*Config, error) {
	c := &Config{}
	f := &flagSet{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	if role.servesHTTP() {
		f.str(&c.Listen, "listen", "127.0.0.1:8080", "HTTP listen address")
		f.str(&c.Path, "path", "/mcp", "path of the MCP endpoint")
		f.dur(&c.SessionTTL, "session-ttl", 30*time.Minute, "idle lifetime of a legacy session")
		f.dur(&c.RequestTimeout, "request-timeout", 10*time.Minute, "longest time a request may take")
		f.dur(&c.KeepAlive, "keepalive", 30*time.Second, "interval of SSE keepalive comments on GET streams (0 disables)")
		f.list(&c.AllowedHosts, "allowed-hosts", "Host header values accepted (default: loopback names; * for any)")
		f.list(&c.AllowedOrigins, "allowed-origins", "Origin header values accepted (default: loopback origins; * for any)")
		f.i64(&c.MaxBodyBytes, "max-body-bytes", 4<<20, "largest accepted request body")
		f.dur(&c.BodyTimeout, "body-timeout", 10*time.Second, "longest time the reading of a request body may take (408 beyond)")
	}
	if role != RoleFrontend {
		f.str(&c.Fixture, "fixture", "", `extra handlers to serve: "" or "conformance"`)
		f.str(&c.StateKey, "state-key", "", "base64 of the 32-byte key sealing 2026-07-28 requestState; every worker of a cluster must share it (default: shared by the running workers, or random)")
	}
	if role.servesHTTP() {
		f.str(&c.AuthIssuer, "auth-issuer", "", "OAuth issuer whose bearer tokens are required on every MCP request (empty: no authentication)")
		f.str(&c.AuthAudience, "auth-audience", "", "this resource's URL, which tokens must name in aud (required with --auth-issuer)")
		f.str(&c.AuthJWKSFile, "auth-jwks-file", "", "the issuer's signing keys, a JWKS file")
		f.str(&c.AuthJWKSURL, "auth-jwks-url", "", "the issuer's signing keys, a JWKS URL (cached, refreshed on rotation)")
		f.list(&c.AuthRequiredScopes, "auth-required-scopes", "scopes every request's token must grant")
		f.list(&c.AuthScopesSupported, "auth-scopes-supported", "scopes listed in the protected-resource metadata")
		f.list(&c.AuthServers, "auth-authorization-servers", "authorization servers listed in the protected-resource metadata (default: the issuer)")
		f.str(&c.AuthMetadataURL, "auth-metadata-url", "", "absolute URL of /.well-known/oauth-protected-resource named in WWW-Authenticate (default: derived from the request)")
		f.i64(&c.MaxStringBytes, "max-string-bytes", 0, "largest string in a message (0: 2 MiB; negative: no cap)")
		f.i64(&c.MaxArrayLen, "max-array-len", 0, "most elements of an array or members of an object in a message (0: 10000; negative: no cap)")
		f.i64(&c.MaxInFlightPerSession, "max-inflight-per-session", 0, "requests a legacy session may have running through one frontend (0: 64; negative: no cap)")
		f.i64(&c.MaxInFlightPerPrincipal, "max-inflight-per-principal", 0, "requests a principal may have running through one frontend, with authentication (0: 256; negative: no cap)")
		f.i64(&c.RatePerPrincipal, "rate-per-principal", 0, "requests per second per principal on one frontend, with authentication (0: 50; negative: no limit)")
		f.i64(&c.RateBurst, "rate-burst", 0, "burst of the per-principal rate limit (0: 100)")
		f.i64(&c.MaxSessionsPerPrincipal, "max-sessions-per-principal", 0, "legacy sessions per principal, with authentication (0: 100; negative: no cap)")
		f.i64(&c.MaxListenPerPrincipal, "max-listen-per-principal", 0, "listen streams per principal on one frontend, with authentication (0: 32; negative: no cap)")
		f.i64(&c.MaxListen, "max-listen-subscriptions", 1000, "most subscriptions/listen streams per frontend (0 = unlimited; 503 beyond)")
		f.dur(&c.ListenKeepAlive, "listen-keepalive-interval", 15*time.Second, "interval of SSE keepalive comments on listen streams, which also free dead peers' slots (0 disables)")
	}
	switch role {
	case RoleAllInOne:
		f.str(&c.NATSURL, "nats-url", "", "NATS URL; empty runs an embedded NATS server")
		f.str(&c.NATSListen, "nats-listen", "", "expose the embedded NATS server on this address (e.g. 127.0.0.1:4222)")
		f.str(&c.RedisURL, "redis-url", "", "Redis URL for sessions; empty uses the in-memory store")
		f.i64(&c.MaxSessions, "max-sessions", 100000, "most live sessions of the in-memory store (503 beyond; negative: no cap)")
		f.i64(&c.MaxSessionBytes, "max-session-bytes", 256<<20, "most bytes of clientInfo and capabilities the in-memory store keeps (503 beyond; negative: no cap)")
	case RoleFrontend:
		f.str(&c.NATSURL, "nats-url", "nats://127.0.0.1:4222", "NATS URL")
		f.str(&c.RedisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis URL for sessions")
	case RoleWorker:
		f.str(&c.NATSURL, "nats-url", "nats://127.0.0.1:4222", "NATS URL")
		f.str(&c.HTTPListen, "http-listen", "", "address of the worker's /healthz, /readyz and /metrics (empty: off)")
		f.list(&c.ServeTools, "tools", "tool names this worker serves, as glob patterns (default: all; \"none\": none)")
		f.list(&c.ServePrompts, "prompts", "prompt names this worker serves, as glob patterns (default: all; \"none\": none)")
		f.list(&c.ServeResources, "resources", "resource URIs and URI templates this worker serves, as glob patterns (default: all; \"none\": none)")
	case RoleStdio:
		f.dur(&c.RequestTimeout, "request-timeout", 10*time.Minute, "longest time a request may take")
		f.i64(&c.MaxBodyBytes, "max-message-bytes", 4<<20, "largest accepted message (one line)")
	}
	if role != RoleStdio {
		f.str(&c.ID, "id", "", "this process's id on the bus (default: random)")
		f.str(&c.PprofListen, "pprof-listen", "", "serve net/http/pprof on this address, for profiling (empty: off; keep it on loopback)")
		f.dur(&c.DrainTimeout, "drain-timeout", 30*time.Second, "how long SIGTERM waits for in-flight requests")
	} else {
		f.dur(&c.DrainTimeout, "drain-timeout", 5*time.Second, "how long requests in flight at the end of stdin may run on")
	}
	f.str(&c.LogLevel, "log-level", "info", "debug, info, warn or error (logs go to stderr)")
	logFormat := "text" // people read the all-in-one's and stdio's logs
	if role == RoleFrontend || role == RoleWorker {
		logFormat = "json" // production binaries: log collectors read them
	}
	f.str(&c.LogFormat, "log-format", logFormat, "text or json")
	if err := f.fs.Parse(args); err != nil {
		return nil, err
	}
	if len(f.errs) > 0 {
		return nil, errors.Join(f.errs...)
	}
	if f.fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", f.fs.Args())
	}
	return c, c.validate(role)
}

func (c *Config) validate(role Role) error {
	var errs []error
	if role == RoleStdio {
		if c.RequestTimeout <= 0 {
			errs = append(errs, errors.New("--request-timeout must be positive"))
		}
		if c.MaxBodyBytes <= 0 {
			errs = append(errs, errors.New("--max-message-bytes must be positive"))
		}
	}
	if role.servesHTTP() {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("--listen %q: %v", c.Listen, err))
		}
		if !strings.HasPrefix(c.Path, "/") {
			errs = append(errs, fmt.Errorf("--path %q must start with /", c.Path))
		}
		if c.SessionTTL <= 0 {
			errs = append(errs, errors.New("--session-ttl must be positive"))
		}
		if c.RequestTimeout <= 0 {
			errs = append(errs, errors.New("--request-timeout must be positive"))
		}
		if c.KeepAlive < 0 {
			errs = append(errs, errors.New("--keepalive must not be negative"))
		}
		if c.MaxBodyBytes <= 0 {
			errs = append(errs, errors.New("--max-body-bytes must be positive"))
		}
		if c.BodyTimeout <= 0 {
			errs = append(errs, errors.New("--body-timeout must be positive"))
		}
		authSet := c.AuthAudience != "" || c.AuthJWKSFile != "" || c.AuthJWKSURL != "" || len(c.AuthRequiredScopes) > 0
		switch {
		case c.AuthIssuer == "" && authSet:
			errs = append(errs, errors.New("--auth-issuer is required with the other --auth-* flags"))
		case c.AuthIssuer != "" && c.AuthAudience == "":
			errs = append(errs, errors.New("--auth-audience is required with --auth-issuer"))
		case c.AuthIssuer != "" && (c.AuthJWKSFile == "") == (c.AuthJWKSURL == ""):
			errs = append(errs, errors.New("exactly one of --auth-jwks-file and --auth-jwks-url is required with --auth-issuer"))
		}
	}
	if len(c.ID) > 64 {
		errs = append(errs, fmt.Errorf("--id %q: at most 64 bytes", c.ID))
	}
	if c.StateKey != "" {
		if _, err := parseStateKey(c.StateKey); err != nil {
			errs = append(errs, err)
		}
	}
	if c.MaxListen < 0 {
		errs = append(errs, errors.New("--max-listen-subscriptions must not be negative"))
	}
	if c.ListenKeepAlive < 0 {
		errs = append(errs, errors.New("--listen-keepalive-interval must not be negative"))
	}
	switch c.Fixture {
	case "", "conformance":
	default:
		errs = append(errs, fmt.Errorf("--fixture %q: want \"\" or \"conformance\"", c.Fixture))
	}
	if (role == RoleFrontend || role == RoleWorker) && c.NATSURL == "" {
		errs = append(errs, errors.New("--nats-url is required"))
	}
	if role == RoleFrontend && c.RedisURL == "" {
		errs = append(errs, errors.New("--redis-url is required"))
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: %v", c.LogLevel, err))
	}
	return errors.Join(errs...)
}

// Logger builds the process logger (on stderr).
func (c *Config) Logger() *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// Filter returns the worker's catalog filter from --tools, --prompts and
// --resources (nil when none is set).
func (c *Config) Filter() *mcp.CatalogFilter {
	if c.ServeTools == nil && c.ServePrompts == nil && c.ServeResources == nil {
		return nil
	}
	conv := func(l []string) []string {
		switch {
		case l == nil:
			return nil
		case len(l) == 1 && l[0] == "none":
			return []string{}
		}
		return l
	}
	return &mcp.CatalogFilter{Tools: conv(c.ServeTools), Prompts: conv(c.ServePrompts), Resources: conv(c.ServeResources)}
}
