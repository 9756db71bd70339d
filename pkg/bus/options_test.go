package bus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

func TestInvalidOptions(t *testing.T) {
	if _, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), ConnectTimeout: -1}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("Connect with a negative ConnectTimeout: %v", err)
	}
	if _, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), PingInterval: 50 * time.Millisecond}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("Connect with a PingInterval of 50ms: %v", err)
	}
	if _, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "no-port", Logger: quietLogger()}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("StartEmbedded with an address without a port: %v", err)
	}
}

func TestInvalidAuthAndPrefix(t *testing.T) {
	for _, a := range []bus.Auth{
		{User: "u", Token: "t"},
		{NKeyFile: "a", CredsFile: "b"},
		{Password: "p"},
		{TLSCert: "c.pem"},
		{TLSKey: "k.pem"},
	} {
		if _, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), Auth: a}); !errors.Is(err, bus.ErrInvalidOptions) {
			t.Errorf("Connect with %+v: %v", a, err)
		}
	}
	if _, err := bus.Connect("nats://127.0.0.1:1", &bus.ConnectOptions{Logger: quietLogger(), InboxPrefix: "_INBOX.>"}); !errors.Is(err, bus.ErrInvalidOptions) {
		t.Errorf("Connect with a wildcard inbox prefix: %v", err)
	}
	for _, p := range []string{"a.b", "mcp*", ">", "a b", "é"} {
		if err := bus.ValidatePrefix(p); !errors.Is(err, bus.ErrInvalidOptions) {
			t.Errorf("ValidatePrefix(%q): %v", p, err)
		}
	}
	for _, p := range []string{"", "mcp", "acme_prod-2"} {
		if err := bus.ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q): %v", p, err)
		}
	}
	if got := (bus.Subjects{Prefix: "t1"}).InboxPrefix("fe"); got != "_INBOX.t1.fe" {
		t.Errorf("InboxPrefix %q", got)
	}
}
