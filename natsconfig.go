package mcpfleet

import (
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
)

// natsConfig is what the command line says about the NATS connection's
// credentials and TLS, and the subject prefix.
type natsConfig struct {
	NATSUser, NATSPassword  string
	NATSToken               string
	NATSNKey, NATSCreds     string
	NATSTLSCA               string
	NATSTLSCert, NATSTLSKey string
	SubjectPrefix           string
	NATSPingInterval        time.Duration
}

// defineNATS registers the credential, TLS and prefix flags of a role
// on the bus (in the bus group). The secrets are never echoed.
func (c *natsConfig) defineNATS(r role, f *flags) {
	f.in(groupBus)
	f.str(&c.NATSUser, "nats-user", "", "USER", "NATS user name (with --nats-password; or nats://user:password@host in --nats-url)")
	f.secretStr(&c.NATSPassword, "nats-password", "PASSWORD", "NATS password of --nats-user")
	f.secretStr(&c.NATSToken, "nats-token", "TOKEN", "NATS authorization token")
	f.str(&c.NATSNKey, "nats-nkey", "", "FILE", "file holding this process's NATS NKey seed (SU...)")
	f.str(&c.NATSCreds, "nats-creds", "", "FILE", "NATS credentials file (.creds: user JWT and NKey seed, for operator mode)")
	f.str(&c.NATSTLSCA, "nats-tls-ca", "", "FILE", "PEM CA certificates that sign the NATS server's certificate (turns TLS on)")
	f.str(&c.NATSTLSCert, "nats-tls-cert", "", "FILE", "PEM client certificate for NATS (with --nats-tls-key)")
	f.str(&c.NATSTLSKey, "nats-tls-key", "", "FILE", "PEM key of --nats-tls-cert")
	f.dur(&c.NATSPingInterval, "nats-ping-interval", bus.DefaultPingInterval, "how often the NATS connection is checked: once 2 pings go unanswered, or a write stays blocked this long, it is dropped and made again (to another server of --nats-url): a partition is noticed within 2 to 3 intervals (0: nats.go's own 2m pings and 1m writes)")
	usage := "first token of every NATS subject; deployments sharing one NATS need different ones"
	if r == roleServe {
		usage += " (with --nats-url)"
	}
	f.str(&c.SubjectPrefix, "subject-prefix", bus.DefaultPrefix, "TOKEN", usage)
}

// natsAuth returns the bus.Auth of the flags.
func (c *natsConfig) natsAuth() bus.Auth {
	return bus.Auth{
		User: c.NATSUser, Password: c.NATSPassword, Token: c.NATSToken,
		NKeyFile: c.NATSNKey, CredsFile: c.NATSCreds,
		TLSCA: c.NATSTLSCA, TLSCert: c.NATSTLSCert, TLSKey: c.NATSTLSKey,
	}
}

// validateNATS checks the flags for role r (natsURL: --nats-url); add
// reports a problem.
func (c *natsConfig) validateNATS(r role, natsURL string, add func(string, ...any)) {
	n := 0
	for _, set := range []bool{c.NATSUser != "" || c.NATSPassword != "", c.NATSToken != "", c.NATSNKey != "", c.NATSCreds != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		add("at most one of --nats-user/--nats-password, --nats-token, --nats-nkey and --nats-creds")
	case c.NATSPassword != "" && c.NATSUser == "":
		add("--nats-password needs --nats-user")
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		add("--nats-tls-cert and --nats-tls-key go together")
	}
	if r == roleServe && natsURL == "" && (n > 0 || c.NATSTLSCA != "" || c.NATSTLSCert != "") {
		add("the --nats-* credential and TLS flags need --nats-url (the embedded NATS server takes none)")
	}
	switch {
	case c.NATSPingInterval < 0:
		add("--nats-ping-interval must not be negative")
	case c.NATSPingInterval > 0 && c.NATSPingInterval < 100*time.Millisecond:
		add("--nats-ping-interval %s: at least 100ms (0: nats.go's own settings)", c.NATSPingInterval)
	}
	if err := bus.ValidatePrefix(c.SubjectPrefix); err != nil || c.SubjectPrefix == "" {
		add("--subject-prefix %q: want one NATS subject token of letters, digits, '_' and '-', at most %d bytes", c.SubjectPrefix, bus.MaxPrefixLen)
	}
}
