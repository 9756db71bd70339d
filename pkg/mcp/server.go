package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// ServerOptions configure a Server. The zero value is valid; see
// [ServerOptions.Validate] for what is not.
type ServerOptions struct {
	// Instructions are returned by initialize and server/discover.
	// default: none
	Instructions string
	// PageSize is the page length of list results. Negative is invalid.
	// default: 500
	PageSize int
	// CacheTTL is the modern-era ttlMs of list, read and discover results
	// (0 ms: clients revalidate every time); negative means off, the same
	// 0 ms.
	// default: 0 ms
	CacheTTL time.Duration
	// CacheScope is "public" or "private"; anything else is invalid.
	// default: "public"
	CacheScope string
	// ResourceSubscriptions declares resources.subscribe (legacy
	// resources/subscribe and modern listen resourceSubscriptions). The
	// transport stores the subscriptions; SubscribeHook may veto them.
	// default: false
	ResourceSubscriptions bool
	// SubscribeHook, when set, is asked before a legacy subscribe or
	// unsubscribe is recorded; returning an error refuses it (a
	// *protocol.Error is sent as is, others as -32603).
	// default: none (every subscription is recorded)
	SubscribeHook func(ctx context.Context, req *Request, uri string, subscribe bool) error
	// RootsListChanged is called when a legacy client sends
	// notifications/roots/list_changed.
	// default: none
	RootsListChanged func(ctx context.Context, req *Request)
	// Logger receives handler panics and internal errors; nil means
	// slog.Default() at the time of each message (so a program that sets
	// its default logger after building the server, as mcpfleet.Main
	// does, gets the server's messages in it).
	// default: slog.Default()
	Logger *slog.Logger
	// StateKey seals the requestState of 2026-07-28 multi-round requests
	// (XChaCha20-Poly1305, StateKeySize bytes; another size is invalid).
	// Every worker of a cluster must share it so a retry can land on any
	// of them. Nil means a random key for this process (fine for one
	// worker).
	// default: random (for this process)
	StateKey []byte
	// OldStateKeys still open states sealed before a key rotation (they
	// never seal); each is StateKeySize bytes.
	// default: none
	OldStateKeys [][]byte
	// StateTTL is how long a requestState stays valid. Negative is
	// invalid.
	// default: 10 minutes
	StateTTL time.Duration
}

// ErrInvalidOptions is wrapped by the errors about a Server's options:
// what [ServerOptions.Validate] reports (and [NewServer] panics with), and
// a requestState key of the wrong size given to [Server.SetStateKeys].
var ErrInvalidOptions = errors.New("mcp: invalid options")

// optionsError is an options error whose message predates
// ErrInvalidOptions and is kept as it was; it wraps ErrInvalidOptions.
type optionsError struct{ msg string }

func (e *optionsError) Error() string { return e.msg }
func (e *optionsError) Unwrap() error { return ErrInvalidOptions }

// Validate reports what is invalid in o, wrapping ErrInvalidOptions: a
// negative PageSize or StateTTL, a CacheScope other than "public" and
// "private", a StateKey or OldStateKeys entry of a size other than
// StateKeySize. Nil o is valid.
func (o *ServerOptions) Validate() error {
	if o == nil {
		return nil
	}
	var errs []error
	if o.PageSize < 0 {
		errs = append(errs, fmt.Errorf("%w: PageSize %d is negative", ErrInvalidOptions, o.PageSize))
	}
	switch o.CacheScope {
	case "", protocol.CacheScopePublic, protocol.CacheScopePrivate:
	default:
		errs = append(errs, fmt.Errorf("%w: CacheScope %q: want %q or %q", ErrInvalidOptions, o.CacheScope, protocol.CacheScopePublic, protocol.CacheScopePrivate))
	}
	if o.StateTTL < 0 {
		errs = append(errs, fmt.Errorf("%w: StateTTL %v is negative", ErrInvalidOptions, o.StateTTL))
	}
	if o.StateKey != nil || o.OldStateKeys != nil {
		key := o.StateKey
		if key == nil {
			key = make([]byte, StateKeySize) // the random key NewServer makes
		}
		if _, err := newSealer(key, o.OldStateKeys...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ToolHandler handles tools/call for a tool registered with [Server.AddTool].
// args are the call's arguments, already validated against the input
// schema ("{}" when the client sent none). A returned *protocol.Error
// becomes a JSON-RPC error; any other error becomes a tool-error result
// (isError:true) whose text is the error message.
type ToolHandler func(ctx context.Context, req *Request, args json.RawMessage) (*protocol.CallToolResult, error)

// PromptHandler handles prompts/get. Required arguments are checked before
// it is called.
type PromptHandler func(ctx context.Context, req *Request, args map[string]string) (*protocol.GetPromptResult, error)

// ResourceHandler reads a resource. vars holds the template variables for a
// resource template (nil for a plain resource). Return ErrResourceNotFound
// when the resource does not exist.
type ResourceHandler func(ctx context.Context, req *Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error)

// CompletionHandler handles completion/complete.
type CompletionHandler func(ctx context.Context, req *Request, p *protocol.CompleteParams) (*protocol.Completion, error)

// ErrResourceNotFound is returned by a ResourceHandler for a missing
// resource; the server answers with the era's not-found error.
var ErrResourceNotFound = errors.New("mcp: resource not found")

// Server is an MCP server definition: what it offers and how requests are
// dispatched to handlers. Safe for concurrent use.
type Server struct {
	info   protocol.Implementation
	opts   ServerOptions
	events atomic.Pointer[eventsBox]

	mu  sync.Mutex               // serializes registry writes
	reg atomic.Pointer[registry] // immutable snapshot read by requests

	sealer  atomic.Pointer[sealer]  // swapped by SetStateKeys
	catalog atomic.Pointer[Catalog] // rebuilt on every registry change
}

type eventsBox struct{ e Events }

type tool struct {
	def        *protocol.Tool
	validator  *jsonschema.Validator
	handler    ToolHandler
	run        ToolHandler // handler inside the registry's tool middleware
	headers    []headerArg // x-mcp-header arguments
	tasks      TaskSupport
	manualTask bool // the handler calls Request.BeginTask itself
}

type prompt struct {
	def     *protocol.Prompt
	handler PromptHandler
}

type resource struct {
	def     *protocol.Resource
	handler ResourceHandler
}

type template struct {
	def     *protocol.ResourceTemplate
	tmpl    *uritemplate.Template
	handler ResourceHandler
}

// NewServer returns a server identified by info. opts may be nil. It panics
// when opts are invalid, with the error of [ServerOptions.Validate]
// (wrapping ErrInvalidOptions): a programming error, such as a StateKey of
// the wrong length.
func NewServer(info protocol.Implementation, opts *ServerOptions) *Server {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.PageSize == 0 {
		s.opts.PageSize = 500
	}
	if s.opts.CacheScope == "" {
		s.opts.CacheScope = protocol.CacheScopePublic
	}
	if s.opts.CacheTTL < 0 {
		s.opts.CacheTTL = 0
	}
	if s.opts.StateTTL == 0 {
		s.opts.StateTTL = 10 * time.Minute
	}
	key, configured := s.opts.StateKey, s.opts.StateKey != nil
	if !configured {
		key = RandomStateKey()
	}
	sl, err := newSealer(key, s.opts.OldStateKeys...)
	if err != nil {
		panic(err)
	}
	sl.configured = configured
	s.sealer.Store(sl)
	s.publish(&registry{tools: map[string]*tool{}, prompts: map[string]*prompt{}, resources: map[string]*resource{}})
	return s
}

// Info returns the server's implementation info.
func (s *Server) Info() protocol.Implementation { return s.info }

// Options returns the server's options (with defaults applied), as given
// to [NewServer]: keys installed later by [Server.SetStateKeys] are not in
// them.
func (s *Server) Options() ServerOptions { return s.opts }

// SetEvents installs the sink for change events (nil removes it). The
// transport calls it once when it starts serving.
func (s *Server) SetEvents(e Events) {
	if e == nil {
		s.events.Store(nil)
		return
	}
	s.events.Store(&eventsBox{e})
}

// ListChanged announces that a list changed (kind "tools", "prompts" or
// "resources") through the Events sink, if any.
func (s *Server) ListChanged(ctx context.Context, kind string) error {
	if b := s.events.Load(); b != nil {
		return b.e.ListChanged(ctx, kind)
	}
	return nil
}

// ResourceUpdated announces that the resource at uri changed.
func (s *Server) ResourceUpdated(ctx context.Context, uri string) error {
	if b := s.events.Load(); b != nil {
		return b.e.ResourceUpdated(ctx, uri)
	}
	return nil
}

// Capabilities returns the capabilities the server declares to a client of
// the given era over a transport with features f, derived from what is
// registered and from the options. listChanged and subscribe are declared
// only where the transport can deliver them: over listen streams
// (modern) or the session stream (legacy).
func (s *Server) Capabilities(era protocol.Era, f Features) protocol.ServerCapabilities {
	return s.Catalog().Capabilities(era, f)
}

// Catalog returns a snapshot of what the server offers (see Catalog).
func (s *Server) Catalog() *Catalog { return s.catalog.Load() }

func (s *Server) buildCatalog(r *registry) *Catalog {
	c := &Catalog{
		Info: s.info, Instructions: s.opts.Instructions,
		Completions: r.completion != nil, Subscriptions: s.opts.ResourceSubscriptions,
		PageSize: s.opts.PageSize, CacheTTLMs: s.opts.CacheTTL.Milliseconds(), CacheScope: s.opts.CacheScope,
	}
	for _, n := range r.toolOrder {
		c.Tools = append(c.Tools, r.tools[n].def)
	}
	for _, n := range r.promptOrder {
		c.Prompts = append(c.Prompts, r.prompts[n].def)
	}
	for _, n := range r.resOrder {
		c.Resources = append(c.Resources, r.resources[n].def)
	}
	for _, t := range r.templates {
		c.Templates = append(c.Templates, t.def)
	}
	return c
}

// logger returns the server's logger: ServerOptions.Logger, or else the
// current slog.Default().
func (s *Server) logger() *slog.Logger {
	if s.opts.Logger != nil {
		return s.opts.Logger
	}
	return slog.Default()
}
