package mcpfleet

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

func TestNATSFlags(t *testing.T) {
	c, err := parse(t, roleWorker, []string{"--state-key", base64.StdEncoding.EncodeToString(make([]byte, 32)), "--nats-user", "w", "--nats-password", "s3cret", "--nats-tls-ca", "ca.pem", "--subject-prefix", "acme_prod-1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.natsAuth(); a.User != "w" || a.Password != "s3cret" || a.TLSCA != "ca.pem" {
		t.Errorf("auth %+v", a)
	}
	if o := c.workerOptions(nil); o.SubjectPrefix != "acme_prod-1" || o.NATSAuth.User != "w" {
		t.Errorf("worker options %+v", o)
	}
	t.Setenv(EnvName("nats-token"), "tok3n")
	c, err = parse(t, roleFrontend, nil, nil)
	if err != nil || c.NATSToken != "tok3n" || c.SubjectPrefix != bus.DefaultPrefix {
		t.Errorf("frontend: token %q prefix %q err %v", c.NATSToken, c.SubjectPrefix, err)
	}
}

func TestNATSFlagsInvalid(t *testing.T) {
	for _, tc := range []struct {
		role role
		args []string
		want string
	}{
		{roleFrontend, []string{"--nats-user", "u", "--nats-token", "t"}, "at most one of"},
		{roleFrontend, []string{"--nats-nkey", "a", "--nats-creds", "b"}, "at most one of"},
		{roleFrontend, []string{"--nats-password", "p"}, "--nats-password needs --nats-user"},
		{roleFrontend, []string{"--nats-tls-cert", "c.pem"}, "--nats-tls-cert and --nats-tls-key go together"},
		{roleServe, []string{"--nats-token", "t"}, "need --nats-url"},
		{roleFrontend, []string{"--subject-prefix", "a.b"}, "--subject-prefix"},
		{roleFrontend, []string{"--subject-prefix", "mcp.>"}, "--subject-prefix"},
		{roleFrontend, []string{"--subject-prefix", ""}, "--subject-prefix"},
		{roleFrontend, []string{"--subject-prefix", strings.Repeat("x", bus.MaxPrefixLen+1)}, "--subject-prefix"},
	} {
		_, err := parse(t, tc.role, tc.args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: %v, want %q", tc.role, tc.args, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), `"t"`)) {
			t.Errorf("%v %q: the error quotes a secret: %v", tc.role, tc.args, err)
		}
	}
}

// The secrets' flags show no value in help, and the library options
// refuse what the flags refuse.
func TestNATSSecretsAndOptions(t *testing.T) {
	t.Setenv(EnvName("nats-password"), "from-the-env")
	c := &config{}
	f := newFlags("test")
	if err := c.define(roleWorker, f, nil); err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	f.usage(&help)
	for _, name := range []string{"--nats-password", "--nats-token", "--nats-nkey", "--nats-creds", "--nats-tls-ca", "--subject-prefix"} {
		if !strings.Contains(help.String(), name) {
			t.Errorf("help lacks %s", name)
		}
	}
	if strings.Contains(help.String(), "from-the-env") {
		t.Error("help shows a secret from the environment")
	}
	if err := applyPrefix("a.b", &bus.Subjects{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("SubjectPrefix a.b: %v", err)
	}
	if err := applyPrefix("a", &bus.Subjects{Prefix: "b"}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("SubjectPrefix a with Subjects.Prefix b: %v", err)
	}
	s := bus.Subjects{}
	if err := applyPrefix("tenant1", &s); err != nil || s.Prefix != "tenant1" {
		t.Errorf("applyPrefix: %v %q", err, s.Prefix)
	}
}
