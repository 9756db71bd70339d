package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Handle dispatches one request to its handler and returns the result to
// send, or an error: a *protocol.Error is sent as is, anything else as
// -32603 (with a generic message; the detail is logged). params are the
// request's raw params (nil when absent).
//
// Every method but the catalog methods ([IsCatalogMethod]) runs through the
// server's [Middleware]. On modern requests Handle fills resultType, the
// serverInfo _meta and the caching hints of cacheable results. A panic in
// a handler or a middleware is recovered into -32603.
func (s *Server) Handle(ctx context.Context, req *Request, params json.RawMessage) (res protocol.Result, err error) {
	req.srv = s
	if req.in.ClientCapabilities == nil {
		req.in.ClientCapabilities = &protocol.ClientCapabilities{}
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	req.params = params
	head := req.headFor(params)
	if head == nil && needsHead(&req.in, params) {
		h, err := decodeHead(params)
		if err != nil {
			return nil, err
		}
		head = h
	}
	if head != nil && head.Meta != nil {
		if tok := head.Meta.ProgressToken; len(tok) > 0 && string(tok) != "null" {
			if c := tok[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
				return nil, protocol.NewError(protocol.CodeInvalidParams, "invalid params: _meta.progressToken must be a string or a number")
			}
			req.progressToken = tok
		}
		if head.Meta.Traceparent != "" {
			req.in.Traceparent, req.in.Tracestate = head.Meta.Traceparent, head.Meta.Tracestate
		}
	}
	ctx = withTraceContext(ctx, req)
	defer func() {
		if p := recover(); p != nil {
			s.logger().ErrorContext(ctx, "mcp: handler panic", "method", req.in.Method, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, protocol.ErrInternalFailure()
		}
	}()
	if req.in.Era == protocol.EraModern && mrtrMethods[req.in.Method] {
		if err := s.startMRTR(req, params, head); err != nil {
			return nil, err
		}
	}
	res, err = s.dispatch(ctx, req, params)
	if ir, ok, ierr := s.finishMRTR(req, params, err); ok {
		if ierr != nil {
			return nil, s.toProtocolError(ctx, req, ierr)
		}
		finishModern(&s.info, s.opts.CacheTTL.Milliseconds(), s.opts.CacheScope, req, ir)
		return ir, nil
	}
	if err != nil {
		return nil, s.toProtocolError(ctx, req, err)
	}
	if req.in.Era == protocol.EraModern {
		finishModern(&s.info, s.opts.CacheTTL.Milliseconds(), s.opts.CacheScope, req, res)
	}
	return res, nil
}

// mayHaveMeta reports whether params may hold a _meta member, or may not
// be an object: false only for an object whose bytes have no escape and
// no "_meta" in any letter case (encoding/json matches member names
// case-insensitively), which decodes to an empty head. Most requests
// without _meta (legacy calls) skip a decode of their params that way.
// params were validated as JSON by the transport's decode.
func mayHaveMeta(params []byte) bool {
	i := 0
	for i < len(params) && (params[i] == ' ' || params[i] == '\t' || params[i] == '\n' || params[i] == '\r') {
		i++
	}
	if i == len(params) || params[i] != '{' || bytes.IndexByte(params, '\\') >= 0 {
		return true
	}
	for j := bytes.IndexByte(params, '_'); j >= 0; {
		if k := j + 1; k+4 <= len(params) && bytes.EqualFold(params[k:k+4], metaWord) {
			return true
		}
		n := bytes.IndexByte(params[j+1:], '_')
		if n < 0 {
			break
		}
		j += 1 + n
	}
	return false
}

var metaWord = []byte("meta")

// lenientString decodes a JSON string and ignores any other value:
// Request.Name reads name and uri, and must not refuse params where they
// mean something else (the method's own decode reports a wrong type).
type lenientString string

func (l *lenientString) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	for _, c := range b[1 : len(b)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			return json.Unmarshal(b, (*string)(l)) // escapes or non-ASCII: as encoding/json decodes them
		}
	}
	*l = lenientString(b[1 : len(b)-1]) // plain ASCII, the common case: no second decode
	return nil
}

func (s *Server) toProtocolError(ctx context.Context, req *Request, err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return protocol.NewError(protocol.CodeInternalError, "request cancelled or timed out")
	}
	s.logger().WarnContext(ctx, "mcp: handler error", "method", req.in.Method, "err", err)
	return protocol.ErrInternalFailure()
}

// finishModern gives a modern result its resultType, the serverInfo _meta
// and, for cacheable results, the caching hints.
func finishModern(info *protocol.Implementation, ttlMs int64, scope string, req *Request, res protocol.Result) {
	b := res.Base()
	if b.ResultType == "" {
		b.ResultType = protocol.ResultTypeComplete
	}
	if b.Meta == nil {
		b.Meta = protocol.Meta{}
	}
	if _, ok := b.Meta[protocol.MetaServerInfo]; !ok {
		b.Meta[protocol.MetaServerInfo] = info
	}
	if c, ok := res.(protocol.Cacheable); ok && b.ResultType == protocol.ResultTypeComplete {
		h := c.Cache()
		if req.mrtr != nil && req.mrtr.retry {
			// Results of MRTR retries must not be cached.
			zero := int64(0)
			h.TTLMs, h.CacheScope = &zero, protocol.CacheScopePrivate
		}
		if h.TTLMs == nil {
			ttl := ttlMs
			h.TTLMs = &ttl
		}
		if h.CacheScope == "" {
			h.CacheScope = scope
			if scope == "" {
				h.CacheScope = protocol.CacheScopePublic
			}
		}
	}
}

func decodeParams(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return protocol.ErrBadParams(err)
	}
	return nil
}

// dispatch answers catalog methods from the catalog and runs every other
// method through the middleware chain of the current registry snapshot.
func (s *Server) dispatch(ctx context.Context, req *Request, params json.RawMessage) (protocol.Result, error) {
	if IsCatalogMethod(req.in.Method) {
		return s.Catalog().answer(req, params)
	}
	return s.reg.Load().handle(ctx, req, params)
}

// serve is the innermost MethodHandler of registry r: the method's own
// handling.
func (s *Server) serve(ctx context.Context, req *Request, r *registry, params json.RawMessage) (protocol.Result, error) {
	switch req.in.Method {
	case protocol.MethodPing:
		return &protocol.EmptyResult{}, nil
	case protocol.MethodToolsCall: // tools are always a capability
		return s.callTool(ctx, req, r, params)
	}
	caps := s.Catalog().Capabilities(req.in.Era, req.in.Features)
	switch req.in.Method {
	case protocol.MethodPromptsGet:
		if caps.Prompts == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		return s.getPrompt(ctx, req, r, params)
	case protocol.MethodResourcesRead:
		if caps.Resources == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		return s.readResource(ctx, req, r, params)
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		if caps.Resources == nil || !caps.Resources.Subscribe {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		var p protocol.ReadResourceParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		req.setName(p.URI)
		if p.URI == "" {
			return nil, protocol.ErrURIRequired()
		}
		if h := s.opts.SubscribeHook; h != nil {
			if err := h(ctx, req, p.URI, req.in.Method == protocol.MethodResourcesSubscribe); err != nil {
				return nil, err
			}
		}
		return &protocol.EmptyResult{}, nil
	case protocol.MethodCompletionComplete:
		if caps.Completions == nil {
			return nil, protocol.ErrUnknownMethod(req.in.Method)
		}
		var p protocol.CompleteParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if err := s.checkCompletionRef(r, &p.Ref); err != nil {
			return nil, err
		}
		out := &protocol.CompleteResult{Completion: protocol.Completion{Values: []string{}}}
		if r.completion != nil {
			c, err := r.completion(ctx, req, &p)
			if err != nil {
				return nil, err
			}
			if c != nil {
				out.Completion = *c
				if out.Completion.Values == nil {
					out.Completion.Values = []string{}
				}
				if len(out.Completion.Values) > 100 {
					out.Completion.Values = out.Completion.Values[:100]
					out.Completion.HasMore = true
				}
			}
		}
		return out, nil
	case protocol.MethodLoggingSetLevel:
		var p protocol.SetLevelParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if !p.Level.Valid() {
			return nil, protocol.ErrUnknownLogLevel(p.Level)
		}
		return &protocol.EmptyResult{}, nil
	}
	return nil, protocol.ErrUnknownMethod(req.in.Method)
}

func (s *Server) checkCompletionRef(r *registry, ref *protocol.CompleteReference) error {
	switch ref.Type {
	case "ref/prompt":
		if _, ok := r.prompts[ref.Name]; !ok {
			return protocol.ErrUnknownPrompt(ref.Name)
		}
	case "ref/resource":
		if _, ok := r.resources[ref.URI]; ok {
			return nil
		}
		for _, t := range r.templates {
			if t.def.URITemplate == ref.URI {
				return nil
			}
			if _, ok := t.tmpl.Match(ref.URI); ok {
				return nil
			}
		}
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown resource %q", ref.URI)
	default:
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: ref.type must be ref/prompt or ref/resource")
	}
	return nil
}

// paginate returns the page of sorted names after the cursor. Cursors are
// base64 of the last name of the previous page, so they stay valid while
// the list changes.
func paginate(names []string, cursor *string, size int) ([]string, *string, error) {
	start := 0
	if cursor != nil {
		last, err := base64.RawURLEncoding.DecodeString(*cursor)
		if err != nil || (*cursor == "" && len(names) > 0) {
			return nil, nil, protocol.NewError(protocol.CodeInvalidParams, "invalid params: invalid cursor")
		}
		start, _ = slices.BinarySearch(names, string(last))
		if start < len(names) && names[start] == string(last) {
			start++
		}
	}
	end := min(start+size, len(names))
	page := names[start:end]
	if end < len(names) {
		c := base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1]))
		return page, &c, nil
	}
	return page, nil, nil
}

func (s *Server) getPrompt(ctx context.Context, req *Request, r *registry, params json.RawMessage) (protocol.Result, error) {
	var p protocol.GetPromptParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	req.setName(p.Name)
	pr, ok := r.prompts[p.Name]
	if !ok {
		return nil, protocol.ErrUnknownPrompt(p.Name)
	}
	for _, a := range pr.def.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			return nil, protocol.NewError(protocol.CodeInvalidParams, "invalid params: prompt %q requires argument %q", p.Name, a.Name)
		}
	}
	if p.Arguments == nil {
		p.Arguments = map[string]string{}
	}
	res, err := pr.handler(ctx, req, p.Arguments)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("prompt %q handler returned no result", p.Name)
	}
	if res.Messages == nil {
		res.Messages = []*protocol.PromptMessage{}
	}
	return res, nil
}

func (s *Server) readResource(ctx context.Context, req *Request, r *registry, params json.RawMessage) (protocol.Result, error) {
	var p protocol.ReadResourceParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	req.setName(p.URI)
	if p.URI == "" {
		return nil, protocol.ErrURIRequired()
	}
	var (
		h    ResourceHandler
		vars map[string]string
	)
	if res, ok := r.resources[p.URI]; ok {
		h = res.handler
	} else {
		for _, t := range r.templates {
			if v, ok := t.tmpl.Match(p.URI); ok {
				h, vars = t.handler, v
				break
			}
		}
	}
	var (
		res *protocol.ReadResourceResult
		err error
	)
	if h != nil {
		res, err = h(ctx, req, p.URI, vars)
	}
	if h == nil || errors.Is(err, ErrResourceNotFound) {
		return nil, protocol.ErrResourceNotFound(req.in.Era, p.URI)
	}
	if err != nil {
		return nil, err
	}
	if res == nil || len(res.Contents) == 0 {
		return nil, protocol.ErrResourceNotFound(req.in.Era, p.URI)
	}
	return res, nil
}
