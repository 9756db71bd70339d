package frontend

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// serveGet opens a legacy session's GET stream, or resumes a stream (GET
// or POST) after the event named by Last-Event-ID (stream.Streams.Get).
func (f *Frontend) serveGet(w http.ResponseWriter, r *http.Request) {
	if !httpx.Accepts(r, "text/event-stream") {
		httpx.HTTPError(w, http.StatusNotAcceptable, protocol.CodeInvalidRequest, "Not Acceptable: the Accept header must list text/event-stream")
		return
	}
	if r.Header.Get(hdrSessionID) == "" {
		// No session: a modern client, or a legacy one that has not
		// initialized. There is no standalone stream without a session.
		w.Header().Set("Allow", "POST")
		httpx.HTTPError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 clients use subscriptions/listen)")
		return
	}
	if !f.sessionVersionOK(w, r, protocol.ID{}) {
		return
	}
	sess, ok := f.loadSession(w, r, protocol.ID{})
	if !ok {
		return
	}
	f.streams.Get(w, r, sess, r.Header.Get(hdrLastEventID))
}

// serveDelete ends a legacy session everywhere: the record, its
// subscriptions and logs go, and every frontend closes its streams.
func (f *Frontend) serveDelete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		w.Header().Set("Allow", "POST")
		httpx.HTTPError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidRequest, "Method Not Allowed: DELETE needs an Mcp-Session-Id")
		return
	}
	if !sessionstore.ValidID(sid) {
		httpx.WriteError(w, http.StatusNotFound, protocol.ID{}, protocol.ErrSessionNotFound())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	sess, err := f.opts.Store.Get(ctx, sid)
	if err == nil && sess.Principal != principalOf(r) {
		err = sessionstore.ErrNotFound // another principal's session does not exist for this caller
	}
	if err == nil {
		err = f.opts.Store.Delete(ctx, sid)
	}
	if err == nil {
		f.limits.UncountSession(ctx, sess.Principal, sid, time.Now())
	}
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, protocol.ID{}, protocol.ErrSessionNotFound())
		return
	case err != nil:
		f.log.ErrorContext(ctx, "frontend: deleting a session", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrSessionStoreUnavailable())
		return
	}
	_ = f.nc.Publish(f.subj.SessionControl(sid), []byte(listen.CtlDeleted))
	f.metrics.Session("deleted")
	w.WriteHeader(http.StatusNoContent)
}
