// Package mcp is the server author's API: a [Server] holding tools,
// prompts, resources, resource templates and completion, and the
// per-request handle [Request] a handler gets (progress, logging,
// server-to-client requests, events).
//
// The same Server runs unchanged behind every transport: a mcpfleet worker
// (requests arriving over NATS from HTTP frontends), the all-in-one binary,
// or stdio. A transport builds a [Request] for each incoming message, sets
// its [Outbound] (where the request's own messages go) and calls
// [Server.Handle].
//
// Concurrency: handlers are called concurrently, one goroutine per request,
// with a context that is cancelled when the client cancels the request, the
// request's deadline passes or the process drains. Registration methods may
// be called at any time, also while requests are served; a change to the
// tool, prompt or resource set raises list_changed through the server's
// [Events] sink.
package mcp
