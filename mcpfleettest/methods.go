package mcpfleettest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// maxPages bounds the pages a list method follows.
const maxPages = 1000

// CallTool calls a tool with args (marshalled; nil sends none). A tool
// error (isError) is a result, not an error. On modern, the arguments a
// tool mirrors into headers (x-mcp-header) are sent as Mcp-Param-*
// headers, from the tool's definition in tools/list (fetched when the
// client has not listed the tool yet, and again when the server finds the
// headers wrong).
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*protocol.CallToolResult, error) {
	if name == "" {
		return nil, errors.New("mcpfleettest: CallTool needs a tool name")
	}
	p := &protocol.CallToolParams{Name: name}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("mcpfleettest: tools/call %q: marshalling the arguments: %w", name, err)
		}
		p.Arguments = b
	}
	call := func(hdr http.Header) (*protocol.CallToolResult, error) {
		var res protocol.CallToolResult
		if err := c.Call(ctx, protocol.MethodToolsCall, p, &res, slices.Concat(opts, []CallOption{WithHeader(hdr)})...); err != nil {
			return nil, err
		}
		return &res, nil
	}
	if c.era != protocol.EraModern {
		return call(nil)
	}
	hdr, err := c.paramHeaders(ctx, name, p.Arguments, false)
	if err != nil {
		return nil, err
	}
	res, err := call(hdr)
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Code == protocol.CodeHeaderMismatch && strings.Contains(pe.Message, "Mcp-Param") {
		// The definition may have changed: list again and retry once if
		// the headers differ (the server checks them before the handler
		// runs).
		if again, lerr := c.paramHeaders(ctx, name, p.Arguments, true); lerr == nil && !sameHeader(again, hdr) {
			return call(again)
		}
	}
	return res, err
}

// paramHeaders returns the Mcp-Param-* headers of a modern tools/call.
func (c *Client) paramHeaders(ctx context.Context, name string, args json.RawMessage, refresh bool) (http.Header, error) {
	c.mu.Lock()
	t, ok := c.tools[name]
	c.mu.Unlock()
	if !ok || refresh {
		if _, err := c.ListTools(ctx); err != nil {
			return nil, fmt.Errorf("mcpfleettest: tools/call %q: listing the tools for their x-mcp-header arguments: %w", name, err)
		}
		c.mu.Lock()
		t = c.tools[name]
		c.mu.Unlock()
	}
	if t == nil {
		return nil, nil // unknown: the server says so
	}
	var schema struct {
		Properties map[string]struct {
			Header *string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	var values map[string]json.RawMessage
	if json.Unmarshal(t.InputSchema, &schema) != nil || json.Unmarshal(args, &values) != nil {
		return nil, nil
	}
	var h http.Header
	for prop, s := range schema.Properties {
		raw, ok := values[prop]
		if s.Header == nil || !ok || string(raw) == "null" {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			v = string(raw) // an integer or a boolean, as JSON writes it
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set("Mcp-Param-"+*s.Header, EncodeHeaderValue(v))
	}
	return h, nil
}

func sameHeader(a, b http.Header) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return strings.Join(x, "\x00") == strings.Join(y, "\x00") })
}

// ListTools returns every tool, following the pages.
func (c *Client) ListTools(ctx context.Context, opts ...CallOption) ([]*protocol.Tool, error) {
	var all []*protocol.Tool
	err := paginate(ctx, c, protocol.MethodToolsList, opts, func(res *protocol.ListToolsResult) *string {
		all = append(all, res.Tools...)
		return res.NextCursor
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tools = make(map[string]*protocol.Tool, len(all))
	for _, t := range all {
		c.tools[t.Name] = t
	}
	c.mu.Unlock()
	return all, nil
}

// ListPrompts returns every prompt, following the pages.
func (c *Client) ListPrompts(ctx context.Context, opts ...CallOption) ([]*protocol.Prompt, error) {
	var all []*protocol.Prompt
	err := paginate(ctx, c, protocol.MethodPromptsList, opts, func(res *protocol.ListPromptsResult) *string {
		all = append(all, res.Prompts...)
		return res.NextCursor
	})
	return all, err
}

// ListResources returns every resource, following the pages.
func (c *Client) ListResources(ctx context.Context, opts ...CallOption) ([]*protocol.Resource, error) {
	var all []*protocol.Resource
	err := paginate(ctx, c, protocol.MethodResourcesList, opts, func(res *protocol.ListResourcesResult) *string {
		all = append(all, res.Resources...)
		return res.NextCursor
	})
	return all, err
}

// ListResourceTemplates returns every resource template, following the
// pages.
func (c *Client) ListResourceTemplates(ctx context.Context, opts ...CallOption) ([]*protocol.ResourceTemplate, error) {
	var all []*protocol.ResourceTemplate
	err := paginate(ctx, c, protocol.MethodResourcesTemplatesList, opts, func(res *protocol.ListResourceTemplatesResult) *string {
		all = append(all, res.ResourceTemplates...)
		return res.NextCursor
	})
	return all, err
}

// paginate calls a list method page after page; page returns the next
// cursor.
func paginate[R any](ctx context.Context, c *Client, method string, opts []CallOption, page func(*R) *string) error {
	var cursor *string
	seen := map[string]bool{}
	for range maxPages {
		var res R
		if err := c.Call(ctx, method, &protocol.PaginatedParams{Cursor: cursor}, &res, opts...); err != nil {
			return err
		}
		next := page(&res)
		if next == nil {
			return nil
		}
		if seen[*next] {
			return fmt.Errorf("mcpfleettest: %s: the server sent cursor %q twice", method, *next)
		}
		seen[*next] = true
		cursor = next
	}
	return fmt.Errorf("mcpfleettest: %s: more than %d pages", method, maxPages)
}

// GetPrompt gets a prompt with its arguments.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...CallOption) (*protocol.GetPromptResult, error) {
	if name == "" {
		return nil, errors.New("mcpfleettest: GetPrompt needs a prompt name")
	}
	var res protocol.GetPromptResult
	if err := c.Call(ctx, protocol.MethodPromptsGet, &protocol.GetPromptParams{Name: name, Arguments: args}, &res, opts...); err != nil {
		return nil, err
	}
	return &res, nil
}

// ReadResource reads the resource at uri.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*protocol.ReadResourceResult, error) {
	if uri == "" {
		return nil, errors.New("mcpfleettest: ReadResource needs a URI")
	}
	var res protocol.ReadResourceResult
	if err := c.Call(ctx, protocol.MethodResourcesRead, &protocol.ReadResourceParams{URI: uri}, &res, opts...); err != nil {
		return nil, err
	}
	return &res, nil
}

// Complete asks for completions of an argument of a prompt (ref type
// "ref/prompt", Name) or a resource template ("ref/resource", URI).
func (c *Client) Complete(ctx context.Context, p *protocol.CompleteParams, opts ...CallOption) (*protocol.Completion, error) {
	if p == nil {
		return nil, errors.New("mcpfleettest: Complete needs params")
	}
	var res protocol.CompleteResult
	if err := c.Call(ctx, protocol.MethodCompletionComplete, p, &res, opts...); err != nil {
		return nil, err
	}
	return &res.Completion, nil
}

// errLegacyOnly is returned by legacy-only methods of a modern client.
func errLegacyOnly(method string) error {
	return fmt.Errorf("mcpfleettest: %s is a legacy (2025-11-25) method; 2026-07-28 clients subscribe with Listen", method)
}

// Subscribe subscribes the legacy session to updates of the resource at
// uri (resources/subscribe); they arrive on a [Client.Listen] stream.
// Modern clients name the URIs in Listen's filter instead.
func (c *Client) Subscribe(ctx context.Context, uri string) error {
	if c.era != protocol.EraLegacy {
		return errLegacyOnly(protocol.MethodResourcesSubscribe)
	}
	return c.Call(ctx, protocol.MethodResourcesSubscribe, &protocol.ReadResourceParams{URI: uri}, nil)
}

// Unsubscribe ends a legacy subscription (resources/unsubscribe).
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	if c.era != protocol.EraLegacy {
		return errLegacyOnly(protocol.MethodResourcesUnsubscribe)
	}
	return c.Call(ctx, protocol.MethodResourcesUnsubscribe, &protocol.ReadResourceParams{URI: uri}, nil)
}
