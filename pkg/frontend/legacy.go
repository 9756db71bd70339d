package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/limits"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks/taskhttp"
)

// storeTimeout bounds one session-store call made for a request.
const storeTimeout = 5 * time.Second

// sessionCall returns the context of a session-store Get, Begin or End
// made for a request: parent bounded by storeTimeout, or parent itself
// when those calls never wait (sessionstore.Immediate: the all-in-one's
// Memory store), which saves a timer and a context per call.
func (f *Frontend) sessionCall(parent context.Context) (context.Context, context.CancelFunc) {
	if _, ok := f.opts.Store.(sessionstore.Immediate); ok {
		return parent, noCancel
	}
	return context.WithTimeout(parent, storeTimeout)
}

func noCancel() {}

func (f *Frontend) postLegacy(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead, body []byte) {
	if !f.sessionVersionOK(w, r, msg.ID) {
		return
	}
	if msg.Kind() == protocol.KindRequest && msg.Method == protocol.MethodInitialize {
		f.initialize(w, r, msg, body)
		return
	}
	var (
		call *legacyCall
		cl   *claim
	)
	if forwarded(msg) {
		// One round trip reads the session and claims the request id, so a
		// reused id is refused whichever frontend and worker run the first.
		call = &legacyCall{claim: claim{id: msg.ID.String(), token: f.claimToken()}}
		cl = &call.claim
	}
	sess, ok := f.loadSessionFor(w, r, msg.ID, cl)
	if !ok {
		return
	}
	switch msg.Kind() {
	case protocol.KindNotification:
		f.legacyNotification(r.Context(), sess, msg, head)
		w.WriteHeader(http.StatusAccepted)
	case protocol.KindResponse:
		f.clientAnswer(w, r, sess, msg, body)
	case protocol.KindRequest:
		f.legacyRequest(w, r, sess, msg, head, body, call)
	}
}

// legacyCall is what a forwarded legacy request keeps for its life, in
// one allocation: the claim on its id, and the spec it is forwarded with
// and the session snapshot the spec names (when it gets that far).
type legacyCall struct {
	claim claim
	spec  stream.Spec
	info  bus.SessionInfo
}

// claimToken returns a new claim token: the frontend's id, "/" and a
// stream.NewStreamID('c').
func (f *Frontend) claimToken() string {
	var b [stream.MaxFrontendIDLen + 1 + 17]byte
	return string(stream.AppendStreamID(append(append(b[:0], f.id...), '/'), 'c'))
}

// sessionVersionOK checks the MCP-Protocol-Version header of a session's
// request (or of initialize): absent or a session version. Otherwise it
// writes 400 saying what is wrong: a 2026-07-28 version is supported, but
// not by a session (which then names the version it negotiated).
func (f *Frontend) sessionVersionOK(w http.ResponseWriter, r *http.Request, id protocol.ID) bool {
	v := r.Header.Get(hdrProtocolVersion)
	if v == "" || protocol.IsLegacyVersion(v) {
		return true
	}
	var e *protocol.Error
	sid := r.Header.Get(hdrSessionID)
	switch {
	case !protocol.IsModernVersion(v):
		e = protocol.NewError(protocol.CodeInvalidRequest, "Bad Request: unsupported MCP-Protocol-Version %q (a session speaks one of %v; 2026-07-28 requests carry no session)",
			v, protocol.LegacyVersions())
	case sid == "":
		e = protocol.NewError(protocol.CodeInvalidRequest, "Bad Request: initialize starts a session of the 2025-11-25 era or older, but MCP-Protocol-Version is %q: "+
			"send one of %v, or none; a 2026-07-28 client sends no initialize (server/discover, and params._meta on every request)", v, protocol.LegacyVersions())
	default:
		const modern = "2026-07-28 requests carry no Mcp-Session-Id and name their version in params._meta"
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		s, err := f.opts.Store.Get(ctx, sid)
		cancel()
		if err == nil && s.Principal == principalOf(r) {
			e = protocol.NewError(protocol.CodeInvalidRequest, "Bad Request: this session negotiated %s, so its requests carry MCP-Protocol-Version %s, not %q: "+modern,
				s.ProtocolVersion, s.ProtocolVersion, v)
		} else {
			e = protocol.NewError(protocol.CodeInvalidRequest, "Bad Request: a session's requests carry the MCP-Protocol-Version it negotiated in initialize, not %q: "+modern, v)
		}
	}
	httpx.WriteError(w, http.StatusBadRequest, id, e)
	return false
}

// claim is a request id claimed in the store for the life of a request.
type claim struct {
	session, id, token string
}

// forwarded reports whether a legacy message is a request the workers run
// (and so claims its id).
func forwarded(msg *protocol.Message) bool {
	return msg.Kind() == protocol.KindRequest && protocol.IsEraMethod(protocol.EraLegacy, msg.Method) && !mcp.IsCatalogMethod(msg.Method) &&
		msg.Method != protocol.MethodPing && msg.Method != protocol.MethodLoggingSetLevel
}

// loadSession reads the session named by the Mcp-Session-Id header. It
// writes 400 when the header is missing, 404 when the session is unknown or
// expired, and 503 when the store fails; ok is false then.
func (f *Frontend) loadSession(w http.ResponseWriter, r *http.Request, id protocol.ID) (*sessionstore.Session, bool) {
	return f.loadSessionFor(w, r, id, nil)
}

// loadSessionFor is loadSession that also claims the request id when c is
// set (Store.Begin); a claimed id is refused with -32600.
func (f *Frontend) loadSessionFor(w http.ResponseWriter, r *http.Request, id protocol.ID, c *claim) (*sessionstore.Session, bool) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		httpx.WriteError(w, http.StatusBadRequest, id, protocol.NewError(protocol.CodeInvalidRequest,
			"Bad Request: Mcp-Session-Id header is required (send initialize first)"))
		return nil, false
	}
	if !sessionstore.ValidID(sid) {
		httpx.WriteError(w, http.StatusNotFound, id, protocol.ErrSessionNotFound())
		return nil, false
	}
	ctx, cancel := f.sessionCall(r.Context())
	defer cancel()
	var (
		s   *sessionstore.Session
		err error
	)
	if c != nil {
		c.session = sid
		s, err = f.opts.Store.Begin(ctx, sid, c.id, c.token, f.opts.RequestTimeout+storeTimeout)
	} else {
		s, err = f.opts.Store.Get(ctx, sid)
	}
	switch {
	case errors.Is(err, sessionstore.ErrInFlight):
		httpx.WriteError(w, http.StatusOK, id, protocol.ErrRequestIDInUse(id))
		return nil, false
	case errors.Is(err, sessionstore.ErrNotFound):
		httpx.WriteError(w, http.StatusNotFound, id, protocol.ErrSessionNotFound())
		return nil, false
	case err != nil:
		f.log.ErrorContext(ctx, "frontend: loading a session", "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, id, protocol.ErrSessionStoreUnavailable())
		return nil, false
	}
	if s.Principal != principalOf(r) {
		// Another principal's session does not exist for this caller.
		f.release(c)
		httpx.WriteError(w, http.StatusNotFound, id, protocol.ErrSessionNotFound())
		return nil, false
	}
	if rec := httpx.RecordOf(w); rec != nil {
		rec.Session, rec.ProtocolVersion = s.ID, s.ProtocolVersion
	}
	return s, true
}

// snapshot returns what the bus carries of session s (pointing into s).
func snapshot(s *sessionstore.Session) *bus.SessionInfo {
	info := new(bus.SessionInfo)
	snapshotTo(info, s)
	return info
}

// snapshotTo sets info to what the bus carries of session s.
func snapshotTo(info *bus.SessionInfo, s *sessionstore.Session) {
	*info = bus.SessionInfo{
		ID:                 s.ID,
		ProtocolVersion:    s.ProtocolVersion,
		ClientInfo:         &s.ClientInfo,
		ClientCapabilities: &s.ClientCapabilities,
		LogLevel:           s.LogLevel,
	}
}

// initialize forwards initialize to a worker and, when it succeeds, creates
// the session before answering with its Mcp-Session-Id. A failed
// initialize leaves nothing behind.
func (f *Frontend) initialize(w http.ResponseWriter, r *http.Request, msg *protocol.Message, body []byte) {
	p, ok := f.initializeParams(w, r, msg)
	if !ok {
		return
	}
	principal := principalOf(r)
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	capped := f.limits.SessionCapReached(ctx, principal, time.Now())
	cancel()
	if capped {
		limits.WriteTooMany(w, msg.ID, time.Minute, limits.SessionCapMessage)
		return
	}
	var sid string
	spec := &stream.Spec{
		Era: protocol.EraLegacy, Msg: msg, NoSSE: true,
		// The session is stored when the answer succeeds, before the
		// client sees it; a failed initialize leaves nothing behind.
		Effect: func(resp []byte) (err error) {
			sid, err = f.createSession(resp, p, principal)
			return err
		},
		Respond: func(_ []byte, h http.Header) int {
			if sid == "" {
				return http.StatusBadRequest // the initialize was refused
			}
			h.Set(hdrSessionID, sid)
			if rec := httpx.RecordOf(w); rec != nil {
				rec.Session = sid
			}
			return http.StatusOK
		},
	}
	// The union of the workers' catalogs answers initialize here; a
	// worker does when none is known yet.
	if resp, ok := f.fleet.AnswerFromCatalog(protocol.EraLegacy, msg, nil); ok {
		if err := spec.Effect(resp); err != nil {
			f.limits.WriteSessionNotCreated(w, msg.ID, err)
			return
		}
		h := http.Header{}
		status := spec.Respond(resp, h)
		httpx.WriteJSON(w, status, resp, func(hh http.Header) {
			for k, v := range h {
				hh[k] = v
			}
		})
		return
	}
	f.forward(w, r, spec, nil)
}

// initializeParams checks an initialize (no session yet, params present,
// within MaxInitializeBytes, valid) and returns its params; it answers the
// refusal and returns false otherwise.
func (f *Frontend) initializeParams(w http.ResponseWriter, r *http.Request, msg *protocol.Message) (*protocol.InitializeParams, bool) {
	if sid := r.Header.Get(hdrSessionID); sid != "" {
		if _, ok := f.loadSession(w, r, msg.ID); !ok {
			return nil, false
		}
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.ErrAlreadyInitialized())
		return nil, false
	}
	var p protocol.InitializeParams
	if msg.Params == nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.ErrInitializeNeedsParams())
		return nil, false
	}
	if f.opts.MaxInitializeBytes > 0 && len(msg.Params) > f.opts.MaxInitializeBytes {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.NewError(protocol.CodeInvalidParams,
			"invalid params: initialize params of %d bytes, over the %d the server keeps for a session (capabilities and clientInfo)", len(msg.Params), f.opts.MaxInitializeBytes))
		return nil, false
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.ErrBadParams(err))
		return nil, false
	}
	if e := p.Validate(); e != nil {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, e)
		return nil, false
	}
	return &p, true
}

// createSession stores the session an initialize response creates and
// returns its id: "" (and no error) when the response is an error, an
// error when the response is malformed or the session cannot be stored
// (the principal's count is then left as it was).
func (f *Frontend) createSession(resp []byte, p *protocol.InitializeParams, principal string) (string, error) {
	m, err := protocol.Decode(resp, 0)
	if err != nil || m.Kind() != protocol.KindResponse {
		return "", errors.New("frontend: malformed initialize response")
	}
	if m.Error != nil {
		return "", nil
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || res.ProtocolVersion == "" {
		return "", errors.New("frontend: initialize result without protocolVersion")
	}
	s := &sessionstore.Session{
		ID:                 sessionstore.NewID(),
		ProtocolVersion:    res.ProtocolVersion,
		ClientInfo:         *p.ClientInfo,
		ClientCapabilities: *p.Capabilities,
		Initialized:        true,
		Principal:          principal,
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := f.limits.CountSession(ctx, principal, s.ID, time.Now()); err != nil {
		return "", err
	}
	if err := f.opts.Store.Create(ctx, s); err != nil {
		f.limits.UncountSession(ctx, principal, s.ID, time.Now())
		return "", err
	}
	f.metrics.Session("created")
	return s.ID, nil
}

// legacyRequest answers or forwards a legacy request; call is set when
// the request's id is claimed (forwarded).
func (f *Frontend) legacyRequest(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, msg *protocol.Message, head *protocol.ParamsHead, body []byte, call *legacyCall) {
	var c *claim
	if call != nil {
		c = &call.claim
	}
	switch {
	case !protocol.IsEraMethod(protocol.EraLegacy, msg.Method):
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrUnknownMethod(msg.Method))
		return
	case msg.Method == protocol.MethodPing:
		httpx.WriteJSON(w, http.StatusOK, protocol.AppendResponse(nil, msg.ID, []byte("{}")), nil)
		return
	case msg.Method == protocol.MethodLoggingSetLevel:
		var p protocol.SetLevelParams
		if msg.Params != nil {
			_ = json.Unmarshal(msg.Params, &p)
		}
		if !p.Level.Valid() {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrUnknownLogLevel(p.Level))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		defer cancel()
		if err := f.opts.Store.Update(ctx, sess.ID, sessionstore.Patch{LogLevel: &p.Level}); err != nil {
			if errors.Is(err, sessionstore.ErrNotFound) {
				httpx.WriteError(w, http.StatusNotFound, msg.ID, protocol.ErrSessionNotFound())
				return
			}
			httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.ErrSessionStoreUnavailable())
			return
		}
		httpx.WriteJSON(w, http.StatusOK, protocol.AppendResponse(nil, msg.ID, []byte("{}")), nil)
		return
	}
	if resp, ok := f.fleet.AnswerFromCatalog(protocol.EraLegacy, msg, nil); ok {
		f.release(c)
		noteAnswer(w, resp)
		httpx.WriteJSON(w, http.StatusOK, resp, nil)
		return
	}
	if taskhttp.IsLegacyMethod(msg.Method) {
		defer f.release(c) // the id stays claimed while tasks/result waits
		f.taskAPI.ServeLegacy(w, r, sess.ID, msg)
		return
	}
	if msg.Method == protocol.MethodToolsCall && !f.toolScopesOK(w, r, msg, head.Name) {
		f.release(c)
		return
	}
	rt := f.fleet.RouteFor(protocol.EraLegacy, msg.Method, head, msg.Params)
	if rt.Local != nil {
		f.release(c)
		httpx.WriteError(w, http.StatusOK, msg.ID, rt.Local)
		return
	}
	if msg.Method == protocol.MethodResourcesSubscribe {
		if e := f.limits.SubscriptionRoom(r.Context(), sess.ID, head.URI); e != nil {
			f.release(c)
			httpx.WriteError(w, http.StatusOK, msg.ID, e)
			return
		}
	}
	if call == nil {
		call = new(legacyCall)
	}
	snapshotTo(&call.info, sess)
	spec := &call.spec
	*spec = stream.Spec{Era: protocol.EraLegacy, Msg: msg, Session: &call.info, Subject: rt.Subject}
	if msg.Method == protocol.MethodResourcesSubscribe || msg.Method == protocol.MethodResourcesUnsubscribe {
		// The worker validates (capability, author hook); on success the
		// subscription is recorded here, where the store is.
		spec.Effect = func(resp []byte) error {
			return f.recordSubscription(sess.ID, msg.Method == protocol.MethodResourcesSubscribe, resp, head)
		}
	}
	f.forward(w, r, spec, c)
}

// forward hands a request to the client streams (stream.Streams.Forward),
// with the caller's principal and the claim on its request id (legacy, or
// nil), released when the request is over.
func (f *Frontend) forward(w http.ResponseWriter, r *http.Request, spec *stream.Spec, c *claim) {
	spec.Principal = principalOf(r)
	if c != nil {
		spec.Release = func() { f.release(c) }
	}
	f.streams.Forward(w, r, spec)
}

// release ends a request id claim (Store.End). It runs after the
// response was written, so it costs the client no latency; a client that
// reuses the id at once may still find it claimed for that moment.
func (f *Frontend) release(c *claim) {
	if c == nil {
		return
	}
	ctx, cancel := f.sessionCall(context.Background())
	defer cancel()
	if err := f.opts.Store.End(ctx, c.session, c.id, c.token); err != nil {
		f.log.Warn("frontend: releasing a request id", "err", err)
	}
}

// recordSubscription stores a legacy resource (un)subscription the worker
// accepted, before the answer goes: an update raised after the answer
// reaches the session's GET log.
func (f *Frontend) recordSubscription(session string, subscribe bool, resp []byte, head *protocol.ParamsHead) error {
	m, err := protocol.Decode(resp, 0)
	if err != nil || m.Error != nil || head.URI == nil {
		return nil // an error answer is passed through as is
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if subscribe {
		err = f.opts.Store.Subscribe(ctx, session, *head.URI)
	} else {
		err = f.opts.Store.Unsubscribe(ctx, session, *head.URI)
	}
	// Once the store has it, the next resources/updated for the URI is
	// logged for the session by whichever frontend takes it (the store's
	// subscriber index): nothing to announce.
	return err
}

func (f *Frontend) legacyNotification(ctx context.Context, sess *sessionstore.Session, msg *protocol.Message, head *protocol.ParamsHead) {
	switch msg.Method {
	case protocol.NotificationInitialized:
		t := true
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		if err := f.opts.Store.Update(ctx, sess.ID, sessionstore.Patch{ClientInitialized: &t}); err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
			f.log.WarnContext(ctx, "frontend: recording notifications/initialized", "err", err)
		}
	case protocol.NotificationRootsListChanged:
		// For the server author's callback, on any one worker.
		hdr := &bus.RequestHeader{Era: protocol.EraLegacy, Frontend: f.id, Session: snapshot(sess), Principal: sess.Principal}
		raw := protocol.AppendNotification(nil, msg.Method, msg.Params)
		if data, err := bus.EncodeRequestAs(f.fleet.RequestFormat(), hdr, raw); err == nil {
			_ = f.nc.Publish(f.subj.Request(msg.Method, ""), data)
		}
	case protocol.NotificationCancelled:
		var id protocol.ID
		if len(head.RequestID) == 0 || id.UnmarshalJSON(head.RequestID) != nil {
			return // malformed cancels are ignored
		}
		if err := f.nc.Publish(f.subj.Cancel(), []byte(bus.CancelKeyLegacy(sess.ID, id))); err != nil {
			f.log.WarnContext(ctx, "frontend: publishing a cancel", "err", err)
		}
	}
}

// clientAnswer routes a client's answer to a server-to-client request to
// the worker that asked, whichever it is.
func (f *Frontend) clientAnswer(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, msg *protocol.Message, body []byte) {
	if f.taskAPI.LegacyAnswer(w, r, sess.ID, msg) {
		return
	}
	worker, ok := bus.ParseServerRequestID(msg.ID)
	if !ok {
		httpx.HTTPError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Bad Request: the response does not answer a request of this server")
		return
	}
	data, err := bus.EncodeAnswer(&bus.ClientAnswer{Session: sess.ID}, body)
	if err == nil {
		err = f.nc.Publish(f.subj.WorkerInbox(worker), data)
	}
	if err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrBusUnavailable())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
