package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// ServerOptions configure a Server. The zero value is valid.
type ServerOptions struct {
	// Instructions are returned by initialize and server/discover.
	Instructions string
	// PageSize is the page length of list results; zero means 500.
	PageSize int
	// CacheTTL is the modern-era ttlMs of list, read and discover results;
	// zero means 0 ms (clients revalidate every time). Negative is invalid.
	CacheTTL time.Duration
	// CacheScope is "public" (the default when empty) or "private".
	CacheScope string
	// ResourceSubscriptions declares resources.subscribe (legacy
	// resources/subscribe and modern listen resourceSubscriptions). The
	// transport stores the subscriptions; SubscribeHook may veto them.
	ResourceSubscriptions bool
	// SubscribeHook, when set, is asked before a legacy subscribe or
	// unsubscribe is recorded; returning an error refuses it (a
	// *protocol.Error is sent as is, others as -32603).
	SubscribeHook func(ctx context.Context, req *Request, uri string, subscribe bool) error
	// RootsListChanged is called when a legacy client sends
	// notifications/roots/list_changed.
	RootsListChanged func(ctx context.Context, req *Request)
	// Logger receives handler panics and internal errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// StateKey seals the requestState of 2026-07-28 multi-round requests
	// (XChaCha20-Poly1305, StateKeySize bytes). Every worker of a cluster
	// must share it so a retry can land on any of them. Nil means a random
	// key for this process (fine for one worker).
	StateKey []byte
	// OldStateKeys still open states sealed before a key rotation (they
	// never seal).
	OldStateKeys [][]byte
	// StateTTL is how long a requestState stays valid; zero means 10
	// minutes.
	StateTTL time.Duration
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
	log    *slog.Logger
	events atomic.Pointer[eventsBox]

	mu  sync.Mutex               // serializes registry writes
	reg atomic.Pointer[registry] // immutable snapshot read by requests

	sealer  *sealer
	catalog atomic.Pointer[Catalog] // rebuilt on every registry change
}

type eventsBox struct{ e Events }

type tool struct {
	def        *protocol.Tool
	validator  *jsonschema.Validator
	handler    ToolHandler
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

// registry is an immutable snapshot; writers copy it.
type registry struct {
	tools       map[string]*tool
	toolOrder   []string // sorted names
	prompts     map[string]*prompt
	promptOrder []string
	resources   map[string]*resource
	resOrder    []string
	templates   []*template // sorted by uriTemplate
	completion  CompletionHandler
}

// NewServer returns a server identified by info. opts may be nil. It panics
// when opts.StateKey has the wrong length (a programming error).
func NewServer(info protocol.Implementation, opts *ServerOptions) *Server {
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = 500
	}
	if s.opts.CacheScope == "" {
		s.opts.CacheScope = protocol.CacheScopePublic
	}
	if s.opts.CacheTTL < 0 {
		s.opts.CacheTTL = 0
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.opts.StateTTL <= 0 {
		s.opts.StateTTL = 10 * time.Minute
	}
	key := s.opts.StateKey
	if key == nil {
		key = RandomStateKey()
	}
	sl, err := newSealer(append([][]byte{key}, s.opts.OldStateKeys...)...)
	if err != nil {
		panic(err)
	}
	s.sealer = sl
	r := &registry{tools: map[string]*tool{}, prompts: map[string]*prompt{}, resources: map[string]*resource{}}
	s.reg.Store(r)
	s.catalog.Store(s.buildCatalog(r))
	return s
}

// Info returns the server's implementation info.
func (s *Server) Info() protocol.Implementation { return s.info }

// Options returns the server's options (with defaults applied).
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

func (s *Server) update(kind string, f func(r *registry) error) error {
	s.mu.Lock()
	old := s.reg.Load()
	n := &registry{
		tools: clone(old.tools), toolOrder: old.toolOrder,
		prompts: clone(old.prompts), promptOrder: old.promptOrder,
		resources: clone(old.resources), resOrder: old.resOrder,
		templates: old.templates, completion: old.completion,
	}
	if err := f(n); err != nil {
		s.mu.Unlock()
		return err
	}
	n.toolOrder = sortedKeys(n.tools)
	n.promptOrder = sortedKeys(n.prompts)
	n.resOrder = sortedKeys(n.resources)
	s.reg.Store(n)
	s.catalog.Store(s.buildCatalog(n))
	s.mu.Unlock()
	if kind != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.ListChanged(ctx, kind); err != nil {
			s.log.Warn("mcp: announcing list change", "kind", kind, "err", err)
		}
	}
	return nil
}

func clone[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AddTool registers (or replaces) a tool with a raw handler. t.InputSchema
// nil means {"type":"object"}; it must be an object schema and is served
// verbatim. Arguments are validated against it before h runs.
func (s *Server) AddTool(t *protocol.Tool, h ToolHandler, opts ...ToolOption) error {
	if t == nil || t.Name == "" || h == nil {
		return errors.New("mcp: AddTool needs a named tool and a handler")
	}
	def := *t
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var root struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(def.InputSchema, &root); err != nil || root.Type != "object" {
		return fmt.Errorf("mcp: tool %q: inputSchema must be a JSON object schema with \"type\":\"object\"", t.Name)
	}
	v, err := jsonschema.Compile(def.InputSchema)
	if err != nil {
		return fmt.Errorf("mcp: tool %q: compiling inputSchema: %w", t.Name, err)
	}
	hs, err := headerArgs(def.InputSchema)
	if err != nil {
		return fmt.Errorf("mcp: tool %q: %w", t.Name, err)
	}
	return s.update("tools", func(r *registry) error {
		tl := &tool{def: &def, validator: v, handler: h, headers: hs}
		for _, o := range opts {
			o(tl)
		}
		switch tl.tasks {
		case TaskOptional:
			def.Execution = &protocol.ToolExecution{TaskSupport: "optional"}
		case TaskRequired:
			def.Execution = &protocol.ToolExecution{TaskSupport: "required"}
		}
		r.tools[def.Name] = tl
		return nil
	})
}

// RemoveTools removes tools by name; unknown names are ignored. It raises
// tools list_changed when something was removed.
func (s *Server) RemoveTools(names ...string) {
	removed := false
	_ = s.update("", func(r *registry) error {
		for _, n := range names {
			if _, ok := r.tools[n]; ok {
				delete(r.tools, n)
				removed = true
			}
		}
		return nil
	})
	if removed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.ListChanged(ctx, "tools")
	}
}

// AddPrompt registers (or replaces) a prompt.
func (s *Server) AddPrompt(p *protocol.Prompt, h PromptHandler) error {
	if p == nil || p.Name == "" || h == nil {
		return errors.New("mcp: AddPrompt needs a named prompt and a handler")
	}
	def := *p
	return s.update("prompts", func(r *registry) error {
		r.prompts[def.Name] = &prompt{def: &def, handler: h}
		return nil
	})
}

// RemovePrompts removes prompts by name.
func (s *Server) RemovePrompts(names ...string) {
	_ = s.update("prompts", func(r *registry) error {
		for _, n := range names {
			delete(r.prompts, n)
		}
		return nil
	})
}

// AddResource registers (or replaces) a resource with a fixed URI.
func (s *Server) AddResource(res *protocol.Resource, h ResourceHandler) error {
	if res == nil || res.URI == "" || h == nil {
		return errors.New("mcp: AddResource needs a resource with a uri and a handler")
	}
	def := *res
	return s.update("resources", func(r *registry) error {
		r.resources[def.URI] = &resource{def: &def, handler: h}
		return nil
	})
}

// AddResourceTemplate registers an RFC 6570 resource template; reads of a
// matching URI go to h with the template variables.
func (s *Server) AddResourceTemplate(t *protocol.ResourceTemplate, h ResourceHandler) error {
	if t == nil || t.URITemplate == "" || h == nil {
		return errors.New("mcp: AddResourceTemplate needs a uriTemplate and a handler")
	}
	tmpl, err := uritemplate.Parse(t.URITemplate)
	if err != nil {
		return fmt.Errorf("mcp: resource template %q: %w", t.URITemplate, err)
	}
	def := *t
	return s.update("resources", func(r *registry) error {
		ts := slices.DeleteFunc(slices.Clone(r.templates), func(x *template) bool { return x.def.URITemplate == def.URITemplate })
		ts = append(ts, &template{def: &def, tmpl: tmpl, handler: h})
		slices.SortFunc(ts, func(a, b *template) int { return strings.Compare(a.def.URITemplate, b.def.URITemplate) })
		r.templates = ts
		return nil
	})
}

// SetCompletionHandler installs the completion/complete handler.
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	_ = s.update("", func(r *registry) error {
		r.completion = h
		return nil
	})
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
