package fleet

import (
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Route says where a request goes: a bus subject, or a local answer.
type Route struct {
	// Subject is the bus subject to publish the request to; empty when
	// Local is set.
	Subject string
	// Local, when set, is the error to answer without a worker (a tool,
	// prompt or resource no live pool serves).
	Local *protocol.Error
}

// RouteFor picks the subject of a request from the union: tools and
// prompts by name (any worker serving them), URIs and completion
// references to the pool that serves them, anything else to any worker.
// Without any known pool, everything goes to any worker. head and params
// are the request's decoded params head and its raw params.
func (v *View) RouteFor(era protocol.Era, method string, head *protocol.ParamsHead, params json.RawMessage) Route {
	s := v.snap.Load()
	subj := v.opts.Subjects
	if !s.live {
		return Route{Subject: subj.Request(method, routingName(method, head))}
	}
	switch method {
	case protocol.MethodToolsCall:
		name := ""
		if head.Name != nil {
			name = *head.Name
		}
		if !s.cat.HasTool(name) {
			return Route{Local: protocol.ErrUnknownTool(name)}
		}
		return Route{Subject: subj.Request(method, name)}
	case protocol.MethodPromptsGet:
		name := ""
		if head.Name != nil {
			name = *head.Name
		}
		if !s.cat.HasPrompt(name) {
			return Route{Local: protocol.ErrUnknownPrompt(name)}
		}
		return Route{Subject: subj.Request(method, name)}
	case protocol.MethodResourcesRead:
		uri := ""
		if head.URI != nil {
			uri = *head.URI
		}
		if p := s.poolFor(uri); p != "" {
			return Route{Subject: subj.PoolRequest(p, method)}
		}
		return Route{Local: protocol.ErrResourceNotFound(era, uri)}
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		if head.URI != nil {
			if p := s.poolFor(*head.URI); p != "" {
				return Route{Subject: subj.PoolRequest(p, method)}
			}
		}
	case protocol.MethodCompletionComplete:
		var p struct {
			Ref protocol.CompleteReference `json:"ref"`
		}
		_ = json.Unmarshal(params, &p)
		pool := ""
		switch p.Ref.Type {
		case "ref/prompt":
			pool = s.prompts[p.Ref.Name]
		case "ref/resource":
			pool = s.poolFor(p.Ref.URI)
		}
		if pool != "" {
			return Route{Subject: subj.PoolRequest(pool, method)}
		}
	}
	return Route{Subject: subj.Request(method, "")}
}

// Serves reports whether a live pool serves the tool (kind "tool") or
// prompt (kind "prompt") name: what may name a span (unknown names a client
// makes up must not multiply span names). False while no pool is known.
func (v *View) Serves(kind, name string) bool {
	s := v.snap.Load()
	if !s.live {
		return false
	}
	switch kind {
	case "tool":
		return s.cat.HasTool(name)
	case "prompt":
		return s.cat.HasPrompt(name)
	}
	return false
}

// routingName is the name a request is routed by on the bus: the tool or
// prompt it addresses.
func routingName(method string, head *protocol.ParamsHead) string {
	switch method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet:
		if head.Name != nil {
			return *head.Name
		}
	}
	return ""
}

// AnswerFromCatalog answers initialize, server/discover and the lists from
// the union when a pool is known: resp is the JSON-RPC response (a result
// or an error). ok is false when the view cannot answer msg (no pool is
// known, or msg is not a catalog method): a worker must. meta is the
// modern era's per-request _meta (nil in the legacy era).
func (v *View) AnswerFromCatalog(era protocol.Era, msg *protocol.Message, meta *protocol.RequestMeta) (resp []byte, ok bool) {
	s := v.snap.Load()
	if !s.live || !mcp.IsCatalogMethod(msg.Method) {
		return nil, false
	}
	in := mcp.RequestInit{Method: msg.Method, ID: msg.ID, Era: era, Features: mcp.Features{Listen: true, SessionStream: true, Tasks: true}}
	if meta != nil && meta.ProtocolVersion != nil {
		in.ProtocolVersion = *meta.ProtocolVersion
	}
	res, _, err := s.cat.Answer(mcp.NewRequest(&in), msg.Params)
	if err != nil {
		return protocol.AppendErrorResponse(nil, msg.ID, protocol.AsError(err)), true
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return protocol.AppendErrorResponse(nil, msg.ID, protocol.ErrInternalFailure()), true
	}
	return protocol.AppendResponse(make([]byte, 0, len(raw)+48), msg.ID, raw), true
}

// ToolScopes returns the OAuth scopes tool name requires (its _meta
// mcp.RequiredScopesMeta) from the union of the live pools' catalogs; nil
// when it requires none or no live pool serves it.
func (v *View) ToolScopes(name string) []string {
	for _, t := range v.snap.Load().cat.Tools {
		if t.Name != name {
			continue
		}
		raw, ok := t.Meta[mcp.RequiredScopesMeta]
		if !ok {
			return nil
		}
		var scopes []string
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &scopes)
		return scopes
	}
	return nil
}
