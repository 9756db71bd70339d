package mcpfleettest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// DefaultMaxInputRounds is how many input_required results one
// 2026-07-28 call answers when ClientOptions.MaxInputRounds is zero.
const DefaultMaxInputRounds = 10

// Eras returns both protocol eras, legacy first: the rows of a
// table-driven test that runs in each.
func Eras() []protocol.Era { return []protocol.Era{protocol.EraLegacy, protocol.EraModern} }

// ClientOptions configure a [Client]. The zero value is a legacy client
// that declares no capabilities.
type ClientOptions struct {
	// Era is the protocol era the client speaks. Zero means
	// protocol.EraLegacy (2025-11-25: initialize, a session, server-to-
	// client requests on the POST's stream); protocol.EraModern is
	// 2026-07-28 (stateless, _meta on every request, multi-round
	// requests). Any other value is an error.
	Era protocol.Era
	// ProtocolVersion is the version offered (legacy) or sent (modern);
	// empty means the era's latest. It must belong to the era.
	ProtocolVersion string
	// ClientInfo identifies the client; nil means
	// {Name: "mcpfleettest", Version: "1.0.0"}.
	ClientInfo *protocol.Implementation
	// Capabilities is what the client declares. Nil derives them from
	// the handlers below: elicitation (form mode) when Elicit is set,
	// sampling when Sample is, roots when Roots is not nil. Set it to
	// declare something else (URL-mode elicitation, sampling.tools, none
	// at all while a handler is set, …).
	Capabilities *protocol.ClientCapabilities
	// Elicit answers elicitation/create, Sample sampling/createMessage
	// and Roots roots/list, in both eras: a legacy server-to-client
	// request gets the answer in a POST of the JSON-RPC response (an
	// error returned becomes a JSON-RPC error response: a *protocol.Error
	// as is, others as -32603); a modern input_required result gets it in
	// the retry's inputResponses (an error returned ends the call with
	// that error). They are called on the goroutine of the call. A
	// request the client has no handler for is answered with -32601
	// (legacy) or ends the call with an error (modern).
	Elicit func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error)
	Sample func(ctx context.Context, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error)
	Roots  []*protocol.Root
	// OnProgress, when set, makes every request carry a progressToken and
	// receives its notifications/progress. OnLog receives
	// notifications/message; LogLevel is the threshold asked for
	// (legacy: logging/setLevel at connect; modern: every request's
	// _meta), empty meaning none. OnNotification receives any other
	// notification on a request's stream. They are called on the
	// goroutine of the call, in order, before the call returns.
	OnProgress     func(p *protocol.ProgressParams)
	OnLog          func(p *protocol.LoggingMessageParams)
	LogLevel       protocol.LoggingLevel
	OnNotification func(n Notification)
	// MaxInputRounds is how many input_required results one modern call
	// answers (zero: DefaultMaxInputRounds); the next one is an error.
	MaxInputRounds int
	// Header is added to every HTTP request (e.g. Authorization).
	Header http.Header
	// HTTPClient sends the requests; nil means a client of its own,
	// whose idle connections Close closes. Its Timeout, if any, also
	// bounds streams.
	HTTPClient *http.Client
}

// Notification is a JSON-RPC notification from the server.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Client is an MCP client of one endpoint in one era, for tests. Its
// methods take a context, return errors (never fail the test) and are safe
// for concurrent use. A JSON-RPC error response comes back as a
// *protocol.Error; an HTTP status other than 2xx as a *StatusError, which
// wraps the body's JSON-RPC error when there is one, so errors.As(err,
// &protoErr) finds it either way.
type Client struct {
	url     string
	opts    ClientOptions
	era     protocol.Era
	version string
	caps    protocol.ClientCapabilities
	info    protocol.Implementation
	hc      *http.Client
	ownHC   bool
	prefix  string // of listen subscription ids
	nextID  atomic.Int64

	session    string // legacy
	serverCaps protocol.ServerCapabilities
	serverInfo protocol.Implementation

	life   context.Context // ends at Close: calls and streams stop
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[*Stream]struct{} // open Listen streams
	getOpen bool                 // a legacy Listen holds the session's GET stream
	tools   map[string]*protocol.Tool
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// ErrClosed is returned by the methods of a closed Client.
var ErrClosed = errors.New("mcpfleettest: client closed")

// Dial returns a client of the MCP endpoint at url (any server: a
// [Server], a cluster behind a proxy, …), connected in the era opts ask
// for: a legacy client has an initialized session, a modern one has
// discovered the server. It fails the test when it cannot connect; the
// client is closed at tb.Cleanup.
func Dial(tb testing.TB, url string, opts *ClientOptions) *Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, url, opts)
	if err != nil {
		tb.Fatalf("mcpfleettest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			tb.Logf("mcpfleettest: closing the client: %v", err)
		}
	})
	return c
}

// NewClient is Dial without a testing.TB: the caller must Close the
// client. ctx bounds the connection (the handshake or discovery).
func NewClient(ctx context.Context, endpoint string, opts *ClientOptions) (*Client, error) {
	c := &Client{url: endpoint, streams: map[*Stream]struct{}{}, tools: map[string]*protocol.Tool{}}
	if opts != nil {
		c.opts = *opts
	}
	if err := c.setup(); err != nil {
		return nil, fmt.Errorf("mcpfleettest: %w", err)
	}
	c.life, c.cancel = context.WithCancel(context.Background())
	var err error
	if c.era == protocol.EraLegacy {
		err = c.initialize(ctx)
	} else {
		err = c.discover(ctx)
	}
	if err != nil {
		c.cancel()
		c.closeIdle()
		return nil, fmt.Errorf("%w (connecting to %s, %s era)", err, endpoint, c.era)
	}
	return c, nil
}

// setup validates the options and fills in the defaults.
func (c *Client) setup() error {
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q is not an http(s) URL", c.url)
	}
	o := &c.opts
	c.era = o.Era
	if c.era == 0 {
		c.era = protocol.EraLegacy
	}
	switch c.era {
	case protocol.EraLegacy:
		c.version = protocol.LatestLegacyVersion
		if o.ProtocolVersion != "" && !protocol.IsLegacyVersion(o.ProtocolVersion) {
			return fmt.Errorf("protocol version %q is not a legacy version (%v)", o.ProtocolVersion, protocol.SupportedVersions())
		}
	case protocol.EraModern:
		c.version = protocol.LatestVersion
		if o.ProtocolVersion != "" && !protocol.IsModernVersion(o.ProtocolVersion) {
			return fmt.Errorf("protocol version %q is not a 2026-07-28-era version (%v)", o.ProtocolVersion, protocol.ModernVersions())
		}
	default:
		return fmt.Errorf("unknown era %d: use protocol.EraLegacy or protocol.EraModern", o.Era)
	}
	if o.ProtocolVersion != "" {
		c.version = o.ProtocolVersion
	}
	if o.LogLevel != "" && !o.LogLevel.Valid() {
		return fmt.Errorf("unknown log level %q", o.LogLevel)
	}
	if o.MaxInputRounds < 0 {
		return errors.New("MaxInputRounds is negative")
	}
	if o.MaxInputRounds == 0 {
		o.MaxInputRounds = DefaultMaxInputRounds
	}
	c.info = protocol.Implementation{Name: "mcpfleettest", Version: "1.0.0"}
	if o.ClientInfo != nil {
		c.info = *o.ClientInfo
	}
	switch {
	case o.Capabilities != nil:
		c.caps = *o.Capabilities
	default:
		if o.Elicit != nil {
			c.caps.Elicitation = &protocol.ElicitationCapability{}
		}
		if o.Sample != nil {
			c.caps.Sampling = &protocol.SamplingCapability{}
		}
		if o.Roots != nil {
			c.caps.Roots = &protocol.RootsCapability{}
		}
	}
	c.hc = o.HTTPClient
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		c.ownHC = true
	}
	c.prefix = randomToken()
	return nil
}

// initialize runs the legacy handshake: initialize, then
// notifications/initialized, then logging/setLevel when asked.
func (c *Client) initialize(ctx context.Context) error {
	params := &protocol.InitializeParams{ProtocolVersion: c.version, Capabilities: &c.caps, ClientInfo: &c.info}
	var res protocol.InitializeResult
	hdr, err := c.exchange(ctx, protocol.MethodInitialize, params, &res, nil)
	if err != nil {
		return err
	}
	c.session = hdr.Get("Mcp-Session-Id")
	if c.session == "" {
		return errors.New("the initialize answer has no Mcp-Session-Id")
	}
	if !protocol.IsLegacyVersion(res.ProtocolVersion) {
		c.deleteSession(ctx)
		return fmt.Errorf("the server negotiated version %q, which is not a legacy version", res.ProtocolVersion)
	}
	c.version, c.serverCaps, c.serverInfo = res.ProtocolVersion, res.Capabilities, res.ServerInfo
	if err := c.Notify(ctx, protocol.NotificationInitialized, nil); err != nil {
		c.deleteSession(ctx)
		return err
	}
	if c.opts.LogLevel != "" {
		if err := c.Call(ctx, protocol.MethodLoggingSetLevel, &protocol.SetLevelParams{Level: c.opts.LogLevel}, nil); err != nil {
			c.deleteSession(ctx)
			return err
		}
	}
	return nil
}

// discover asks a modern server for its capabilities (server/discover).
func (c *Client) discover(ctx context.Context) error {
	var res protocol.DiscoverResult
	if err := c.Call(ctx, protocol.MethodServerDiscover, nil, &res); err != nil {
		return err
	}
	c.serverCaps = res.Capabilities
	if m, ok := res.Meta[protocol.MetaServerInfo]; ok {
		b, _ := json.Marshal(m)
		_ = json.Unmarshal(b, &c.serverInfo)
	}
	return nil
}

// Era returns the client's protocol era.
func (c *Client) Era() protocol.Era { return c.era }

// ProtocolVersion returns the version in use (legacy: the negotiated one).
func (c *Client) ProtocolVersion() string { return c.version }

// SessionID returns the legacy session id ("" on modern).
func (c *Client) SessionID() string { return c.session }

// Capabilities returns what the client declares.
func (c *Client) Capabilities() protocol.ClientCapabilities { return c.caps }

// ServerCapabilities returns what the server declared (initialize or
// server/discover).
func (c *Client) ServerCapabilities() protocol.ServerCapabilities { return c.serverCaps }

// ServerInfo returns the server's implementation info.
func (c *Client) ServerInfo() protocol.Implementation { return c.serverInfo }

// Close ends the client: open streams close, calls in flight stop, and a
// legacy session is deleted (DELETE; a session the server no longer knows
// is not an error). ctx bounds the DELETE. It is idempotent and returns
// the first call's error.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		streams := make([]*Stream, 0, len(c.streams))
		for s := range c.streams {
			streams = append(streams, s)
		}
		c.mu.Unlock()
		for _, s := range streams {
			s.Close()
		}
		c.cancel()
		if c.session != "" {
			c.closeErr = c.deleteSession(ctx)
		}
		c.closeIdle()
	})
	return c.closeErr
}

func (c *Client) closeIdle() {
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
}

// deleteSession ends the legacy session on the server.
func (c *Client) deleteSession(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	c.setHeaders(req, "")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("DELETE: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return statusError("DELETE", resp)
}

// enter returns the context of a call: ctx, also ended by Close.
func (c *Client) enter(ctx context.Context) (context.Context, func(), error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() { stop(); cancel() }, nil
}
