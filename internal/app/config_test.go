package app

import (
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		role      Role
		args      []string
		logFormat string
	}{
		{RoleAllInOne, nil, "text"},
		{RoleStdio, nil, "text"},
		{RoleFrontend, nil, "json"},
		{RoleWorker, nil, "json"},
		{RoleWorker, []string{"--log-format", "text"}, "text"},
	}
	for _, tc := range tests {
		c, err := Parse(tc.role, "test", tc.args)
		if err != nil {
			t.Fatalf("Parse(%v, %q): %v", tc.role, tc.args, err)
		}
		if c.LogFormat != tc.logFormat {
			t.Errorf("role %v %q: log format %q, want %q", tc.role, tc.args, c.LogFormat, tc.logFormat)
		}
	}
	c, err := Parse(RoleFrontend, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != "nats://127.0.0.1:4222" || c.RedisURL != "redis://127.0.0.1:6379/0" || c.Listen != "127.0.0.1:8080" {
		t.Errorf("frontend defaults: %+v", c)
	}
}

func TestParseEnvironment(t *testing.T) {
	t.Setenv("MCPFLEET_NATS_URL", "nats://10.0.0.1:4222")
	t.Setenv("MCPFLEET_LOG_LEVEL", "debug")
	c, err := Parse(RoleWorker, "test", []string{"--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSURL != "nats://10.0.0.1:4222" {
		t.Errorf("MCPFLEET_NATS_URL not used: %q", c.NATSURL)
	}
	if c.LogLevel != "warn" {
		t.Errorf("the flag should win over the environment: %q", c.LogLevel)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		role Role
		args []string
		want string
	}{
		{RoleFrontend, []string{"--listen", "nonsense"}, "--listen"},
		{RoleFrontend, []string{"--path", "mcp"}, "--path"},
		{RoleFrontend, []string{"--session-ttl", "0s"}, "--session-ttl"},
		{RoleFrontend, []string{"--max-body-bytes", "-1"}, "--max-body-bytes"},
		{RoleFrontend, []string{"--body-timeout", "0s"}, "--body-timeout"},
		{RoleFrontend, []string{"--redis-url", ""}, "--redis-url is required"},
		{RoleWorker, []string{"--nats-url", ""}, "--nats-url is required"},
		{RoleWorker, []string{"--fixture", "bogus"}, "--fixture"},
		{RoleWorker, []string{"--state-key", "not base64!"}, "state"},
		{RoleAllInOne, []string{"--log-format", "xml"}, "--log-format"},
		{RoleAllInOne, []string{"--log-level", "loud"}, "--log-level"},
		{RoleAllInOne, []string{"--max-listen-subscriptions", "-2"}, "--max-listen-subscriptions"},
		{RoleStdio, []string{"--max-message-bytes", "0"}, "--max-message-bytes"},
		{RoleStdio, []string{"--listen", "127.0.0.1:1"}, "not defined"},
		{RoleAllInOne, []string{"extra"}, "unexpected arguments"},
		{RoleFrontend, []string{"--auth-audience", "https://x/mcp"}, "--auth-issuer is required"},
		{RoleFrontend, []string{"--auth-issuer", "https://as"}, "--auth-audience is required"},
		{RoleFrontend, []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp"}, "exactly one of --auth-jwks-file and --auth-jwks-url"},
		{RoleAllInOne, []string{"--auth-issuer", "https://as", "--auth-audience", "https://x/mcp", "--auth-jwks-file", "a", "--auth-jwks-url", "b"}, "exactly one of"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.role, "test", tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%v, %q) = %v, want an error mentioning %q", tc.role, tc.args, err, tc.want)
		}
	}
}
