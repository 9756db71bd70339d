package mcpfleet

import (
	"context"
	"encoding/base64"
	"flag"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// parse is what App.Run does before running a role.
func parse(t *testing.T, r role, args []string, program func(*flag.FlagSet)) (*config, error) {
	t.Helper()
	c := &config{}
	f := newFlags("test")
	if err := c.define(r, f, program); err != nil {
		return nil, err
	}
	if err := f.parse(args); err != nil {
		return nil, err
	}
	return c, c.validate(r)
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		role      role
		args      []string
		logFormat string
	}{
		{roleServe, nil, "text"},
		{roleStdio, nil, "text"},
		{roleFrontend, nil, "json"},
		{roleWorker, nil, "json"},
		{roleWorker, []string{"--log-format", "text"}, "text"},
	}
	for _, tc := range tests {
		c, err := parse(t, tc.role, tc.args, nil)
		if err != nil {
			t.Fatalf("parse(%v, %q): %v", tc.role, tc.args, err)
		}
		if c.LogFormat != tc.logFormat {
			t.Errorf("role %v %q: log format %q, want %q", tc.role, tc.args, c.LogFormat, tc.logFormat)
		}
	}
	c, err := parse(t, roleFrontend, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != DefaultNATSURL || c.RedisURL != "redis://127.0.0.1:6379/0" || c.Listen != DefaultListen || c.Path != DefaultPath {
		t.Errorf("frontend defaults: %+v", c)
	}
	c, err = parse(t, roleServe, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != "" || c.RedisURL != "" {
		t.Errorf("serve defaults: NATS %q, Redis %q; want the embedded ones", c.NATSURL, c.RedisURL)
	}
	if c.NATSPingInterval != bus.DefaultPingInterval {
		t.Errorf("serve default --nats-ping-interval %v, want %v", c.NATSPingInterval, bus.DefaultPingInterval)
	}
	// The admin listener: serve's on loopback by default, none for the
	// others unless set; off and none turn it off.
	if got := c.serveOptions(nil).AdminListen; got != "127.0.0.1:9090" {
		t.Errorf("serve default --admin-listen %q, want 127.0.0.1:9090 (DefaultServeAdminListen %q)", got, DefaultServeAdminListen)
	}
	for _, tc := range []struct {
		role role
		args []string
		want string
	}{
		{roleFrontend, nil, ""},
		{roleWorker, nil, ""},
		{roleServe, []string{"--admin-listen", "off"}, ""},
		{roleServe, []string{"--admin-listen", "none"}, ""},
		{roleServe, []string{"--admin-listen", ""}, ""},
		{roleFrontend, []string{"--admin-listen", "0.0.0.0:9090"}, "0.0.0.0:9090"},
		{roleWorker, []string{"--admin-listen", "OFF"}, ""},
	} {
		c, err := parse(t, tc.role, tc.args, nil)
		if err != nil {
			t.Fatalf("parse(%v, %q): %v", tc.role, tc.args, err)
		}
		got := c.adminListen()
		if tc.role == roleWorker {
			got = c.workerOptions(nil).AdminListen
		} else if o := c.serveOptions(nil).AdminListen; o != got {
			t.Errorf("%v %q: serve options %q, config %q", tc.role, tc.args, o, got)
		}
		if got != tc.want {
			t.Errorf("%v %q: admin address %q, want %q", tc.role, tc.args, got, tc.want)
		}
	}
	// 0 is nats.go's own settings: negative in the options.
	if c, err := parse(t, roleWorker, []string{"--nats-ping-interval", "0"}, nil); err != nil || c.workerOptions(nil).NATSPingInterval >= 0 {
		t.Errorf("--nats-ping-interval 0: %v; want a negative NATSPingInterval", err)
	}
	if c, err := parse(t, roleFrontend, []string{"--nats-ping-interval", "2s"}, nil); err != nil || c.serveOptions(nil).NATSPingInterval != 2*time.Second {
		t.Errorf("--nats-ping-interval 2s: %v", err)
	}
	o := c.serveOptions(nil)
	if o.Frontend.KeepAlive != 30*time.Second || o.Frontend.MaxListen != 1000 || o.Memory.MaxSessions != 100000 {
		t.Errorf("serve options: keepalive %v, max listen %d, max sessions %d", o.Frontend.KeepAlive, o.Frontend.MaxListen, o.Memory.MaxSessions)
	}
	// 0 turns keepalives off and the listen cap to unlimited: negative
	// values in frontend.Options.
	c, err = parse(t, roleServe, []string{"--keepalive", "0", "--max-listen-subscriptions", "0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.serveOptions(nil); o.Frontend.KeepAlive >= 0 || o.Frontend.MaxListen >= 0 {
		t.Errorf("--keepalive 0 --max-listen-subscriptions 0: keepalive %v, max listen %d; want both negative", o.Frontend.KeepAlive, o.Frontend.MaxListen)
	}
}

func TestParseEnvironment(t *testing.T) {
	t.Setenv("MCPFLEET_NATS_URL", "nats://10.0.0.1:4222,nats://10.0.0.2:4222")
	t.Setenv("MCPFLEET_LOG_LEVEL", "debug")
	t.Setenv("MCPFLEET_TOOLS", "a_*, b")
	t.Setenv("MCPFLEET_GREETING", "hej")
	var greeting string
	program := func(fs *flag.FlagSet) { fs.StringVar(&greeting, "greeting", "hello", "what to say") }
	c, err := parse(t, roleWorker, []string{"--log-level", "warn"}, program)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != "nats://10.0.0.1:4222,nats://10.0.0.2:4222" {
		t.Errorf("MCPFLEET_NATS_URL not used: %q", c.NATSURL)
	}
	if c.LogLevel != "warn" {
		t.Errorf("the flag should win over the environment: %q", c.LogLevel)
	}
	if f := c.filter(); f == nil || strings.Join(f.Tools, "|") != "a_*|b" || f.Prompts != nil {
		t.Errorf("MCPFLEET_TOOLS: filter %+v", f)
	}
	if greeting != "hej" {
		t.Errorf("a program flag's twin MCPFLEET_GREETING not used: %q", greeting)
	}
}

// Values from the environment: errors say what is wanted; an empty
// variable (compose's ${X} with X unset) is no value at all, but for a
// text flag.
func TestParseEnvironmentValues(t *testing.T) {
	t.Setenv("MCPFLEET_SESSION_TTL", "30")
	if _, err := parse(t, roleFrontend, nil, nil); err == nil || !strings.Contains(err.Error(), "MCPFLEET_SESSION_TTL") || !strings.Contains(err.Error(), "duration") {
		t.Errorf("MCPFLEET_SESSION_TTL=30: %v", err)
	}
	t.Setenv("MCPFLEET_SESSION_TTL", "")
	t.Setenv("MCPFLEET_MAX_BODY_BYTES", "")
	t.Setenv("MCPFLEET_NATS_URL", "")
	c, err := parse(t, roleServe, nil, nil)
	if err != nil || c.SessionTTL != 30*time.Minute || c.MaxBodyBytes != 4<<20 {
		t.Errorf("empty variables: %v, ttl %v, body %d; want the defaults", err, c.SessionTTL, c.MaxBodyBytes)
	}
	if _, err := parse(t, roleWorker, nil, nil); err == nil || !strings.Contains(err.Error(), "--nats-url is required") {
		t.Errorf("MCPFLEET_NATS_URL= for a worker: %v; want the empty URL refused", err)
	}
	if _, err := parse(t, roleFrontend, []string{"--session-ttl", "5"}, nil); err == nil || !strings.Contains(err.Error(), "--session-ttl") || !strings.Contains(err.Error(), "duration") {
		t.Errorf("--session-ttl 5: %v", err)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		role role
		args []string
		want string
	}{
		{roleFrontend, []string{"--listen", "nonsense"}, "--listen"},
		{roleFrontend, []string{"--path", "mcp"}, "--path"},
		{roleFrontend, []string{"--session-ttl", "0s"}, "--session-ttl"},
		{roleFrontend, []string{"--max-body-bytes", "-1"}, "--max-body-bytes"},
		{roleFrontend, []string{"--body-timeout", "0s"}, "--body-timeout"},
		{roleFrontend, []string{"--redis-url", ""}, "--redis-url is required"},
		{roleFrontend, []string{"--redis-url", "http://x"}, "--redis-url"},
		{roleWorker, []string{"--nats-url", ""}, "--nats-url is required"},
		{roleWorker, []string{"--state-key", "not base64!"}, "MCPFLEET_STATE_KEY"},
		{roleWorker, []string{"--state-key", base64.StdEncoding.EncodeToString(make([]byte, 16))}, "32 bytes"},
		{roleServe, []string{"--log-format", "xml"}, "--log-format"},
		{roleServe, []string{"--log-level", "loud"}, "--log-level"},
		{roleServe, []string{"--max-listen-subscriptions", "-2"}, "--max-listen-subscriptions"},
		{roleStdio, []string{"--max-message-bytes", "0"}, "--max-message-bytes"},
		{roleStdio, []string{"--listen", "127.0.0.1:1"}, "not defined"},
		{roleFrontend, []string{"--state-key", "x"}, "not defined"},
		{roleServe, []string{"extra"}, "unexpected arguments"},
		{roleFrontend, []string{"--auth-audience", "https://x/mcp"}, "--auth-issuer is required"},
		{roleFrontend, []string{"--auth-issuer", "https://as"}, "--auth-audience is required"},
		{roleFrontend, []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp"}, "exactly one of --auth-jwks-file and --auth-jwks-url"},
		{roleServe, []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp", "--auth-jwks-file", "a", "--auth-jwks-url", "b"}, "exactly one of"},
		{roleServe, []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp", "--auth-jwks-url", "http://as/jwks"}, "--auth-jwks-url must be an https URL"},
		{roleFrontend, []string{"--auth-jwks-allow-http"}, "--auth-issuer is required"},
		{roleWorker, []string{"--nats-ping-interval", "-1s"}, "--nats-ping-interval must not be negative"},
		{roleWorker, []string{"--gc-idle-release", "-1s"}, "--gc-idle-release must not be negative"},
		{roleFrontend, []string{"--gc-idle-release", "-1m"}, "--gc-idle-release must not be negative"},
		{roleFrontend, []string{"--nats-ping-interval", "50ms"}, "--nats-ping-interval 50ms: at least 100ms"},
		{roleServe, []string{"--admin-listen", "9090"}, "--admin-listen"},
		{roleWorker, []string{"--admin-listen", "nowhere"}, "--admin-listen"},
	}
	for _, tc := range tests {
		_, err := parse(t, tc.role, tc.args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%v, %q) = %v, want an error mentioning %q", tc.role, tc.args, err, tc.want)
		}
	}
}

// Errors about a secret never quote it: not the state key, not a
// password inside a URL.
func TestParseErrorsKeepSecrets(t *testing.T) {
	const secret = "hunter2hunter2"
	for _, args := range [][]string{
		{"--state-key", secret},
		{"--state-key=" + secret + ",also-" + secret},
	} {
		_, err := parse(t, roleWorker, args, nil)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("parse(%q) = %v: want an error without the value", args, err)
		}
	}
	t.Setenv(StateKeyEnv, secret)
	if _, err := parse(t, roleWorker, nil, nil); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), StateKeyEnv) {
		t.Errorf("bad %s: %v: want an error naming the variable, not the value", StateKeyEnv, err)
	}
	t.Setenv(StateKeyEnv, "")
	_, err := parse(t, roleFrontend, []string{"--redis-url", "http://:" + secret + "@redis:6379"}, nil)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("bad --redis-url: %v: want an error without the password", err)
	}
}

func TestParseStateKeys(t *testing.T) {
	k1, k2 := make([]byte, 32), make([]byte, 32)
	k1[0], k2[0] = 1, 2
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(k1) + "," + base64.RawURLEncoding.EncodeToString(k2),
		" " + base64.RawStdEncoding.EncodeToString(k1) + " , " + base64.URLEncoding.EncodeToString(k2),
	} {
		key, old, err := ParseStateKeys(s)
		if err != nil {
			t.Fatalf("ParseStateKeys(%q): %v", s, err)
		}
		if key[0] != 1 || len(old) != 1 || old[0][0] != 2 {
			t.Errorf("ParseStateKeys(%q) = %v, %v", s, key, old)
		}
	}
	if _, _, err := ParseStateKeys(base64.StdEncoding.EncodeToString(k1) + ","); err == nil {
		t.Error("a trailing comma (an empty key) was accepted")
	}
}

// returns runs waitNone in a goroutine and reports whether it returned
// before the hang guard (the behaviour under test is "returns", not how
// fast).
func returns(o *openConns, ctx context.Context, grace time.Duration, after func()) bool {
	done := make(chan struct{})
	go func() { o.waitNone(ctx, grace); close(done) }()
	if after != nil {
		after()
	}
	select {
	case <-done:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// The drain grace waits for open connections only, within the grace or
// the drain's context.
func TestOpenConnsWaitNone(t *testing.T) {
	var o openConns
	if !returns(&o, context.Background(), time.Hour, nil) {
		t.Fatal("no connection open, yet waitNone did not return")
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateActive)
	if !returns(&o, context.Background(), time.Millisecond, nil) {
		t.Fatal("a connection open: waitNone outlived its grace")
	}
	if !returns(&o, context.Background(), time.Hour, func() { o.track(nil, http.StateClosed) }) {
		t.Fatal("the connection closed, yet waitNone did not return")
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateHijacked) // a listen stream taken over by the hub
	if n := o.n.Load(); n != 0 {
		t.Fatalf("%d connections counted after a hijack", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.track(nil, http.StateNew)
	if !returns(&o, ctx, time.Hour, cancel) {
		t.Fatal("a cancelled drain: waitNone did not return")
	}
}

// --auth-jwks-allow-http (or MCPFLEET_AUTH_JWKS_ALLOW_HTTP) lets an http
// JWKS URL through to auth.Options.AllowInsecureJWKS.
func TestParseJWKSAllowHTTP(t *testing.T) {
	args := []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp", "--auth-jwks-url", "http://127.0.0.1:1/jwks"}
	t.Setenv("MCPFLEET_AUTH_JWKS_ALLOW_HTTP", "true")
	c, err := parse(t, roleServe, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.handlerOptions(slog.Default()).Auth; o == nil || !o.AllowInsecureJWKS || o.Validate() != nil {
		t.Fatalf("auth options %+v: want AllowInsecureJWKS, valid", o)
	}
}

// --access-log: on by default in serve and frontend, off with
// --access-log=false or MCPFLEET_ACCESS_LOG=false (the flag wins), and
// not a flag of the roles without an HTTP endpoint.
func TestParseAccessLog(t *testing.T) {
	for _, r := range []role{roleServe, roleFrontend} {
		c, err := parse(t, r, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.serveOptions(nil).Frontend.NoAccessLog {
			t.Errorf("%s: the access log is off by default", r)
		}
		c, err = parse(t, r, []string{"--access-log=false"}, nil)
		if err != nil || !c.serveOptions(nil).Frontend.NoAccessLog {
			t.Errorf("%s --access-log=false: %v; want the access log off", r, err)
		}
	}
	t.Run("environment", func(t *testing.T) {
		t.Setenv("MCPFLEET_ACCESS_LOG", "false")
		c, err := parse(t, roleFrontend, nil, nil)
		if err != nil || !c.serveOptions(nil).Frontend.NoAccessLog {
			t.Errorf("MCPFLEET_ACCESS_LOG=false: %v; want the access log off", err)
		}
		c, err = parse(t, roleFrontend, []string{"--access-log"}, nil)
		if err != nil || c.serveOptions(nil).Frontend.NoAccessLog {
			t.Errorf("--access-log over MCPFLEET_ACCESS_LOG=false: %v; want the flag to win", err)
		}
		t.Setenv("MCPFLEET_ACCESS_LOG", "sometimes")
		if _, err := parse(t, roleServe, nil, nil); err == nil || !strings.Contains(err.Error(), "MCPFLEET_ACCESS_LOG") || !strings.Contains(err.Error(), "true or false") {
			t.Errorf("MCPFLEET_ACCESS_LOG=sometimes: %v", err)
		}
	})
	for _, r := range []role{roleWorker, roleStdio} {
		if _, err := parse(t, r, []string{"--access-log=false"}, nil); err == nil || !strings.Contains(err.Error(), "--access-log") {
			t.Errorf("%s --access-log=false: %v; want it refused", r, err)
		}
	}
}

// The process logger, text or JSON, adds a request's attributes to the
// lines made with its context.
func TestProcessLoggerRequestAttributes(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		c, err := parse(t, roleServe, []string{"--log-format", format}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		rec := &httpx.Record{Method: "tools/call", ID: protocol.Int64ID(42), Session: "0123456789abcdef", Tool: "echo"}
		c.logger(&buf).InfoContext(httpx.WithRecord(context.Background(), rec), "handled")
		for _, want := range []string{"tools/call", "rpc_id", "42", "01234567", "echo"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s: %q lacks %q", format, buf.String(), want)
			}
		}
		if strings.Contains(buf.String(), "0123456789") {
			t.Errorf("%s: the whole session id was logged: %q", format, buf.String())
		}
	}
}
