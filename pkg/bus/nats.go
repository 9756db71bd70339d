package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrInvalidOptions wraps the validation errors of Connect and
// StartEmbedded.
var ErrInvalidOptions = errors.New("bus: invalid options")

// ConnectOptions configure Connect. The zero value is valid: every zero
// field means its documented default.
type ConnectOptions struct {
	// Name is the client name shown by NATS monitoring.
	// default: none (no name)
	Name string
	// Logger receives connection state changes.
	// default: slog.Default()
	Logger *slog.Logger
	// ConnectTimeout bounds the first connection. Negative is a
	// validation error.
	// default: 5s
	ConnectTimeout time.Duration
	// Auth holds the credentials and TLS files (see Auth; an invalid
	// combination is a validation error).
	// default: none (anonymous, TLS as the URL and server say)
	Auth Auth
	// InboxPrefix is the prefix of the reply subjects of the
	// connection's requests (Subjects.InboxPrefix); it must not contain
	// a wildcard nor end with '.'.
	// default: nats.go's _INBOX
	InboxPrefix string
	// PingInterval is how often the connection is checked: a PING every
	// interval, and the connection is dropped (then made again, to
	// another server of the list when there is one) once 2 PINGs went
	// unanswered or a write to the server stayed blocked for an interval.
	// A connection gone silent (a partition: no RST, no FIN) is so
	// noticed within 2 to 3 intervals, or one when something waits to be
	// written.
	// Negative: nats.go's pings (every 2 minutes), and a write blocked for
	// a minute drops the connection, which is then made again: a partition
	// takes minutes to notice, while publishes pile up behind the blocked
	// write. Below 100ms is a validation error.
	// default: DefaultPingInterval (5s)
	PingInterval time.Duration
}

// DefaultPingInterval is ConnectOptions.PingInterval's default: a silent
// NATS connection is dropped within 10 to 15 s, within 5 s when there is
// something to send, for a PING and a PONG of a few bytes every 5 s.
const DefaultPingInterval = 5 * time.Second

// Connect dials url, one NATS server URL or a comma-separated list of
// them (the nodes of a cluster), passed to nats.Connect as is: the first
// connection tries the servers in random order until one answers. After a
// loss it keeps reconnecting forever: it tries the servers of the list
// (and any the cluster advertises) in turn, and each time all have failed
// it waits 250ms plus a random jitter of up to 100ms (1s with TLS), so
// that the many processes that lost the same node do not all retry at
// the same instant. Requests during an outage fail fast with
// nats.ErrConnectionClosed or a timeout. A connection that goes silent
// without an error (a partition) is dropped as ConnectOptions.PingInterval
// says, then made again the same way.
func Connect(url string, opts *ConnectOptions) (*nats.Conn, error) {
	if opts == nil {
		opts = &ConnectOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := opts.ConnectTimeout
	if timeout < 0 {
		return nil, fmt.Errorf("%w: negative ConnectTimeout", ErrInvalidOptions)
	}
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ping := opts.PingInterval
	switch {
	case ping == 0:
		ping = DefaultPingInterval
	case ping > 0 && ping < 100*time.Millisecond:
		return nil, fmt.Errorf("%w: PingInterval %s is below 100ms", ErrInvalidOptions, ping)
	}
	if err := opts.Auth.validate(); err != nil {
		return nil, err
	}
	if p := opts.InboxPrefix; strings.ContainsAny(p, "*> \t") || strings.HasSuffix(p, ".") {
		return nil, fmt.Errorf("%w: inbox prefix %q", ErrInvalidOptions, p)
	}
	ao, err := opts.Auth.options()
	if err != nil {
		return nil, err
	}
	no := append(connOptions(opts.Name, log, timeout), ao...)
	writeTimeout := nats.GetDefaultOptions().FlusherTimeout
	if ping > 0 {
		no = append(no, nats.PingInterval(ping), nats.MaxPingsOutstanding(2), nats.FlusherTimeout(ping), nats.ReconnectOnFlusherError())
		writeTimeout = ping
	}
	// The dialer gets the host name (SkipHostLookup): net.Dialer spreads
	// the timeout over the addresses it resolves to, as nats.go's own
	// dialer does.
	no = append(no, nats.SkipHostLookup(), nats.SetCustomDialer(&batchDialer{dialer: net.Dialer{Timeout: timeout}, writeTimeout: writeTimeout}))
	if opts.InboxPrefix != "" {
		no = append(no, nats.CustomInboxPrefix(opts.InboxPrefix))
	}
	nc, err := nats.Connect(url, no...)
	if err != nil {
		if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // a *url.Error quotes the whole URL, credentials included
		}
		return nil, fmt.Errorf("bus: connecting to NATS at %s: %w", RedactURLs(url), err)
	}
	return nc, nil
}

// RedactURLs returns a comma-separated list of URLs with their user
// information (a user and password, or a token: nats://TOKEN@host)
// replaced by "redacted", for logs and errors. An entry that does not
// parse is replaced whole.
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := neturl.Parse(strings.TrimSpace(p))
		if err != nil {
			parts[i] = "(invalid URL)"
			continue
		}
		if u.User != nil {
			u.User = neturl.User("redacted")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

func connOptions(name string, log *slog.Logger, timeout time.Duration) []nats.Option {
	return []nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.ReconnectBufSize(8 << 20),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			subj := ""
			if s != nil {
				subj = s.Subject
			}
			log.Warn("nats async error", "subject", subj, "err", err)
		}),
	}
}

// Embedded is a NATS server running inside this process, for the
// all-in-one binary and tests.
type Embedded struct {
	srv *server.Server
	log *slog.Logger
}

// EmbeddedOptions configure StartEmbedded. The zero value is valid: every
// zero field means its documented default.
type EmbeddedOptions struct {
	// Listen, when non-empty ("127.0.0.1:4222", or "127.0.0.1:-1" for a free
	// port), also opens a TCP listener so other processes can connect. An
	// address without a port is a validation error.
	// default: none (in-process connections only)
	Listen string
	// Logger receives the logs of the connections made by Connect.
	// default: slog.Default()
	Logger *slog.Logger
}

// StartEmbedded starts an embedded NATS server and waits until it is ready.
func StartEmbedded(opts *EmbeddedOptions) (*Embedded, error) {
	if opts == nil {
		opts = &EmbeddedOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	sopts := &server.Options{
		ServerName:     "mcpfleet-embedded",
		NoLog:          true,
		NoSigs:         true,
		MaxPayload:     8 << 20,
		MaxControlLine: 16 << 10,
		DontListen:     opts.Listen == "",
	}
	if opts.Listen != "" {
		host, port, err := splitHostPort(opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: embedded listen address %q: %w", ErrInvalidOptions, opts.Listen, err)
		}
		sopts.Host, sopts.Port = host, port
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("bus: starting embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("bus: embedded NATS did not become ready within 10s")
	}
	return &Embedded{srv: srv, log: log}, nil
}

// Connect opens an in-process client connection to the embedded server.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	opts := append(connOptions(name, e.log, 5*time.Second), nats.InProcessServer(e.srv))
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connecting to embedded NATS: %w", err)
	}
	return nc, nil
}

// ClientURL is the TCP URL of the server ("" when it does not listen).
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the server; ctx bounds the wait.
func (e *Embedded) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func splitHostPort(addr string) (string, int, error) {
	var host string
	var port int
	i := len(addr) - 1
	for i >= 0 && addr[i] != ':' {
		i--
	}
	if i < 0 {
		return "", 0, errors.New("missing port")
	}
	host = addr[:i]
	if _, err := fmt.Sscanf(addr[i+1:], "%d", &port); err != nil {
		return "", 0, fmt.Errorf("bad port: %w", err)
	}
	if len(host) > 1 && host[0] == '[' {
		host = host[1 : len(host)-1]
	}
	return host, port, nil
}
