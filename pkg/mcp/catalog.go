package mcp

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/uritemplate"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Catalog is a snapshot of what a server offers: enough to answer
// initialize, server/discover and the list methods without running a
// handler. A worker announces the catalog it serves; a frontend answers
// those methods from the union of its live workers' catalogs and routes
// each request only to workers that serve it. Treat a Catalog as
// immutable once built.
type Catalog struct {
	Info          protocol.Implementation      `json:"info"`
	Instructions  string                       `json:"instructions,omitempty"`
	Tools         []*protocol.Tool             `json:"tools,omitempty"`     // sorted by name
	Prompts       []*protocol.Prompt           `json:"prompts,omitempty"`   // sorted by name
	Resources     []*protocol.Resource         `json:"resources,omitempty"` // sorted by URI
	Templates     []*protocol.ResourceTemplate `json:"templates,omitempty"` // sorted by URI template
	Completions   bool                         `json:"completions,omitempty"`
	Subscriptions bool                         `json:"subscriptions,omitempty"`
	PageSize      int                          `json:"pageSize,omitempty"`
	CacheTTLMs    int64                        `json:"cacheTtlMs,omitempty"`
	CacheScope    string                       `json:"cacheScope,omitempty"`

	once   sync.Once
	index  *catalogIndex
	labels labelCache // ResourceLabel's answers for template URIs
}

type catalogIndex struct {
	toolNames, promptNames, resourceURIs, templateURIs []string
	templates                                          []*uritemplate.Template
}

func (c *Catalog) idx() *catalogIndex {
	c.once.Do(func() {
		x := &catalogIndex{}
		for _, t := range c.Tools {
			x.toolNames = append(x.toolNames, t.Name)
		}
		for _, p := range c.Prompts {
			x.promptNames = append(x.promptNames, p.Name)
		}
		for _, r := range c.Resources {
			x.resourceURIs = append(x.resourceURIs, r.URI)
		}
		for _, t := range c.Templates {
			x.templateURIs = append(x.templateURIs, t.URITemplate)
			tmpl, _ := uritemplate.Parse(t.URITemplate)
			x.templates = append(x.templates, tmpl)
		}
		c.index = x
	})
	return c.index
}

// HasTool, HasPrompt report whether the catalog offers the name.
func (c *Catalog) HasTool(name string) bool {
	_, ok := slices.BinarySearch(c.idx().toolNames, name)
	return ok
}

// HasPrompt reports whether the catalog offers the prompt.
func (c *Catalog) HasPrompt(name string) bool {
	_, ok := slices.BinarySearch(c.idx().promptNames, name)
	return ok
}

// HasResource reports whether uri is one of the catalog's resources or
// matches one of its templates (or is one of its templates, for
// completion references).
func (c *Catalog) HasResource(uri string) bool {
	x := c.idx()
	if _, ok := slices.BinarySearch(x.resourceURIs, uri); ok {
		return true
	}
	if _, ok := slices.BinarySearch(x.templateURIs, uri); ok {
		return true
	}
	for _, t := range x.templates {
		if t == nil {
			continue
		}
		if _, ok := t.Match(uri); ok {
			return true
		}
	}
	return false
}

// Capabilities derives the capabilities to declare to a client of the given
// era over a transport with features f (see Server.Capabilities).
func (c *Catalog) Capabilities(era protocol.Era, f Features) protocol.ServerCapabilities {
	push := f.SessionStream
	if era == protocol.EraModern {
		push = f.Listen
	}
	caps := protocol.ServerCapabilities{
		Logging: &struct{}{},
		Tools:   &protocol.ToolsCapability{ListChanged: push},
	}
	if len(c.Prompts) > 0 {
		caps.Prompts = &protocol.PromptsCapability{ListChanged: push}
	}
	if len(c.Resources) > 0 || len(c.Templates) > 0 || c.Subscriptions {
		caps.Resources = &protocol.ResourcesCapability{ListChanged: push, Subscribe: push && c.Subscriptions}
	}
	if c.Completions || len(c.Prompts) > 0 || len(c.Templates) > 0 {
		caps.Completions = &struct{}{}
	}
	if f.Tasks {
		if era == protocol.EraModern {
			caps.Extensions = map[string]json.RawMessage{protocol.ExtensionTasks: json.RawMessage(`{}`)}
		} else {
			caps.Tasks = protocol.LegacyTasksCapability
		}
	}
	return caps
}

// CatalogFilter selects part of a catalog with path.Match patterns; a nil
// list keeps everything of that kind, an empty non-nil list nothing.
type CatalogFilter struct {
	Tools, Prompts, Resources []string
}

func matchAny(patterns []string, name string) bool {
	if patterns == nil {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Filter returns the part of c that f selects (resources and templates by
// URI and URI template).
func (c *Catalog) Filter(f *CatalogFilter) *Catalog {
	if f == nil {
		return c
	}
	out := c.shallow()
	out.Tools = slices.DeleteFunc(slices.Clone(c.Tools), func(t *protocol.Tool) bool { return !matchAny(f.Tools, t.Name) })
	out.Prompts = slices.DeleteFunc(slices.Clone(c.Prompts), func(p *protocol.Prompt) bool { return !matchAny(f.Prompts, p.Name) })
	out.Resources = slices.DeleteFunc(slices.Clone(c.Resources), func(r *protocol.Resource) bool { return !matchAny(f.Resources, r.URI) })
	out.Templates = slices.DeleteFunc(slices.Clone(c.Templates), func(t *protocol.ResourceTemplate) bool { return !matchAny(f.Resources, t.URITemplate) })
	return out
}

func (c *Catalog) shallow() *Catalog {
	return &Catalog{
		Info: c.Info, Instructions: c.Instructions, Tools: c.Tools, Prompts: c.Prompts,
		Resources: c.Resources, Templates: c.Templates, Completions: c.Completions,
		Subscriptions: c.Subscriptions, PageSize: c.PageSize, CacheTTLMs: c.CacheTTLMs, CacheScope: c.CacheScope,
	}
}

// Hash names the catalog's content: workers with equal catalogs form one
// pool.
func (c *Catalog) Hash() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15]))
}

// MergeCatalogs returns the union of catalogs: every name once (the first
// catalog that has it wins, so pass them in a deterministic order), sorted;
// server info, instructions and cache settings of the first.
func MergeCatalogs(cs []*Catalog) *Catalog {
	out := &Catalog{}
	if len(cs) == 0 {
		return out
	}
	first := cs[0]
	out.Info, out.Instructions, out.PageSize, out.CacheTTLMs, out.CacheScope = first.Info, first.Instructions, first.PageSize, first.CacheTTLMs, first.CacheScope
	tools, prompts, res, tmpls := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range cs {
		out.Completions = out.Completions || c.Completions
		out.Subscriptions = out.Subscriptions || c.Subscriptions
		for _, t := range c.Tools {
			if !tools[t.Name] {
				tools[t.Name] = true
				out.Tools = append(out.Tools, t)
			}
		}
		for _, p := range c.Prompts {
			if !prompts[p.Name] {
				prompts[p.Name] = true
				out.Prompts = append(out.Prompts, p)
			}
		}
		for _, r := range c.Resources {
			if !res[r.URI] {
				res[r.URI] = true
				out.Resources = append(out.Resources, r)
			}
		}
		for _, t := range c.Templates {
			if !tmpls[t.URITemplate] {
				tmpls[t.URITemplate] = true
				out.Templates = append(out.Templates, t)
			}
		}
	}
	slices.SortFunc(out.Tools, func(a, b *protocol.Tool) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Prompts, func(a, b *protocol.Prompt) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Resources, func(a, b *protocol.Resource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(out.Templates, func(a, b *protocol.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	return out
}

// SameLists reports, per kind ("tools", "prompts", "resources"), whether
// two catalogs offer different lists: what a list_changed is raised for.
func SameLists(a, b *Catalog) (changed []string) {
	eq := func(x, y any) bool {
		bx, _ := json.Marshal(x)
		by, _ := json.Marshal(y)
		return string(bx) == string(by)
	}
	if !eq(a.Tools, b.Tools) {
		changed = append(changed, "tools")
	}
	if !eq(a.Prompts, b.Prompts) {
		changed = append(changed, "prompts")
	}
	if !eq(a.Resources, b.Resources) || !eq(a.Templates, b.Templates) {
		changed = append(changed, "resources")
	}
	return changed
}

// ListDigest returns a digest of what a catalog offers for one list kind
// ("tools", "prompts" or "resources", the last with its templates): two
// catalogs have the same digest for a kind exactly when SameLists does not
// report it. "" for another kind or a nil catalog.
func ListDigest(c *Catalog, kind string) string {
	if c == nil {
		return ""
	}
	var v any
	switch kind {
	case "tools":
		v = c.Tools
	case "prompts":
		v = c.Prompts
	case "resources":
		v = [2]any{c.Resources, c.Templates}
	default:
		return ""
	}
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// IsCatalogMethod reports whether a Catalog answers method: initialize,
// server/discover and the list methods (tools, prompts, resources,
// resource templates). In a cluster the frontends answer them from the
// workers' announced catalogs without running worker code, so they never
// pass through a [Middleware].
func IsCatalogMethod(method string) bool {
	switch method {
	case protocol.MethodInitialize, protocol.MethodServerDiscover,
		protocol.MethodToolsList, protocol.MethodPromptsList,
		protocol.MethodResourcesList, protocol.MethodResourcesTemplatesList:
		return true
	}
	return false
}

// Answer serves req from the catalog when [IsCatalogMethod] holds for its
// method (handled is false otherwise): the result is finished for the
// request's era (resultType, serverInfo, caching hints on modern).
func (c *Catalog) Answer(req *Request, params json.RawMessage) (res protocol.Result, handled bool, err error) {
	if !IsCatalogMethod(req.in.Method) {
		return nil, false, nil
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	res, err = c.answer(req, params)
	if err == nil && req.in.Era == protocol.EraModern {
		finishModern(&c.Info, c.CacheTTLMs, c.CacheScope, req, res)
	}
	return res, true, err
}

func (c *Catalog) answer(req *Request, params json.RawMessage) (protocol.Result, error) {
	caps := c.Capabilities(req.in.Era, req.in.Features)
	size := c.PageSize
	if size <= 0 {
		size = 500
	}
	x := c.idx()
	switch req.in.Method {
	case protocol.MethodInitialize:
		var p protocol.InitializeParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if e := p.Validate(); e != nil {
			return nil, e
		}
		return &protocol.InitializeResult{
			ProtocolVersion: protocol.NegotiateLegacy(p.ProtocolVersion),
			Capabilities:    c.Capabilities(protocol.EraLegacy, req.in.Features),
			ServerInfo:      c.Info,
			Instructions:    c.Instructions,
		}, nil
	case protocol.MethodServerDiscover:
		return &protocol.DiscoverResult{
			SupportedVersions: protocol.SupportedVersions(),
			Capabilities:      caps,
			Instructions:      c.Instructions,
		}, nil
	}
	var p protocol.PaginatedParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	switch req.in.Method {
	case protocol.MethodToolsList:
		from, to, next, err := pageBounds(x.toolNames, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &protocol.ListToolsResult{Tools: withoutExecution(page(c.Tools[from:to]), req.in.Era == protocol.EraModern || !req.in.Features.Tasks), NextCursor: next}, nil
	case protocol.MethodPromptsList:
		if caps.Prompts == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		from, to, next, err := pageBounds(x.promptNames, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &protocol.ListPromptsResult{Prompts: page(c.Prompts[from:to]), NextCursor: next}, nil
	case protocol.MethodResourcesList:
		if caps.Resources == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		from, to, next, err := pageBounds(x.resourceURIs, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &protocol.ListResourcesResult{Resources: page(c.Resources[from:to]), NextCursor: next}, nil
	default: // resources/templates/list
		if caps.Resources == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		from, to, next, err := pageBounds(x.templateURIs, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &protocol.ListResourceTemplatesResult{ResourceTemplates: page(c.Templates[from:to]), NextCursor: next}, nil
	}
}

// pageBounds is paginate over a sorted slice, as indices.
func pageBounds(names []string, cursor *string, size int) (from, to int, next *string, err error) {
	page, next, err := paginate(names, cursor, size)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(page) == 0 {
		return len(names), len(names), next, nil
	}
	from, _ = slices.BinarySearch(names, page[0])
	return from, from + len(page), next, nil
}

// page copies a page into a non-nil slice (lists are arrays on the wire,
// never null).
func page[T any](s []T) []T { return append(make([]T, 0, len(s)), s...) }

// withoutExecution drops the 2025-11-25 execution hints (task support)
// from tools when strip is set: for 2026-07-28 clients, whose Tool has no
// such member (task support is a registration property there), and on
// transports that run no tasks.
func withoutExecution(tools []*protocol.Tool, strip bool) []*protocol.Tool {
	if !strip {
		return tools
	}
	var out []*protocol.Tool
	for i, t := range tools {
		if t.Execution == nil {
			if out != nil {
				out = append(out, t)
			}
			continue
		}
		if out == nil {
			out = append(make([]*protocol.Tool, 0, len(tools)), tools[:i]...)
		}
		c := *t
		c.Execution = nil
		out = append(out, &c)
	}
	if out == nil {
		return tools
	}
	return out
}
