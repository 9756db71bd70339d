package bus

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// Auth is how a connection proves who it is to NATS, and how it checks
// the server: at most one of User (with Password), Token, NKeyFile and
// CredsFile, plus TLS. The zero value is an anonymous connection without
// TLS unless the URL says otherwise (nats://user:password@host or
// nats://token@host, tls://host). Credentials in the URL and in Auth are
// a validation error together only when both set a user or a token.
type Auth struct {
	// User and Password log in with a user name and password.
	// default: none
	User, Password string
	// Token logs in with an authorization token.
	// default: none
	Token string
	// NKeyFile is a file holding an NKey seed (SU...): the connection
	// signs the server's nonce with it.
	// default: none
	NKeyFile string
	// CredsFile is a .creds file (a user JWT and its NKey seed), for a
	// server in operator (decentralized JWT) mode.
	// default: none
	CredsFile string
	// TLSCA is a PEM file of the CAs trusted to sign the server's
	// certificate; setting it (or TLSCert) requires TLS.
	// default: the system roots, and TLS only with a tls:// URL or when
	// the server demands it
	TLSCA string
	// TLSCert and TLSKey are the PEM files of the client certificate and
	// its key, for a server that verifies clients (tls { verify: true });
	// one without the other is a validation error.
	// default: none
	TLSCert, TLSKey string
}

// validate checks a's combinations; the files are read by Connect.
func (a *Auth) validate() error {
	n := 0
	for _, set := range []bool{a.User != "" || a.Password != "", a.Token != "", a.NKeyFile != "", a.CredsFile != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%w: at most one of a user and password, a token, an NKey seed file and a credentials file", ErrInvalidOptions)
	case a.Password != "" && a.User == "":
		return fmt.Errorf("%w: a NATS password needs a user", ErrInvalidOptions)
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return fmt.Errorf("%w: a NATS client certificate and its key go together", ErrInvalidOptions)
	}
	return nil
}

// options returns the nats.go options of a (a validated Auth).
func (a *Auth) options() ([]nats.Option, error) {
	var o []nats.Option
	switch {
	case a.User != "":
		o = append(o, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		o = append(o, nats.Token(a.Token))
	case a.NKeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeyFile)
		if err != nil {
			// nats.go's error names the file, never the seed.
			return nil, fmt.Errorf("bus: NATS NKey seed file: %w", err)
		}
		o = append(o, opt)
	case a.CredsFile != "":
		o = append(o, nats.UserCredentials(a.CredsFile))
	}
	if a.TLSCA != "" {
		o = append(o, nats.RootCAs(a.TLSCA))
	}
	if a.TLSCert != "" {
		o = append(o, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	return o, nil
}

// MaxPrefixLen bounds Subjects.Prefix.
const MaxPrefixLen = 64

// ValidatePrefix checks a subject prefix: empty (DefaultPrefix), or one
// NATS subject token of letters, digits, '_' and '-' (no '.', no
// wildcard, no space), at most MaxPrefixLen bytes. Errors wrap
// ErrInvalidOptions.
func ValidatePrefix(p string) error {
	if len(p) > MaxPrefixLen {
		return fmt.Errorf("%w: subject prefix longer than %d bytes", ErrInvalidOptions, MaxPrefixLen)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: subject prefix %q: want one token of letters, digits, '_' and '-'", ErrInvalidOptions, p)
		}
	}
	return nil
}

// Validate checks s.Prefix (see ValidatePrefix).
func (s Subjects) Validate() error { return ValidatePrefix(s.Prefix) }

// InboxPrefix is the prefix of the reply subjects of role's requests
// (role "fe" for frontends, "w" for workers): _INBOX.<prefix>.<role>.
// With one per role, NATS permissions let each role read only its own
// replies (deploy/nats-auth.conf).
func (s Subjects) InboxPrefix(role string) string { return "_INBOX." + s.p() + "." + Token(role) }
