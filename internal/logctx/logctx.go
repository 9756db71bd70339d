// Package logctx puts the request being served on the log lines made in
// its context. [NewHandler] wraps a slog.Handler: a record logged with a
// context (slog's ...Context functions, Logger.Log, Logger.LogAttrs) gets
// the attributes of the request that context belongs to:
//
//   - method, rpc_id, session, and tool, prompt or resource (what the
//     request addresses), from the frontend's [httpx.Record] of the
//     exchange ([httpx.RecordFrom]) or, where there is none (a worker, the
//     stdio transport), from the [Request] set with [WithRequest];
//   - trace_id and span_id, from the valid OpenTelemetry span context the
//     context carries (the caller's traceparent on a worker, even with
//     tracing off), else from the record's span.
//
// Only identifiers are added, never message contents: a session id is cut
// to its first 8 bytes (enough to follow one, too few to hijack it), a
// resource URI loses its query and fragment (where secrets travel), and
// every value is capped in length. An attribute the record already has
// (the same key at its top level) is not added again. A record logged
// without a context, or with one that carries no request, is passed on
// unchanged. Under a Logger.WithGroup the attributes land in the group,
// like any attribute added at the call.
package logctx

import (
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// The attribute keys, shared with the frontend's access log.
const (
	KeyMethod   = "method"
	KeyRPCID    = "rpc_id"
	KeySession  = "session"
	KeyTool     = "tool"
	KeyPrompt   = "prompt"
	KeyResource = "resource"
	KeyTraceID  = "trace_id"
	KeySpanID   = "span_id"
)

// Request is what a transport without an httpx.Record knows of the
// request it serves; *mcp.Request implements it. Its methods may be called
// from any goroutine that logs with the request's context.
type Request interface {
	// Method is the JSON-RPC method.
	Method() string
	// ID is the request id (zero for a notification).
	ID() protocol.ID
	// SessionID is the legacy session id ("" for none).
	SessionID() string
	// Name is the tool or prompt name, or the resource URI, the request
	// addresses ("" for none).
	Name() string
}

type requestKey struct{}

// WithRequest returns ctx carrying req: the log lines made with it (or a
// context derived from it) carry req's attributes. A nil req returns ctx.
func WithRequest(ctx context.Context, req Request) context.Context {
	if req == nil {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, req)
}

// RequestFrom returns the Request ctx carries (WithRequest), nil when none.
func RequestFrom(ctx context.Context) Request {
	req, _ := ctx.Value(requestKey{}).(Request)
	return req
}

// NewHandler returns inner with the request attributes of each record's
// context added (see the package documentation). Wrapping a handler that
// is already wrapped returns it as is.
func NewHandler(inner slog.Handler) slog.Handler {
	if _, ok := inner.(*handler); ok {
		return inner
	}
	return &handler{inner: inner}
}

type handler struct{ inner slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{inner: h.inner.WithAttrs(as)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name)}
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		var buf [8]slog.Attr
		if as := Attrs(ctx, buf[:0]); len(as) > 0 {
			r = r.Clone() // the caller's record may be shared with other handlers
			r.AddAttrs(missing(r, as)...)
		}
	}
	return h.inner.Handle(ctx, r)
}

// missing returns the attributes of as whose keys r does not have.
func missing(r slog.Record, as []slog.Attr) []slog.Attr {
	if r.NumAttrs() == 0 {
		return as
	}
	out := as[:0]
	for _, a := range as {
		dup := false
		r.Attrs(func(b slog.Attr) bool {
			dup = b.Key == a.Key
			return !dup
		})
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// Attrs appends to dst the request attributes of ctx (none when it
// carries no request and no span context) and returns the result.
func Attrs(ctx context.Context, dst []slog.Attr) []slog.Attr {
	var span trace.SpanContext
	if rec := httpx.RecordFrom(ctx); rec != nil {
		dst = appendRequest(dst, rec.Method, rec.ID, rec.Session)
		dst = appendTarget(dst, rec.Tool, rec.Prompt, rec.Resource)
		if rec.Span != nil {
			span = rec.Span.SpanContext()
		}
	} else if req := RequestFrom(ctx); req != nil {
		m := req.Method()
		dst = appendRequest(dst, m, req.ID(), req.SessionID())
		switch m {
		case protocol.MethodToolsCall:
			dst = appendTarget(dst, req.Name(), "", "")
		case protocol.MethodPromptsGet:
			dst = appendTarget(dst, "", req.Name(), "")
		case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
			dst = appendTarget(dst, "", "", req.Name())
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		span = sc
	}
	if span.IsValid() {
		dst = append(dst, slog.String(KeyTraceID, span.TraceID().String()), slog.String(KeySpanID, span.SpanID().String()))
	}
	return dst
}

func appendRequest(dst []slog.Attr, method string, id protocol.ID, session string) []slog.Attr {
	if method != "" {
		dst = append(dst, slog.String(KeyMethod, Clip(method, maxName)))
	}
	if id.IsValid() {
		dst = append(dst, IDAttr(KeyRPCID, id))
	}
	if session != "" {
		dst = append(dst, slog.String(KeySession, ShortSession(session)))
	}
	return dst
}

func appendTarget(dst []slog.Attr, tool, prompt, resource string) []slog.Attr {
	switch {
	case tool != "":
		dst = append(dst, slog.String(KeyTool, Clip(tool, maxName)))
	case prompt != "":
		dst = append(dst, slog.String(KeyPrompt, Clip(prompt, maxName)))
	case resource != "":
		dst = append(dst, slog.String(KeyResource, URI(resource)))
	}
	return dst
}

// Length caps of what is logged: names and ids come from the client, up
// to the message caps (MiB).
const (
	maxName = 128
	maxURI  = 256
)

// IDAttr is a request id as a log attribute: a number as a number, a
// string as a string (capped).
func IDAttr(key string, id protocol.ID) slog.Attr {
	if id.IsString() {
		return slog.String(key, Clip(id.Str(), maxName))
	}
	return slog.Int64(key, id.Int())
}

// ShortSession is the form of a session id that may be logged: its first
// 8 bytes.
func ShortSession(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// URI is the form of a resource URI that may be logged: without its query
// and fragment (which may carry secrets), capped.
func URI(uri string) string {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	return Clip(uri, maxURI)
}

// Clip caps s at n bytes (on a character boundary), marking a cut with
// "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
