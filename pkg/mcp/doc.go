// Package mcp is the server author's API: a [Server] holding tools,
// prompts, resources, resource templates and completion, and the
// per-request handle [Request] a handler gets (progress, logging,
// server-to-client requests, events).
//
// The same Server runs unchanged behind every transport: a mcpfleet worker
// (requests arriving over NATS from HTTP frontends), the all-in-one binary,
// or stdio. A transport describes each incoming message in a
// [RequestInit] (with its [Outbound], where the request's own messages
// go), builds the [Request] with [NewRequest] and calls [Server.Handle].
// Handlers read the request through its methods ([Request.Name],
// [Request.Principal], ...).
//
// Middleware: [Server.AddMiddleware] wraps the handling of every request
// that reaches the server's handlers (an authorization check, logging,
// metrics, panic recovery), [Server.AddToolMiddleware] every tool handler.
// The catalog methods (initialize, server/discover and the list methods;
// see [IsCatalogMethod]) never pass through middleware: in a cluster the
// frontends answer them from the catalogs the workers announce, without
// running worker code, so they bypass it on every transport. ping and the
// legacy logging/setLevel pass through it when a transport hands them to
// Handle; the HTTP frontend answers both itself, stdio answers ping.
//
// Concurrency: handlers are called concurrently, one goroutine per request,
// with a context that is cancelled when the client cancels the request, the
// request's deadline passes or the process drains. Registration methods may
// be called at any time, also while requests are served; a change to the
// tool, prompt or resource set raises list_changed through the server's
// [Events] sink.
package mcp
