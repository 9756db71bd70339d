package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/internal/logctx"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The access log: one line per exchange on the MCP endpoint, at level
// Info with the message "access", on the frontend's logger (so it follows
// the process's --log-format and --log-level), written once the exchange
// is over: a stream (a GET stream, a POST answered as SSE, a listen
// stream) when it ends, with its whole duration. Options.NoAccessLog
// turns it off; nothing is built then.
//
// Its fields are identifiers and figures, never message contents (no
// params, arguments, results) nor credentials (no Authorization header,
// token or cookie):
//
//	http_method   the HTTP method
//	method        the JSON-RPC method ("response" for a client's answer;
//	              the HTTP method for GET, DELETE and what has no message)
//	tool          tools/call's tool, or
//	prompt        prompts/get's prompt, or
//	resource      resources/read's (subscribe's) URI without its query
//	              and fragment, which may carry secrets   (when set)
//	rpc_id        the JSON-RPC request id                 (when set)
//	session       the legacy session id's first 8 bytes   (when set)
//	principal     the authenticated caller's id, iss#sub  (with auth)
//	protocol      the request's protocol version          (when known)
//	status        the HTTP status (0: none was written: the client left)
//	rpc_error     the JSON-RPC error code of the answer   (when any)
//	error_type    OpenTelemetry's error.type              (when any)
//	outcome       ok, error, rejected, timeout, ... (httpx.Record.Outcome)
//	duration      milliseconds, a float
//	trace_id      the exchange's trace id                 (when any)
//	remote        the client's address (behind a proxy, the proxy's)
//
// Client-chosen names and ids are capped in length.

// accessLog writes the access line of the exchange rec records, at its
// end (observeEnd): at once, or for a listen stream the Hub took over,
// when the stream ends too (adoptListen).
func (f *Frontend) accessLog(rec *httpx.Record) {
	if f.opts.NoAccessLog {
		return
	}
	if rec.Method == protocol.MethodSubscriptionsListen {
		if h, ok := f.heldAccess.LoadAndDelete(rec); ok && !h.(*heldAccess).done() {
			return // the stream goes on: its end writes the line
		}
	}
	f.writeAccess(rec)
}

// heldAccess is the access line of an exchange whose stream may outlive
// its handler: written by the last of its two ends, the handler's and the
// stream's.
type heldAccess struct{ left atomic.Int32 }

// done counts one end and reports whether it was the last.
func (h *heldAccess) done() bool { return h.left.Add(-1) == 0 }

// adoptListen serves an open listen stream: the hub takes its connection
// over when it can; otherwise it is served here, by its handler. The
// exchange's access line waits for the stream's end.
func (f *Frontend) adoptListen(w http.ResponseWriter, r *http.Request, ls *listen.ListenStream) {
	rec := httpx.RecordOf(w)
	var ended func()
	if rec != nil && !f.opts.NoAccessLog {
		h := &heldAccess{}
		h.left.Store(2)
		f.heldAccess.Store(rec, h)
		ended = func() {
			if h.done() {
				f.writeAccess(rec)
			}
		}
	}
	if f.hub.Adopt(w, r, ls, ended) {
		if rec != nil && rec.Status == 0 {
			rec.Status = http.StatusOK // written by the hub on the connection
		}
		return
	}
	f.plain.Adopt(w, r, ls, ended)
}

// writeAccess writes rec's access line, if the logger takes Info.
func (f *Frontend) writeAccess(rec *httpx.Record) {
	// Not the request's context: the line's fields are its own, and the
	// request is over.
	ctx := context.Background()
	if !f.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	var buf [18]slog.Attr
	f.log.LogAttrs(ctx, slog.LevelInfo, "access", accessAttrs(buf[:0], rec, time.Now())...)
}

// accessAttrs appends the fields of rec's access line, for an exchange
// over at end, to dst.
func accessAttrs(dst []slog.Attr, rec *httpx.Record, end time.Time) []slog.Attr {
	dst = append(dst,
		slog.String("http_method", logctx.Clip(rec.HTTPMethod, maxLogName)),
		slog.String(logctx.KeyMethod, logctx.Clip(rec.Method, maxLogName)))
	switch {
	case rec.Tool != "":
		dst = append(dst, slog.String(logctx.KeyTool, logctx.Clip(rec.Tool, maxLogName)))
	case rec.Prompt != "":
		dst = append(dst, slog.String(logctx.KeyPrompt, logctx.Clip(rec.Prompt, maxLogName)))
	case rec.Resource != "":
		dst = append(dst, slog.String(logctx.KeyResource, logctx.URI(rec.Resource)))
	}
	if rec.ID.IsValid() {
		dst = append(dst, logctx.IDAttr(logctx.KeyRPCID, rec.ID))
	}
	if rec.Session != "" {
		dst = append(dst, slog.String(logctx.KeySession, logctx.ShortSession(rec.Session)))
	}
	if rec.Principal != "" {
		dst = append(dst, slog.String("principal", logctx.Clip(rec.Principal, maxLogPrincipal)))
	}
	if rec.ProtocolVersion != "" {
		dst = append(dst, slog.String("protocol", logctx.Clip(rec.ProtocolVersion, maxLogName)))
	}
	dst = append(dst, slog.Int("status", rec.Status))
	if rec.ErrCode != 0 {
		dst = append(dst, slog.Int64("rpc_error", rec.ErrCode))
	}
	if et := rec.ErrorType(); et != "" {
		dst = append(dst, slog.String("error_type", et))
	}
	dst = append(dst,
		slog.String("outcome", rec.Outcome()),
		slog.Float64("duration", float64(end.Sub(rec.Start).Microseconds())/1000))
	if id := rec.TraceID(); id != "" {
		dst = append(dst, slog.String(logctx.KeyTraceID, id))
	}
	return append(dst, slog.String("remote", rec.Remote))
}

// Length caps of the client-chosen fields of an access line.
const (
	maxLogName      = 128
	maxLogPrincipal = 512
)
