package frontend

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Authentication (Options.Auth): every MCP request carries a bearer token
// the verifier accepts, or gets 401 with WWW-Authenticate pointing to the
// protected-resource metadata; missing scopes get 403. The principal binds
// what the request creates or touches: legacy sessions, listen streams,
// tasks, MRTR state (sealed with it by the workers).

type principalKey struct{}

// authenticated is the caller a request was authenticated as.
type authenticated struct {
	id     string // issuer#subject: what sessions, tasks and streams are bound to
	scopes []string
	p      *auth.Principal
}

// authenticate checks the request's token; it writes the 401 or 403 and
// returns false when the request may not go on.
func (f *Frontend) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	v := f.opts.Auth
	if v == nil {
		return r, true
	}
	tok, err := auth.BearerToken(r)
	var p *auth.Principal
	if err == nil {
		p, err = v.Verify(r.Context(), tok)
	}
	if err != nil {
		v.Challenge(w, r, err)
		msg := "Unauthorized: a bearer token is required"
		if errors.Is(err, auth.ErrInvalidToken) {
			msg = "Unauthorized: invalid bearer token"
		}
		httpx.HTTPError(w, http.StatusUnauthorized, protocol.CodeInvalidRequest, msg)
		return r, false
	}
	if !p.HasScopes(v.RequiredScopes()) {
		v.InsufficientScope(w, r, v.RequiredScopes())
		httpx.HTTPError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "Forbidden: insufficient scope (needs "+strings.Join(v.RequiredScopes(), " ")+")")
		return r, false
	}
	a := &authenticated{id: p.ID(v.Issuer()), scopes: p.Scopes, p: p}
	if rec := httpx.RecordOf(w); rec != nil {
		rec.Principal = a.id
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, a)), true
}

// principalOf returns the request's principal id ("" when authentication
// is off).
func principalOf(r *http.Request) string {
	if a, ok := r.Context().Value(principalKey{}).(*authenticated); ok {
		return a.id
	}
	return ""
}

// RequiredScopesMeta is the _meta key of a tool's required scopes (set by
// mcp.RequireScopes): tools/call checks them before forwarding.
const RequiredScopesMeta = mcp.RequiredScopesMeta

// toolScopesOK checks a tools/call's tool scopes; it writes the 403 and
// returns false when the caller lacks one.
func (f *Frontend) toolScopesOK(w http.ResponseWriter, r *http.Request, msg *protocol.Message, name *string) bool {
	a, ok := r.Context().Value(principalKey{}).(*authenticated)
	if !ok || name == nil {
		return true
	}
	need := f.fleet.ToolScopes(*name)
	if len(need) == 0 || a.p.HasScopes(need) {
		return true
	}
	f.opts.Auth.InsufficientScope(w, r, need)
	httpx.WriteError(w, http.StatusForbidden, msg.ID, protocol.NewError(protocol.CodeInvalidRequest, "Forbidden: tool %q needs the scopes %s", *name, strings.Join(need, " ")))
	return false
}
