package mcpfleet

import (
	"log/slog"

	"github.com/mcpfleet/mcpfleet/internal/logctx"
)

// LogHandler wraps h so that every record logged with a request's context
// (slog.InfoContext(ctx, ...), Logger.Log and the other ...Context forms)
// carries the request's attributes: method, rpc_id, session (its first 8
// bytes), tool, prompt or resource (a URI without its query), and trace_id
// and span_id of the span context ctx carries (on a worker, the caller's
// traceparent, also with tracing off). Only identifiers are added, never
// message contents; a record logged without such a context is unchanged,
// and a key the record already has is not added again.
//
// The process logger of every role ([Main], [App]) is built with it, and
// is slog.Default() while the program runs: a handler that logs with
// slog.InfoContext(ctx, ...) gets the attributes. A program that passes
// its own Logger to [NewHandler], [RunServe], [RunFrontend], [RunWorker]
// or a handler of its own wraps its handler the same way:
// slog.New(mcpfleet.LogHandler(h)). Wrapping twice is wrapping once.
func LogHandler(h slog.Handler) slog.Handler { return logctx.NewHandler(h) }
