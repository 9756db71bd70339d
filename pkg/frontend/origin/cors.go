package origin

import (
	"net/http"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// CORS: a web page of an allowed origin (Options.AllowedOrigins) may call
// the endpoint from a browser. Its preflight (OPTIONS) is answered 204 with
// what the endpoint accepts, and every answer to it (JSON, SSE, errors)
// names the origin and exposes the headers a client reads. An origin
// outside the list gets 403 and no CORS header at all (origin.go). No
// credentials mode: mcpfleet uses no cookies, and a bearer token is a
// request header the page sets (Authorization, allowed below).

// Methods are the methods the MCP endpoint takes (its Allow header), and
// those a page may use.
const Methods = "GET, POST, DELETE, OPTIONS"

// corsAllowHeaders are the request headers the endpoint reads (besides the
// Mcp-Param-* family, allowed by name after a check): a preflight allows
// them whether or not the page asked.
const corsAllowHeaders = "Accept, Authorization, Content-Type, Last-Event-ID, Mcp-Method, Mcp-Name, MCP-Protocol-Version, Mcp-Session-Id, Traceparent, Tracestate"

// corsExposeHeaders are the response headers a page's script may read.
const corsExposeHeaders = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"

// corsMaxAge is how long (seconds) a browser may reuse a preflight answer:
// Chromium's own cap.
const corsMaxAge = "7200"

// corsRequestHeaders are the lower-case names a preflight may ask for:
// corsAllowHeaders, and the CORS-safelisted ones a browser may list too.
var corsRequestHeaders = func() map[string]bool {
	m := map[string]bool{"accept-language": true, "content-language": true}
	for _, h := range strings.Split(corsAllowHeaders, ",") {
		m[strings.ToLower(strings.TrimSpace(h))] = true
	}
	return m
}()

// SetCORS adds the headers of an answer to an allowed origin.
func SetCORS(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
}

// WithCORS serves h with the CORS headers of an allowed origin (a simple
// GET, such as the protected-resource metadata a browser client reads
// before it has a token).
func (a *List) WithCORS(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && a.OriginOK(origin) {
			SetCORS(w.Header(), origin)
		}
		h(w, r)
	}
}

// clearCORS drops what SetCORS set: a refused preflight must not look
// allowed.
func clearCORS(h http.Header) {
	h.Del("Access-Control-Allow-Origin")
	h.Del("Access-Control-Expose-Headers")
}

// Preflight answers OPTIONS: a CORS preflight from an allowed origin (the
// caller checked it) gets 204 with the methods, the request headers and
// the max age; a plain OPTIONS gets 204 with Allow. A preflight asking
// for a method or a header the endpoint does not take gets 403, without
// CORS headers (the browser then refuses the request it was for).
func Preflight(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	method := r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		w.Header().Set("Allow", Methods)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
	default:
		clearCORS(w.Header())
		httpx.HTTPError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "Forbidden: CORS preflight for the method "+quote(method)+": the MCP endpoint takes GET, POST and DELETE")
		return
	}
	var params []string
	for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		switch {
		case name == "" || corsRequestHeaders[name]:
		case isParamHeader(name):
			params = append(params, name)
		default:
			clearCORS(w.Header())
			httpx.HTTPError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "Forbidden: CORS preflight for the request header "+quote(name)+", which the MCP endpoint does not read")
			return
		}
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", Methods)
	allow := corsAllowHeaders
	if len(params) > 0 {
		allow += ", " + strings.Join(params, ", ")
	}
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// isParamHeader reports whether a lower-case header name is an
// Mcp-Param-{Name} header whose name part is an HTTP token.
func isParamHeader(name string) bool {
	rest, ok := strings.CutPrefix(name, "mcp-param-")
	return ok && protocol.IsToken(rest)
}

// quote quotes a client-sent value for an error message, cut to a sane
// length.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `'`) + `"`
}
