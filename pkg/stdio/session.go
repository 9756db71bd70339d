package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"go.opentelemetry.io/otel/trace"
)

// store is what the session keeps in its private memory store: the
// session record (the legacy session's version, client declarations, log
// level and resource subscriptions), the claims on the request ids in
// flight, and the used requestStates.
type store interface {
	sessionstore.Sessions
	sessionstore.Claims
	sessionstore.OnceSet
}

// session is the state of the one client of the process.
type session struct {
	srv  *mcp.Server
	opts *Options
	// tracer makes the requests' SERVER spans (trace.go); nil: none.
	tracer trace.Tracer
	log    *slog.Logger
	out    *writer
	store  store
	id     string // the session id handlers see, and the record's key
	// baseCtx is the parent of the handlers' contexts; Serve cancels it.
	baseCtx context.Context
	// storeCtx bounds the store's calls: baseCtx without its cancellation,
	// since a memory store never blocks and claims are released during
	// shutdown too.
	storeCtx context.Context

	mu sync.Mutex
	wg sync.WaitGroup // handler goroutines
	// era is locked by the client's opening (zero until then); the store
	// holds the session record from then on.
	era protocol.Era
	// calls are the requests in flight, listens the open listen streams,
	// by claim key (idKey); each holds a claim on its id in the store.
	calls   map[string]*call
	listens map[string]*listenSub
	// pending are the server-to-client requests waiting for the client's
	// answer, by their id (String form).
	pending   map[string]chan clientAnswer
	nextOut   uint64
	nextToken uint64 // of claims
	closing   bool
}

func newSession(ctx context.Context, srv *mcp.Server, o *Options, out *writer, st store) *session {
	return &session{
		srv: srv, opts: o, log: o.Logger, out: out, store: st, tracer: newTracer(o.TracerProvider),
		id:      "stdio-" + randomHex(8),
		baseCtx: ctx, storeCtx: context.WithoutCancel(ctx),
		calls: map[string]*call{}, listens: map[string]*listenSub{}, pending: map[string]chan clientAnswer{},
	}
}

// request routes a client request by the era, locking it on the opening.
func (s *session) request(msg *protocol.Message, head *protocol.ParamsHead) {
	s.mu.Lock()
	era := s.era
	s.mu.Unlock()
	if era == 0 {
		switch {
		case msg.Method == protocol.MethodPing:
			s.write(protocol.AppendResponse(nil, msg.ID, []byte("{}")))
			return
		case msg.Method == protocol.MethodInitialize:
			s.initialize(msg)
			return
		case msg.Method == protocol.MethodServerDiscover || protocol.IsModernMeta(head.Meta):
			// The record only scopes the claims of the modern requests.
			if !s.open(msg.ID, &sessionstore.Session{ID: s.id}) {
				return
			}
			era = protocol.EraModern
			s.mu.Lock()
			s.era = era
			s.mu.Unlock()
		default:
			s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidRequest,
				"invalid request: send initialize first (2025-11-25), or server/discover or requests with 2026-07-28 _meta"))
			return
		}
	}
	if era == protocol.EraLegacy {
		s.legacyRequest(msg, head)
		return
	}
	s.modernRequest(msg, head)
}

// open stores the session record; on failure it answers the request and
// reports false.
func (s *session) open(id protocol.ID, rec *sessionstore.Session) bool {
	if err := s.store.Create(s.storeCtx, rec); err != nil {
		s.log.Error("stdio: storing the session record", "err", err)
		s.writeError(id, protocol.ErrInternalFailure())
		return false
	}
	return true
}

// initialize opens a legacy session; a failed one leaves the era open.
func (s *session) initialize(msg *protocol.Message) {
	var p protocol.InitializeParams
	if msg.Params == nil {
		s.writeError(msg.ID, protocol.ErrInitializeNeedsParams())
		return
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		s.writeError(msg.ID, protocol.ErrBadParams(err))
		return
	}
	if e := p.Validate(); e != nil {
		s.writeError(msg.ID, e)
		return
	}
	req := mcp.NewRequest(&mcp.RequestInit{Method: msg.Method, ID: msg.ID, Era: protocol.EraLegacy, Features: Features,
		ClientInfo: p.ClientInfo, ClientCapabilities: p.Capabilities})
	ctx, span := s.startSpan(s.baseCtx, msg)
	res, err := s.srv.Handle(ctx, req, msg.Params)
	if err != nil {
		e := protocol.AsError(err)
		endSpan(span, req, msg, nil, e, false)
		s.writeError(msg.ID, e)
		return
	}
	endSpan(span, req, msg, res, nil, false)
	ir, ok := res.(*protocol.InitializeResult)
	if !ok {
		s.writeError(msg.ID, protocol.ErrInternalFailure())
		return
	}
	if !s.open(msg.ID, &sessionstore.Session{ID: s.id, ProtocolVersion: ir.ProtocolVersion,
		ClientInfo: *p.ClientInfo, ClientCapabilities: *p.Capabilities, Initialized: true}) {
		return
	}
	s.mu.Lock()
	s.era = protocol.EraLegacy
	s.mu.Unlock()
	s.writeResult(msg.ID, res)
}

// legacyRequest serves a request of the 2025-11-25 session.
func (s *session) legacyRequest(msg *protocol.Message, head *protocol.ParamsHead) {
	switch msg.Method {
	case protocol.MethodInitialize:
		s.writeError(msg.ID, protocol.ErrAlreadyInitialized())
		return
	case protocol.MethodPing:
		s.write(protocol.AppendResponse(nil, msg.ID, []byte("{}")))
		return
	}
	if !protocol.IsEraMethod(protocol.EraLegacy, msg.Method) {
		s.writeError(msg.ID, protocol.ErrUnknownMethod(msg.Method))
		return
	}
	s.run(msg, func(rec *sessionstore.Session) *mcp.RequestInit { return s.legacyInit(msg.Method, msg.ID, rec) },
		s.legacyEffect(msg, head))
}

// legacyInit describes a request (or, with no id, a notification) of the
// legacy session whose record is rec.
func (s *session) legacyInit(method string, id protocol.ID, rec *sessionstore.Session) *mcp.RequestInit {
	return &mcp.RequestInit{
		Method: method, ID: id, Era: protocol.EraLegacy, ProtocolVersion: rec.ProtocolVersion,
		SessionID: s.id, ClientInfo: &rec.ClientInfo, ClientCapabilities: &rec.ClientCapabilities, LogLevel: rec.LogLevel,
		Features: Features,
	}
}

// legacyEffect is what a successful legacy request changes in the session
// record (its log level, its resource subscriptions), or nil.
func (s *session) legacyEffect(msg *protocol.Message, head *protocol.ParamsHead) func() {
	switch msg.Method {
	case protocol.MethodLoggingSetLevel:
		var p protocol.SetLevelParams
		_ = json.Unmarshal(msg.Params, &p)
		return func() {
			if err := s.store.Update(s.storeCtx, s.id, sessionstore.Patch{LogLevel: &p.Level}); err != nil {
				s.log.Error("stdio: recording the log level", "err", err)
			}
		}
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		subscribe := msg.Method == protocol.MethodResourcesSubscribe
		return func() {
			var err error
			switch {
			case head.URI == nil:
				return
			case subscribe:
				err = s.store.Subscribe(s.storeCtx, s.id, *head.URI)
			default:
				err = s.store.Unsubscribe(s.storeCtx, s.id, *head.URI)
			}
			if err != nil {
				s.log.Error("stdio: recording a resource subscription", "err", err)
			}
		}
	}
	return nil
}

// modernRequest serves a 2026-07-28 request.
func (s *session) modernRequest(msg *protocol.Message, head *protocol.ParamsHead) {
	if msg.Method == protocol.MethodPing {
		s.write(protocol.AppendResponse(nil, msg.ID, []byte("{}")))
		return
	}
	if msg.Method == protocol.MethodInitialize {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidRequest,
			"invalid request: this process serves 2026-07-28 (its client opened with server/discover or modern _meta); initialize is not available").
			WithData(&protocol.UnsupportedVersionData{Supported: protocol.ModernVersions()}))
		return
	}
	if !protocol.IsEraMethod(protocol.EraModern, msg.Method) {
		s.writeError(msg.ID, protocol.ErrUnknownMethod(msg.Method))
		return
	}
	if e := protocol.CheckModernMeta(head.Meta, nil); e != nil {
		s.writeError(msg.ID, e)
		return
	}
	if msg.Method == protocol.MethodSubscriptionsListen {
		s.openListen(msg)
		return
	}
	if head.RequestState != nil {
		if e := s.useState(*head.RequestState); e != nil {
			s.writeError(msg.ID, e)
			return
		}
	}
	m := head.Meta
	in := &mcp.RequestInit{
		Method: msg.Method, ID: msg.ID, Era: protocol.EraModern, ProtocolVersion: *m.ProtocolVersion,
		ClientInfo: m.ClientInfo, ClientCapabilities: m.ClientCapabilities, Features: Features,
	}
	if m.LogLevel != nil {
		in.LogLevel = *m.LogLevel
	}
	s.run(msg, func(*sessionstore.Session) *mcp.RequestInit { return in }, nil)
}

// useState records the use of an MRTR requestState, which is single-use
// for StateTTL; it returns the error answering a replay.
func (s *session) useState(state string) *protocol.Error {
	err := s.store.UseOnce(s.storeCtx, state, s.opts.StateTTL)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sessionstore.ErrUsed):
		return protocol.ErrStateUsed()
	case errors.Is(err, sessionstore.ErrFull):
		return protocol.NewError(protocol.CodeInternalError, "too many multi-round requests in flight; retry later")
	default:
		s.log.Error("stdio: recording a requestState", "err", err)
		return protocol.ErrInternalFailure()
	}
}
