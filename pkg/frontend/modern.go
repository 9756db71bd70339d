package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/limits"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks/taskhttp"
)

// postModern serves a 2026-07-28 request: self-contained, no session.
func (f *Frontend) postModern(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead, body []byte) {
	switch msg.Kind() {
	case protocol.KindResponse:
		httpx.HTTPError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: clients must not send JSON-RPC responses in 2026-07-28")
		return
	case protocol.KindNotification:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// An unknown or legacy-only method is 404 whatever else is wrong with
	// the request (SDKs send logging/setLevel without modern _meta).
	if !protocol.IsEraMethod(protocol.EraModern, msg.Method) {
		httpx.WriteError(w, http.StatusNotFound, msg.ID, protocol.ErrUnknownMethod(msg.Method))
		return
	}
	if e := checkModernMeta(r, head); e != nil {
		httpx.WriteError(w, stream.ModernStatus(e.Code), msg.ID, e)
		return
	}
	if e := checkModernHeaders(r, msg, head); e != nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
	if msg.Method == protocol.MethodSubscriptionsListen {
		f.serveListen(w, r, msg, head)
		return
	}
	if taskhttp.IsModernMethod(msg.Method) {
		f.taskAPI.ServeModern(w, r, msg, head)
		return
	}
	if head.RequestState != nil {
		// A requestState is single-use, whichever frontend and worker see
		// its retries: a replayed one is refused before any handler runs.
		// The use is the caller's: another principal presenting the state
		// (which the worker then refuses) does not use it up.
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		err := f.opts.Store.UseOnce(ctx, "mrtr:"+principalOf(r)+"\x00"+*head.RequestState, f.opts.StateTTL)
		cancel()
		switch {
		case errors.Is(err, sessionstore.ErrFull):
			w.Header().Set("Retry-After", "60")
			httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "Service Unavailable: too many multi-round requests in flight; retry later"))
			return
		case errors.Is(err, sessionstore.ErrUsed):
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrStateUsed())
			return
		case err != nil:
			f.log.ErrorContext(ctx, "frontend: recording a requestState", "err", err)
			httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, errStoreUnavailable())
			return
		}
	}
	if resp, ok := f.fleet.AnswerFromCatalog(protocol.EraModern, msg, head.Meta); ok {
		noteAnswer(w, resp)
		status := http.StatusOK
		if code, isErr := protocol.ResponseErrorCode(resp); isErr && code != protocol.CodeInvalidParams {
			status = stream.ModernStatus(code)
		}
		httpx.WriteJSON(w, status, resp, nil)
		return
	}
	if msg.Method == protocol.MethodToolsCall && !f.toolScopesOK(w, r, msg, head.Name) {
		return
	}
	rt := f.fleet.RouteFor(protocol.EraModern, msg.Method, head, msg.Params)
	if rt.Local != nil {
		httpx.WriteError(w, http.StatusOK, msg.ID, rt.Local)
		return
	}
	f.forward(w, r, &stream.Spec{Era: protocol.EraModern, Msg: msg, Subject: rt.Subject, Params: paramHeaders(r)}, nil)
}

// checkModernMeta checks the per-request _meta and the version: a missing
// required key is -32602, an unsupported version -32022 (with the
// supported list), a header that differs from the _meta version -32020.
func checkModernMeta(r *http.Request, head *protocol.ParamsHead) *protocol.Error {
	return protocol.CheckModernMeta(head.Meta, func(version string) *protocol.Error {
		hv := strings.TrimSpace(r.Header.Get(hdrProtocolVersion))
		switch {
		case hv == version:
			return nil
		case hv == "":
			return protocol.ErrHeaderMismatch("the MCP-Protocol-Version header is required")
		}
		return protocol.ErrHeaderMismatch("MCP-Protocol-Version %q does not equal _meta protocolVersion %q", hv, version)
	})
}

// checkModernHeaders checks Mcp-Method (every request) and Mcp-Name
// (tools/call, prompts/get: params.name; resources/read: params.uri)
// against the body. Header names are case-insensitive, values
// case-sensitive, surrounding whitespace is ignored, and values may use the
// =?base64?…?= form.
func checkModernHeaders(r *http.Request, msg *protocol.Message, head *protocol.ParamsHead) *protocol.Error {
	m, ok := headerValue(r, hdrMethod)
	switch {
	case !ok:
		return protocol.ErrHeaderMismatch("the Mcp-Method header is required")
	case m != msg.Method:
		return protocol.ErrHeaderMismatch("Mcp-Method %q does not match the body's method %q", m, msg.Method)
	}
	var want *string
	switch msg.Method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet:
		want = head.Name
	case protocol.MethodResourcesRead:
		want = head.URI
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		want = head.TaskID
	default:
		return nil
	}
	raw, present := headerValue(r, hdrName)
	if !present {
		if want == nil {
			return nil
		}
		return protocol.ErrHeaderMismatch("the Mcp-Name header is required for %s", msg.Method)
	}
	v, err := protocol.DecodeHeaderValue(raw)
	if err != nil {
		return protocol.ErrHeaderMismatch("Mcp-Name: %v", err)
	}
	if want == nil || v != *want {
		return protocol.ErrHeaderMismatch("Mcp-Name %q does not match the body", v)
	}
	return nil
}

// headerValue returns the header's value without surrounding whitespace;
// ok is false when the header is absent. A header sent twice is given as
// an invalid value, so it never matches.
func headerValue(r *http.Request, name string) (string, bool) {
	vs := r.Header.Values(name)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return strings.TrimSpace(vs[0]), true
	}
	return "\x00(sent several times)", true
}

// paramHeaders collects the Mcp-Param-* headers (name lower-cased after the
// prefix, value trimmed) for the worker, which checks them against the
// tool's x-mcp-header arguments.
func paramHeaders(r *http.Request) map[string]string {
	var out map[string]string
	for k, vs := range r.Header {
		if len(k) > len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") && len(vs) > 0 {
			if out == nil {
				out = map[string]string{}
			}
			v := strings.TrimSpace(vs[0])
			if len(vs) > 1 {
				v = "\x00(sent several times)" // as headerValue: never matches
			}
			out[strings.ToLower(k[len("Mcp-Param-"):])] = v
		}
	}
	return out
}

// serveListen serves subscriptions/listen: an SSE stream whose first
// message acknowledges the honoured filter, then the matching events
// tagged with the subscription id, keepalive comments, and on graceful
// shutdown the SubscriptionsListenResult.
func (f *Frontend) serveListen(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead) {
	var p protocol.ListenParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Notifications == nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.ErrListenNeedsFilter())
		return
	}
	for _, e := range []*protocol.Error{
		checkFilterList("resourceSubscriptions", p.Notifications.ResourceSubscriptions, maxURILen),
		checkFilterList("taskIds", p.Notifications.TaskIDs, maxTaskIDLen),
	} {
		if e != nil {
			httpx.WriteError(w, http.StatusBadRequest, msg.ID, e)
			return
		}
	}
	// Task ids are honoured for requests that declare the tasks
	// extension; for others they are dropped from the acknowledged filter,
	// like any type the server does not deliver.
	tasks := protocol.DeclaresTasks(head.Meta.ClientCapabilities)
	filter := listen.Honoured(p.Notifications, tasks)
	if len(filter.TaskIDs) > 0 {
		owned, err := f.taskAPI.OwnTasks(r.Context(), principalOf(r), filter.TaskIDs)
		if err != nil {
			f.log.WarnContext(r.Context(), "frontend: checking a listen stream's tasks", "err", err)
			httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, errStoreUnavailable())
			return
		}
		filter.TaskIDs = owned
	}
	ls, err := f.reg.OpenListen(clientKey(r), msg.ID, filter)
	switch {
	case errors.Is(err, listen.ErrTooMany):
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "too many listen streams on this server; retry later"))
		return
	case errors.Is(err, listen.ErrTooManyForClient):
		limits.WriteTooMany(w, msg.ID, 5*time.Second, "Too Many Requests: too many listen streams for this principal")
		return
	case errors.Is(err, listen.ErrBusLost):
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.ErrBusUnavailable())
		return
	case errors.Is(err, listen.ErrDuplicate):
		httpx.WriteError(w, http.StatusConflict, msg.ID, protocol.NewError(protocol.CodeInvalidRequest, "invalid request: a listen stream with subscription id %s is already open", msg.ID))
		return
	case err != nil:
		f.log.WarnContext(r.Context(), "frontend: opening a listen stream", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.ErrStreamNotOpened())
		return
	}
	f.adoptListen(w, r, ls)
}

// Limits of one listen stream's filter.
const (
	maxListenURIs = 256
	maxURILen     = limits.MaxURILen
	maxTaskIDLen  = 256 // task ids this server makes are 22 bytes
)

// checkFilterList checks one list of a listen filter: at most
// maxListenURIs entries of at most maxLen bytes each.
func checkFilterList(name string, list []string, maxLen int) *protocol.Error {
	if len(list) > maxListenURIs {
		return protocol.NewError(protocol.CodeInvalidParams, "invalid params: at most %d %s per listen stream (got %d)", maxListenURIs, name, len(list))
	}
	for _, v := range list {
		if len(v) > maxLen {
			return protocol.NewError(protocol.CodeInvalidParams, "invalid params: a %s entry is longer than %d bytes", name, maxLen)
		}
	}
	return nil
}

// clientKey names the client of a listen stream for duplicate detection:
// its connection (stateless HTTP has no other identity without auth).
func clientKey(r *http.Request) string {
	if p := principalOf(r); p != "" {
		return p
	}
	return r.RemoteAddr
}

// errStoreUnavailable answers a 2026-07-28 request the frontend could not
// check against a store (the session store recording a requestState, the
// task store owning a listen filter's tasks): -32603 "store unavailable;
// retry", sent with HTTP 503.
func errStoreUnavailable() *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "store unavailable; retry")
}
