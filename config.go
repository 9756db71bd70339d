package mcpfleet

import (
	"errors"
	"flag"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/gctune"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/stdio"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"go.opentelemetry.io/otel/trace"
)

// role is a command that runs mcpfleet: serve, frontend, worker or stdio.
type role string

const (
	roleServe    role = "serve"
	roleFrontend role = "frontend"
	roleWorker   role = "worker"
	roleStdio    role = "stdio"
)

func (r role) http() bool      { return r == roleServe || r == roleFrontend }
func (r role) handlers() bool  { return r != roleFrontend }
func (r role) bus() bool       { return r != roleStdio }
func (r role) clustered() bool { return r == roleFrontend || r == roleWorker }

// config is what the command line and the environment say, before it
// becomes the options of a Run function.
type config struct {
	natsConfig
	redisConfig
	Listen, Path                string
	NATSURL, NATSListen         string
	SessionTTL, RequestTimeout  time.Duration
	KeepAlive, ListenKeepAlive  time.Duration
	BodyTimeout, DrainTimeout   time.Duration
	DrainDelay, ConnectTimeout  time.Duration
	AllowedHosts, AllowedOrigin []string
	MaxBodyBytes                int64
	MaxListen                   int64
	ID, LogLevel, LogFormat     string
	StateKey                    string
	AdminListen, PprofListen    string
	GCHeadroom                  int64
	GCIdleRelease               time.Duration
	AccessLog                   bool
	ServeTools, ServePrompts    []string
	ServeResources              []string

	AuthIssuer, AuthAudience     string
	AuthJWKSFile, AuthJWKSURL    string
	AuthJWKSAllowHTTP            bool
	AuthRequiredScopes           []string
	AuthScopesSupported          []string
	AuthServers                  []string
	AuthMetadataURL              string
	MaxStringBytes, MaxArrayLen  int64
	MaxSessions, MaxSessionBytes int64
	MaxInFlight                  int64
	MaxInFlightPerSession        int64
	MaxStreamsPerSession         int64
	EndedStreamGrace             time.Duration
	MaxInFlightPerPrincipal      int64
	RatePerPrincipal, RateBurst  int64
	MaxSessionsPerPrincipal      int64
	MaxListenPerPrincipal        int64
	stateKey                     []byte
	oldStateKeys                 [][]byte
	// tracerProvider makes the spans (the OTEL_* environment's, see
	// tracing.go).
	tracerProvider trace.TracerProvider
}

// define registers the flags of role r on f, bound to c, then the
// program's own (an error when one redefines a built-in flag).
func (c *config) define(r role, f *flags, program func(*flag.FlagSet)) error {
	if r.http() {
		f.in(groupHTTP)
		f.str(&c.Listen, "listen", DefaultListen, "ADDR", "HTTP listen address (host:port)")
		f.str(&c.Path, "path", DefaultPath, "PATH", "path of the MCP endpoint")
		f.dur(&c.SessionTTL, "session-ttl", 30*time.Minute, "idle lifetime of a legacy session")
		f.dur(&c.RequestTimeout, "request-timeout", 10*time.Minute, "longest time a request may take")
		f.dur(&c.KeepAlive, "keepalive", 30*time.Second, "interval of SSE keepalive comments on GET streams (0 disables)")
		f.dur(&c.ListenKeepAlive, "listen-keepalive-interval", 15*time.Second, "interval of SSE keepalive comments on listen streams, which also frees dead peers' slots (0 disables)")
		f.list(&c.AllowedHosts, "allowed-hosts", "Host header values accepted, comma-separated (default: loopback names; * for any)")
		f.list(&c.AllowedOrigin, "allowed-origins", "Origin header values accepted, comma-separated (default: loopback origins; * for any)")
		f.dur(&c.BodyTimeout, "body-timeout", 10*time.Second, "longest time the reading of a request body may take (408 beyond)")

		f.in(groupLimits)
		f.i64(&c.MaxBodyBytes, "max-body-bytes", 4<<20, "largest request body (413 beyond)")
		f.i64(&c.MaxStringBytes, "max-string-bytes", 0, "largest string in a message (0: 2 MiB; negative: no cap)")
		f.i64(&c.MaxArrayLen, "max-array-len", 0, "most elements of an array or members of an object in a message (0: 10000; negative: no cap)")
		f.i64(&c.MaxListen, "max-listen-subscriptions", 1000, "most subscriptions/listen streams per frontend (0: unlimited; 503 beyond)")
		f.i64(&c.MaxInFlight, "max-inflight", 0, "requests running through one frontend, with or without authentication (0: 4096; negative: no cap; 503 with Retry-After beyond)")
		f.i64(&c.MaxStreamsPerSession, "max-streams-per-session", 0, "streams a legacy session keeps resume logs for; the least recently written go first (0: 64; negative: no cap)")
		f.dur(&c.EndedStreamGrace, "ended-stream-grace", 0, "how long a POST stream whose response was delivered stays resumable (0: 1m; negative: not at all)")
		f.i64(&c.MaxInFlightPerSession, "max-inflight-per-session", 0, "requests a legacy session may have running through one frontend (0: 64; negative: no cap)")
		f.i64(&c.MaxInFlightPerPrincipal, "max-inflight-per-principal", 0, "requests a principal may have running through one frontend, with authentication (0: 256; negative: no cap)")
		f.i64(&c.RatePerPrincipal, "rate-per-principal", 0, "requests per second per principal on one frontend, with authentication (0: 50; negative: no limit)")
		f.i64(&c.RateBurst, "rate-burst", 0, "burst of the per-principal rate limit (0: 100; negative: no limit)")
		f.i64(&c.MaxSessionsPerPrincipal, "max-sessions-per-principal", 0, "legacy sessions per principal, with authentication (0: 100; negative: no cap)")
		f.i64(&c.MaxListenPerPrincipal, "max-listen-per-principal", 0, "listen streams per principal on one frontend, with authentication (0: 32; negative: no cap)")
		if r == roleServe {
			f.i64(&c.MaxSessions, "max-sessions", 100000, "most live sessions of the in-memory store (503 beyond; negative: no cap)")
			f.i64(&c.MaxSessionBytes, "max-session-bytes", 256<<20, "most bytes of clientInfo and capabilities the in-memory store keeps (503 beyond; negative: no cap)")
		}

		f.in(groupAuth)
		f.str(&c.AuthIssuer, "auth-issuer", "", "URL", "issuer whose bearer tokens every MCP request needs (empty: no authentication)")
		f.str(&c.AuthAudience, "auth-audience", "", "URL", "this resource's URL, which tokens must name in aud (required with --auth-issuer)")
		f.str(&c.AuthJWKSFile, "auth-jwks-file", "", "FILE", "the issuer's signing keys, a JWKS file")
		f.str(&c.AuthJWKSURL, "auth-jwks-url", "", "URL", "the issuer's signing keys, a JWKS URL (cached, refetched on rotation)")
		f.boolean(&c.AuthJWKSAllowHTTP, "auth-jwks-allow-http", "let --auth-jwks-url be plain http (tests, a local authorization server: whoever alters the JWKS in transit can mint tokens); https is required otherwise")
		f.list(&c.AuthRequiredScopes, "auth-required-scopes", "scopes every request's token must grant, comma-separated")
		f.list(&c.AuthScopesSupported, "auth-scopes-supported", "scopes listed in the protected-resource metadata, comma-separated")
		f.list(&c.AuthServers, "auth-authorization-servers", "authorization servers listed in the protected-resource metadata (default: the issuer)")
		f.str(&c.AuthMetadataURL, "auth-metadata-url", "", "URL", "absolute URL of the protected-resource metadata named in WWW-Authenticate (default: derived from the request)")
	}

	f.in(groupBus)
	switch r {
	case roleServe:
		f.str(&c.NATSURL, "nats-url", "", "URLS", "NATS server(s), comma-separated (empty: a bus inside this process: in-process, or an embedded NATS server with --nats-listen)")
		f.str(&c.NATSListen, "nats-listen", "", "ADDR", "run an embedded NATS server, open to other processes (workers, frontends) on this address, instead of the in-process bus no other process can join")
	case roleFrontend:
		f.str(&c.NATSURL, "nats-url", DefaultNATSURL, "URLS", "NATS server(s), comma-separated")
	case roleWorker:
		f.str(&c.NATSURL, "nats-url", DefaultNATSURL, "URLS", "NATS server(s), comma-separated")
	}
	if r.bus() {
		c.defineNATS(r, f)
	}
	c.defineRedis(r, f)

	if r.handlers() {
		f.in(groupWorker)
		usage := "base64 of the 32-byte key sealing 2026-07-28 requestState, the same on every worker; more keys after commas still open states sealed before a rotation"
		switch r {
		case roleWorker:
			usage += " (required)"
		case roleServe:
			usage += " (default: random on a bus inside this process; required with --nats-url)"
		default:
			usage += " (default: random)"
		}
		f.secretStr(&c.StateKey, "state-key", "KEYS", usage)
	}
	if r.bus() {
		f.in(groupProcess)
		usage := "address of /healthz, /readyz and /metrics, for probes and Prometheus (never served on the MCP port); keep it off the load balancer; off (or empty): none"
		def := ""
		if r == roleServe {
			def = DefaultServeAdminListen
		}
		f.str(&c.AdminListen, "admin-listen", def, "ADDR", usage)
		f.dur(&c.ConnectTimeout, "connect-timeout", DefaultConnectTimeout, "how long the first connection to NATS and Redis is retried, with backoff (0: one attempt)")
	}
	if r.http() {
		delay := time.Duration(0)
		if r == roleFrontend {
			delay = DefaultDrainDelay
		}
		f.dur(&c.DrainDelay, "drain-delay", delay, "on SIGTERM, how long to report not ready and go on serving before the drain (lame duck: a load balancer moves away first; 0: a short grace ending when no connection is open)")
	}
	if r == roleWorker {
		f.in(groupWorker)
		f.list(&c.ServeTools, "tools", "tool names this worker serves, as glob patterns (default: all; none: none)")
		f.list(&c.ServePrompts, "prompts", "prompt names this worker serves, as glob patterns (default: all; none: none)")
		f.list(&c.ServeResources, "resources", "resource URIs and URI templates this worker serves, as glob patterns (default: all; none: none)")
	}
	if r == roleStdio {
		f.dur(&c.RequestTimeout, "request-timeout", 10*time.Minute, "longest time a request may take")
		f.i64(&c.MaxBodyBytes, "max-message-bytes", 4<<20, "largest message (one line)")
	}

	f.in(groupProcess)
	if r.bus() {
		f.str(&c.ID, "id", "", "ID", "this process's id on the bus (default: random)")
		f.str(&c.PprofListen, "pprof-listen", "", "ADDR", "serve net/http/pprof on this address, for profiling (keep it on loopback)")
		f.i64(&c.GCHeadroom, "gc-headroom", gctune.DefaultHeadroom, "bytes the heap may grow by before the next garbage collection while the live heap is smaller: memory spent to collect less often (0: 64 MiB; negative: Go's default pacing; GOGC in the environment also turns it off)")
		f.dur(&c.GCIdleRelease, "gc-idle-release", gctune.DefaultIdleRelease, "how long the process must be idle before the garbage-collector tuner goes back to Go's pacing and returns the garbage's pages to the system (0: 1m; negative is refused)")
		f.dur(&c.DrainTimeout, "drain-timeout", DefaultDrainTimeout, "how long SIGTERM waits for in-flight requests")
	} else {
		f.dur(&c.DrainTimeout, "drain-timeout", 5*time.Second, "how long requests in flight at the end of stdin may run on")
	}
	f.str(&c.LogLevel, "log-level", "info", "LEVEL", "debug, info, warn or error (logs go to stderr)")
	logFormat := "text" // people read the all-in-one's and stdio's logs
	if r.clustered() {
		logFormat = "json" // production roles: log collectors read them
	}
	f.str(&c.LogFormat, "log-format", logFormat, "FORMAT", "text or json")
	if r.http() {
		f.on(&c.AccessLog, "access-log", "log one line per exchange on the MCP endpoint (message access, level info; --access-log=false: none)")
	}
	if program != nil && r.handlers() {
		return f.program(program)
	}
	return nil
}

// validate checks c for role r; every problem is reported at once.
func (c *config) validate(r role) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r == roleStdio {
		if c.RequestTimeout <= 0 {
			add("--request-timeout must be positive")
		}
		if c.MaxBodyBytes <= 0 {
			add("--max-message-bytes must be positive")
		}
	}
	if r.http() {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			add("--listen %q: %v", c.Listen, err)
		}
		if !strings.HasPrefix(c.Path, "/") {
			add("--path %q must start with /", c.Path)
		}
		for name, d := range map[string]time.Duration{"--session-ttl": c.SessionTTL, "--request-timeout": c.RequestTimeout, "--body-timeout": c.BodyTimeout} {
			if d <= 0 {
				add("%s must be positive", name)
			}
		}
		if c.KeepAlive < 0 {
			add("--keepalive must not be negative")
		}
		if c.ListenKeepAlive < 0 {
			add("--listen-keepalive-interval must not be negative")
		}
		if c.MaxBodyBytes <= 0 {
			add("--max-body-bytes must be positive")
		}
		if c.MaxListen < 0 {
			add("--max-listen-subscriptions must not be negative")
		}
		if c.DrainDelay < 0 {
			add("--drain-delay must not be negative")
		}
		authSet := c.AuthAudience != "" || c.AuthJWKSFile != "" || c.AuthJWKSURL != "" || c.AuthJWKSAllowHTTP || len(c.AuthRequiredScopes) > 0
		switch {
		case c.AuthIssuer == "" && authSet:
			add("--auth-issuer is required with the other --auth-* flags")
		case c.AuthIssuer != "" && c.AuthAudience == "":
			add("--auth-audience is required with --auth-issuer")
		case c.AuthIssuer != "" && (c.AuthJWKSFile == "") == (c.AuthJWKSURL == ""):
			add("exactly one of --auth-jwks-file and --auth-jwks-url is required with --auth-issuer")
		case c.AuthJWKSURL != "" && !c.AuthJWKSAllowHTTP && !strings.HasPrefix(strings.ToLower(c.AuthJWKSURL), "https://"):
			add("--auth-jwks-url must be an https URL (--auth-jwks-allow-http allows http, for tests)")
		}
	}
	if r.clustered() && c.NATSURL == "" {
		add("--nats-url is required")
	}
	if r.bus() {
		c.validateNATS(r, c.NATSURL, add)
	}
	c.validateRedis(r, add)
	if a := c.adminListen(); a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			add("--admin-listen %q: %v (off: none)", a, err)
		}
	}
	if r.bus() && c.GCIdleRelease < 0 {
		add("--gc-idle-release must not be negative")
	}
	if c.ConnectTimeout < 0 {
		add("--connect-timeout must not be negative")
	}
	if c.DrainTimeout < 0 {
		add("--drain-timeout must not be negative")
	}
	if len(c.ID) > frontend.MaxIDLen {
		add("--id %q: at most %d bytes", c.ID, frontend.MaxIDLen)
	}
	if c.StateKey != "" {
		k, old, err := ParseStateKeys(c.StateKey)
		if err != nil {
			add("--state-key (%s): %v", StateKeyEnv, err)
		}
		c.stateKey, c.oldStateKeys = k, old
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		add("--log-format %q: want text or json", c.LogFormat)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		add("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return errors.Join(errs...)
}

// logger builds the process logger, writing to w (stderr), with the
// request attributes of LogHandler.
func (c *config) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(LogHandler(h))
}

// handlerOptions maps the flags onto HandlerOptions.
func (c *config) handlerOptions(log *slog.Logger) HandlerOptions {
	o := HandlerOptions{
		NATSURL: c.NATSURL, NATSListen: c.NATSListen, ConnectTimeout: offWhenZero(c.ConnectTimeout),
		RedisURL: c.RedisURL, RedisMode: sessionstore.RedisMode(c.RedisMode),
		RedisWaitReplicas: int(c.RedisWaitReplicas), RedisWaitTimeout: c.RedisWaitTimeout,
		NATSAuth: c.natsAuth(), SubjectPrefix: c.SubjectPrefix, NATSPingInterval: offWhenZero(c.NATSPingInterval),
		Memory: sessionstore.Options{MaxSessions: int(c.MaxSessions), MaxSessionBytes: c.MaxSessionBytes,
			MaxStreamsPerSession: int(c.MaxStreamsPerSession), EndedStreamGrace: c.EndedStreamGrace},
		StateKey: c.stateKey, OldStateKeys: c.oldStateKeys,
		Logger: log,
		Worker: worker.Options{TracerProvider: c.tracerProvider},
		Frontend: frontend.Options{
			ID:                      c.ID,
			TracerProvider:          c.tracerProvider,
			MaxStringBytes:          int(c.MaxStringBytes),
			MaxArrayLen:             int(c.MaxArrayLen),
			MaxInFlight:             int(c.MaxInFlight),
			MaxInFlightPerSession:   int(c.MaxInFlightPerSession),
			MaxInFlightPerPrincipal: int(c.MaxInFlightPerPrincipal),
			RatePerPrincipal:        float64(c.RatePerPrincipal),
			RateBurst:               int(c.RateBurst),
			MaxSessionsPerPrincipal: int(c.MaxSessionsPerPrincipal),
			MaxListenPerPrincipal:   int(c.MaxListenPerPrincipal),
			MaxBodyBytes:            c.MaxBodyBytes,
			BodyTimeout:             c.BodyTimeout,
			SessionTTL:              c.SessionTTL,
			RequestTimeout:          c.RequestTimeout,
			KeepAlive:               offWhenZero(c.KeepAlive),
			ListenKeepAlive:         offWhenZero(c.ListenKeepAlive),
			AllowedHosts:            c.AllowedHosts,
			AllowedOrigins:          c.AllowedOrigin,
			MaxListen:               int(offWhenZero(c.MaxListen)), // 0 = unlimited
			NoAccessLog:             !c.AccessLog,
		},
	}
	if c.AuthIssuer != "" {
		o.Auth = &auth.Options{
			Issuer: c.AuthIssuer, Audience: c.AuthAudience, JWKSFile: c.AuthJWKSFile, JWKSURL: c.AuthJWKSURL, AllowInsecureJWKS: c.AuthJWKSAllowHTTP,
			RequiredScopes: c.AuthRequiredScopes, ScopesSupported: c.AuthScopesSupported,
			AuthorizationServers: c.AuthServers, MetadataURL: c.AuthMetadataURL,
		}
	}
	return o
}

// adminListen is --admin-listen with off and none as "" (no admin
// listener).
func (c *config) adminListen() string { return adminAddr(c.AdminListen) }

// adminAddr maps the admin address's off values ("off", "none", "") to "".
func adminAddr(a string) string {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "", "off", "none":
		return ""
	}
	return a
}

// offWhenZero maps a flag where 0 turns a feature off (a cap to
// unlimited, a retry to one attempt) onto an option where 0 means the
// default and a negative value turns it off.
func offWhenZero[T time.Duration | int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

func (c *config) serveOptions(log *slog.Logger) *ServeOptions {
	return &ServeOptions{HandlerOptions: c.handlerOptions(log), Listen: c.Listen, Path: c.Path, AdminListen: c.adminListen(),
		DrainDelay: c.DrainDelay, DrainTimeout: c.DrainTimeout}
}

func (c *config) workerOptions(log *slog.Logger) *WorkerOptions {
	return &WorkerOptions{
		NATSURL: c.NATSURL, NATSAuth: c.natsAuth(), SubjectPrefix: c.SubjectPrefix, NATSPingInterval: offWhenZero(c.NATSPingInterval),
		StateKey: c.stateKey, OldStateKeys: c.oldStateKeys,
		Worker:      worker.Options{ID: c.ID, Filter: c.filter(), TracerProvider: c.tracerProvider},
		AdminListen: c.adminListen(), ConnectTimeout: offWhenZero(c.ConnectTimeout), DrainTimeout: c.DrainTimeout, Logger: log,
	}
}

func (c *config) stdioOptions(log *slog.Logger) *StdioOptions {
	return &StdioOptions{
		StateKey: c.stateKey, OldStateKeys: c.oldStateKeys,
		Stdio: stdio.Options{Logger: log, MaxLineBytes: int(c.MaxBodyBytes), RequestTimeout: c.RequestTimeout, DrainTimeout: c.DrainTimeout,
			TracerProvider: c.tracerProvider},
	}
}

// filter returns the worker's catalog filter from --tools, --prompts and
// --resources (nil when none is set).
func (c *config) filter() *mcp.CatalogFilter {
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
