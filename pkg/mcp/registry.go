package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/jsonschema"
	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

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

	middleware     []Middleware     // first is outermost
	toolMiddleware []ToolMiddleware // first is outermost; already applied to every tool's run
	handle         MethodHandler    // serve of this snapshot wrapped in middleware
}

// update applies f to a copy of the registry and publishes the copy. f
// returns the list kind to announce ("tools", "prompts", "resources"), or
// "" when no list changed; an error leaves the registry as it was.
func (s *Server) update(f func(r *registry) (kind string, err error)) error {
	s.mu.Lock()
	old := s.reg.Load()
	n := &registry{
		tools: maps.Clone(old.tools), prompts: maps.Clone(old.prompts), resources: maps.Clone(old.resources),
		templates: old.templates, completion: old.completion,
		middleware: old.middleware, toolMiddleware: old.toolMiddleware,
	}
	kind, err := f(n)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.publish(n)
	s.mu.Unlock()
	if kind != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.ListChanged(ctx, kind); err != nil {
			s.logger().Warn("mcp: announcing list change", "kind", kind, "err", err)
		}
	}
	return nil
}

// publish completes n (orders, middleware chain) and makes it, and its
// catalog, the ones requests read. Called with s.mu held (or before s is
// shared).
func (s *Server) publish(n *registry) {
	n.toolOrder = slices.Sorted(maps.Keys(n.tools))
	n.promptOrder = slices.Sorted(maps.Keys(n.prompts))
	n.resOrder = slices.Sorted(maps.Keys(n.resources))
	n.handle = wrap(func(ctx context.Context, req *Request, params json.RawMessage) (protocol.Result, error) {
		return s.serve(ctx, req, n, params)
	}, n.middleware)
	s.reg.Store(n)
	s.catalog.Store(s.buildCatalog(n))
}

// AddTool registers (or replaces) a tool with a raw handler. t.InputSchema
// nil means {"type":"object"}; it must be an object schema and is served
// verbatim. Arguments are validated against it before h runs. It raises
// tools list_changed.
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
	return s.update(func(r *registry) (string, error) {
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
		tl.run = wrap(h, r.toolMiddleware)
		r.tools[def.Name] = tl
		return "tools", nil
	})
}

// RemoveTools removes tools by name; unknown names are ignored. It raises
// tools list_changed when something was removed.
func (s *Server) RemoveTools(names ...string) {
	_ = s.update(func(r *registry) (string, error) { return removeKeys(r.tools, names, "tools"), nil })
}

// AddPrompt registers (or replaces) a prompt. It raises prompts
// list_changed.
func (s *Server) AddPrompt(p *protocol.Prompt, h PromptHandler) error {
	if p == nil || p.Name == "" || h == nil {
		return errors.New("mcp: AddPrompt needs a named prompt and a handler")
	}
	def := *p
	return s.update(func(r *registry) (string, error) {
		r.prompts[def.Name] = &prompt{def: &def, handler: h}
		return "prompts", nil
	})
}

// RemovePrompts removes prompts by name; unknown names are ignored. It
// raises prompts list_changed when something was removed.
func (s *Server) RemovePrompts(names ...string) {
	_ = s.update(func(r *registry) (string, error) { return removeKeys(r.prompts, names, "prompts"), nil })
}

// AddResource registers (or replaces) a resource with a fixed URI. It
// raises resources list_changed.
func (s *Server) AddResource(res *protocol.Resource, h ResourceHandler) error {
	if res == nil || res.URI == "" || h == nil {
		return errors.New("mcp: AddResource needs a resource with a uri and a handler")
	}
	def := *res
	return s.update(func(r *registry) (string, error) {
		r.resources[def.URI] = &resource{def: &def, handler: h}
		return "resources", nil
	})
}

// RemoveResources removes resources by URI; unknown URIs are ignored. It
// raises resources list_changed when something was removed.
func (s *Server) RemoveResources(uris ...string) {
	_ = s.update(func(r *registry) (string, error) { return removeKeys(r.resources, uris, "resources"), nil })
}

// AddResourceTemplate registers (or replaces) an RFC 6570 resource
// template; reads of a matching URI go to h with the template variables.
// It raises resources list_changed.
func (s *Server) AddResourceTemplate(t *protocol.ResourceTemplate, h ResourceHandler) error {
	if t == nil || t.URITemplate == "" || h == nil {
		return errors.New("mcp: AddResourceTemplate needs a uriTemplate and a handler")
	}
	tmpl, err := uritemplate.Parse(t.URITemplate)
	if err != nil {
		return fmt.Errorf("mcp: resource template %q: %w", t.URITemplate, err)
	}
	def := *t
	return s.update(func(r *registry) (string, error) {
		ts := slices.DeleteFunc(slices.Clone(r.templates), func(x *template) bool { return x.def.URITemplate == def.URITemplate })
		ts = append(ts, &template{def: &def, tmpl: tmpl, handler: h})
		slices.SortFunc(ts, func(a, b *template) int { return strings.Compare(a.def.URITemplate, b.def.URITemplate) })
		r.templates = ts
		return "resources", nil
	})
}

// RemoveResourceTemplates removes resource templates by their URI template
// (as registered); unknown ones are ignored. It raises resources
// list_changed when something was removed.
func (s *Server) RemoveResourceTemplates(uriTemplates ...string) {
	_ = s.update(func(r *registry) (string, error) {
		ts := slices.DeleteFunc(slices.Clone(r.templates), func(x *template) bool { return slices.Contains(uriTemplates, x.def.URITemplate) })
		if len(ts) == len(r.templates) {
			return "", nil
		}
		r.templates = ts
		return "resources", nil
	})
}

// removeKeys deletes keys from m and returns kind when one was there, ""
// otherwise.
func removeKeys[V any](m map[string]V, keys []string, kind string) string {
	removed := ""
	for _, k := range keys {
		if _, ok := m[k]; ok {
			delete(m, k)
			removed = kind
		}
	}
	return removed
}

// SetCompletionHandler installs the completion/complete handler (nil
// removes it).
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	_ = s.update(func(r *registry) (string, error) {
		r.completion = h
		return "", nil
	})
}
