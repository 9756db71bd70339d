package mcp

import (
	"context"
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// MethodHandler handles one request below the transport: what
// [Server.Handle] runs for a method. params are the request's raw params
// ("{}" when the client sent none). The result is not yet finished for the
// era (Handle adds resultType and the caching hints of modern results
// afterwards); an error is turned into the JSON-RPC error as Handle
// documents.
type MethodHandler func(ctx context.Context, req *Request, params json.RawMessage) (protocol.Result, error)

// Middleware wraps the handling of every request that reaches this
// server's handlers: tools/call, prompts/get, resources/read,
// resources/subscribe and unsubscribe, completion/complete,
// logging/setLevel, ping and any other method except the catalog methods
// (a transport may answer ping and logging/setLevel itself, without
// calling Handle; see the package documentation).
// The catalog methods ([IsCatalogMethod]: initialize, server/discover and
// the list methods) never pass through middleware: in a cluster the
// frontends answer them from the workers' announced catalogs without
// running worker code, so they bypass it on every transport alike.
// Notifications ([Server.HandleNotification]) do not pass through it
// either.
//
// A middleware calls next to go on, or returns without calling it to
// refuse the request: a *protocol.Error is sent as is (e.g. -32600 from an
// authorization check), any other error as -32603. It sees the request's
// target ([Request.Name]), [Request.SessionID], [Request.Principal] and
// the rest of [Request], and may time, log or count.
//
// A panic below a middleware, or in it, is recovered by Handle into
// -32603; a middleware that wants another answer recovers it itself.
//
// A round of a 2026-07-28 multi-round request (MRTR) that asks the client
// for input ends with an error matching [ErrInputRequired] (errors.Is); a
// middleware must return that error unchanged (and should not count it as
// a failure): Handle turns it into the input_required result. Every round
// is a request of its own, so a middleware runs once per round. A tool
// that runs as a task returns its CreateTaskResult as soon as the task
// begins; the rest of the handler runs after the middleware returned (see
// [ToolMiddleware] to wrap all of it).
type Middleware func(next MethodHandler) MethodHandler

// ToolMiddleware wraps every tool handler, after argument validation: it
// sees the validated arguments and the handler's own result and error,
// before a plain error becomes a tool-error result. What it returns is
// treated as a [ToolHandler]'s answer (a *protocol.Error is a JSON-RPC
// error, another error an isError result). When the tool runs as a task,
// the middleware runs in the task's goroutine around the whole handler
// and its answer is the task's outcome. An MRTR round that asks for input
// looks to it as to a [Middleware]: an error matching [ErrInputRequired],
// to be returned unchanged.
type ToolMiddleware func(next ToolHandler) ToolHandler

// AddMiddleware adds request middleware (see [Middleware]). The first
// added is the outermost: after AddMiddleware(a, b) and AddMiddleware(c),
// a request runs a(b(c(handler))), as with mcp-go's server options
// (go-sdk's AddReceivingMiddleware makes a later call the outermost
// instead). Nil entries are ignored. It may be called at any time, also
// while requests are served: requests that start afterwards go through
// the new chain.
func (s *Server) AddMiddleware(mw ...Middleware) {
	_ = s.update(func(r *registry) (string, error) {
		r.middleware = appendNonNil(r.middleware, mw)
		return "", nil
	})
}

// AddToolMiddleware adds tool middleware (see [ToolMiddleware]), which
// applies to every tool, whether added before or after it. The first added
// is the outermost, as with [Server.AddMiddleware]. Nil entries are
// ignored. It may be called at any time, also while requests are served.
func (s *Server) AddToolMiddleware(mw ...ToolMiddleware) {
	_ = s.update(func(r *registry) (string, error) {
		r.toolMiddleware = appendNonNil(r.toolMiddleware, mw)
		for name, t := range r.tools {
			c := *t
			c.run = wrap(c.handler, r.toolMiddleware)
			r.tools[name] = &c
		}
		return "", nil
	})
}

// appendNonNil returns a new slice: to's elements, then add's non-nil ones.
func appendNonNil[M ~func(H) H, H any](to, add []M) []M {
	out := make([]M, len(to), len(to)+len(add))
	copy(out, to)
	for _, m := range add {
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// wrap returns h inside mws, the first outermost.
func wrap[M ~func(H) H, H any](h H, mws []M) H {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
