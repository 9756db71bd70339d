package frontend

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/origin"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// HTTP header names (canonical form).
const (
	hdrSessionID       = "Mcp-Session-Id"
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
	hdrLastEventID     = "Last-Event-Id"
)

func (f *Frontend) serveMCP(w http.ResponseWriter, r *http.Request) {
	orig := r.Header.Get("Origin")
	originOK := f.hostCheck.OriginOK(orig)
	if orig != "" && originOK {
		origin.SetCORS(w.Header(), orig) // on every answer, errors included
	}
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		w.Header().Set("Connection", "close")
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "server is shutting down; retry on another instance")
		return
	}
	f.active.Add(1)
	f.mu.Unlock()
	defer f.active.Done()
	if f.leaving.Load() {
		// Draining soon: this connection is not kept for another request,
		// so a proxy never sends one on it as it closes.
		w.Header().Set("Connection", "close")
	}
	rec := httpx.NewRecorder(w, r, time.Now())
	w = rec
	r = f.observeStart(r, &rec.Rec)
	defer f.observeEnd(r, &rec.Rec)

	if !f.hostCheck.HostOK(r.Host) {
		httpx.HTTPError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "Forbidden: Host header not allowed")
		return
	}
	if !originOK {
		httpx.HTTPError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "Forbidden: Origin not allowed (see --allowed-origins)")
		return
	}
	if r.Method == http.MethodOptions {
		origin.Preflight(w, r) // before authentication: browsers send no token on a preflight
		return
	}
	if f.busUnavailable(w) { // NATS lost: nothing can be forwarded nor fed
		return
	}
	r, ok := f.authenticate(w, r)
	if !ok || f.limits.RateLimited(w, principalOf(r)) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		f.servePost(w, r)
	case http.MethodGet:
		f.serveGet(w, r)
	case http.MethodDelete:
		f.serveDelete(w, r)
	default:
		w.Header().Set("Allow", origin.Methods)
		httpx.HTTPError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed")
	}
}

func (f *Frontend) servePost(w http.ResponseWriter, r *http.Request) {
	if !httpx.Accepts(r, "application/json") || !httpx.Accepts(r, "text/event-stream") {
		httpx.HTTPError(w, http.StatusNotAcceptable, protocol.CodeInvalidRequest, "Not Acceptable: the Accept header must list both application/json and text/event-stream")
		return
	}
	if !httpx.IsJSONContentType(r) {
		httpx.HTTPError(w, http.StatusUnsupportedMediaType, protocol.CodeInvalidRequest, "Unsupported Media Type: Content-Type must be application/json")
		return
	}
	if r.ContentLength > f.opts.MaxBodyBytes {
		httpx.HTTPError(w, http.StatusRequestEntityTooLarge, protocol.CodeInvalidRequest, "Request Entity Too Large: the body exceeds the size limit")
		return
	}
	httpx.SetReadDeadline(w, time.Now().Add(f.opts.BodyTimeout))
	body, err := readBody(w, r, f.opts.MaxBodyBytes)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The deadline stays: net/http does not then wait for the
			// rest of the body before it closes the connection.
			w.Header().Set("Connection", "close")
			httpx.HTTPError(w, http.StatusRequestTimeout, protocol.CodeInvalidRequest, "Request Timeout: the body did not arrive within the body timeout")
			return
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpx.HTTPError(w, http.StatusRequestEntityTooLarge, protocol.CodeInvalidRequest, "Request Entity Too Large: the body exceeds the size limit")
			return
		}
		httpx.HTTPError(w, http.StatusBadRequest, protocol.CodeParseError, "Bad Request: could not read the body")
		return
	}
	httpx.SetReadDeadline(w, time.Time{})
	// Read to its end: closed, net/http does not read it again for a
	// rest (io.CopyN) before the response.
	_ = r.Body.Close()
	var head protocol.ParamsHead
	msg, headErr, err := protocol.DecodeWithHead(body, f.opts.MaxDepth, &head)
	if err != nil {
		var de *protocol.DecodeError
		if errors.As(err, &de) {
			httpx.WriteError(w, http.StatusBadRequest, de.ID, de.Err)
			return
		}
		httpx.WriteError(w, http.StatusBadRequest, protocol.ID{}, protocol.ErrUnparsable())
		return
	}
	if err := f.limits.CheckSizes(msg, body); err != nil {
		id := msg.ID
		if n := f.limits.MaxStringBytes(); n > 0 && len(id.Str()) > n {
			id = protocol.ID{} // the id itself is what is too long: not echoed
		}
		httpx.WriteError(w, http.StatusBadRequest, id, protocol.NewError(protocol.CodeInvalidRequest, "invalid request: %v", err))
		return
	}
	rec := httpx.RecordOf(w)
	if rec == nil {
		rec = &httpx.Record{}
	}
	if msg.Kind() == protocol.KindResponse {
		rec.Method = "response"
	} else {
		rec.Method = msg.Method
	}
	rec.ID = msg.ID
	if headErr != nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.ErrBadParams(headErr))
		return
	}
	noteTarget(rec, msg.Method, &head)
	f.beginOperation(w, msg)
	f.startSpan(r, rec, &head)
	if f.eraOf(r, msg, &head) == protocol.EraLegacy {
		f.postLegacy(w, r, msg, &head, body)
		return
	}
	f.postModern(w, r, msg, &head, body)
}

// eraOf chooses the era of a POST: modern when it carries modern _meta,
// whatever else it carries (a gateway may add an Mcp-Session-Id to every
// request; 2026-07-28 servers ignore it, and an initialize sent the modern
// way is a removed method, 404); legacy when it carries a session id;
// otherwise legacy when it is initialize or its MCP-Protocol-Version
// header is legacy or absent; modern otherwise.
func (f *Frontend) eraOf(r *http.Request, msg *protocol.Message, head *protocol.ParamsHead) protocol.Era {
	if protocol.IsModernMeta(head.Meta) {
		return protocol.EraModern
	}
	if r.Header.Get(hdrSessionID) != "" {
		return protocol.EraLegacy
	}
	v := r.Header.Get(hdrProtocolVersion)
	if msg.Method == protocol.MethodInitialize || v == "" || protocol.IsLegacyVersion(v) {
		return protocol.EraLegacy
	}
	return protocol.EraModern
}

// readBody reads a POST body of at most max bytes (a larger one is an
// *http.MaxBytesError). A body of a known length, within max (the caller
// checked), is read into a buffer of that size when small, and grown as
// its bytes arrive otherwise: a Content-Length alone pins no memory.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > max {
		return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	}
	body := make([]byte, 0, min(n, bodyUpFront))
	for int64(len(body)) < n {
		if len(body) == cap(body) {
			body = slices.Grow(body, int(min(n-int64(len(body)), int64(len(body)))))
		}
		m, err := r.Body.Read(body[len(body):min(int64(cap(body)), n)])
		body = body[:len(body)+m]
		switch {
		case err == io.EOF && int64(len(body)) < n:
			return nil, io.ErrUnexpectedEOF
		case err == io.EOF:
			return body, nil
		case err != nil:
			return nil, err
		}
	}
	return body, nil
}

// bodyUpFront is the most readBody allocates before a body's bytes come.
const bodyUpFront = 64 << 10
