// Package stdio serves an [mcp.Server] over the stdio transport:
// newline-delimited JSON-RPC on a reader (the process's stdin) and a writer
// (its stdout), one client and one session for the life of the process,
// with no NATS and no store.
//
// Both protocol eras are served. The client's opening picks the era, which
// is then locked for the process: initialize selects 2025-11-25 (a
// session: server-to-client requests, logging/setLevel, resource
// subscriptions, unsolicited notifications on stdout); server/discover or
// a request with 2026-07-28 _meta selects 2026-07-28 (stateless requests,
// subscriptions/listen streams multiplexed on stdout by subscription id,
// multi-round-trip input requests). ping is answered in any state.
//
// Requests run concurrently; the reader goes on reading while handlers
// run, so client responses to server-to-client requests and
// notifications/cancelled arrive. A cancelled request's response is not
// sent. Malformed lines are answered with -32700 or -32600 and serving
// goes on; a line over the size cap is answered with -32600 without being
// read whole into memory.
package stdio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxLineBytes   = 4 << 20
	DefaultMaxInFlight    = 1024
	DefaultMaxListen      = 64
	DefaultRequestTimeout = 10 * time.Minute
	DefaultDrainTimeout   = 5 * time.Second
	DefaultStateTTL       = 10 * time.Minute
)

// Features is what the stdio transport delivers: unsolicited messages to
// the legacy session (stdout) and modern listen streams. Capabilities
// advertised by initialize and server/discover are derived from it by the
// same code as on HTTP ([mcp.Catalog.Capabilities]).
var Features = mcp.Features{Listen: true, SessionStream: true}

// Options configure Serve. The zero value is valid.
type Options struct {
	// Logger receives diagnostics; it must not write to the protocol
	// writer. Nil means slog.Default().
	Logger *slog.Logger
	// MaxLineBytes caps one incoming message. Zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxDepth caps JSON nesting. Zero means protocol.DefaultMaxDepth.
	MaxDepth int
	// MaxInFlight caps concurrent requests (listen streams included);
	// past it a request is answered with -32603. Zero means
	// DefaultMaxInFlight.
	MaxInFlight int
	// MaxListen caps open subscriptions/listen streams. Zero means
	// DefaultMaxListen.
	MaxListen int
	// RequestTimeout bounds one handler. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// DrainTimeout is how long requests in flight at the end of the input
	// may run on; then they are cancelled. Zero means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// StateTTL is how long a used MRTR requestState is remembered (a
	// replay is refused). Zero means DefaultStateTTL.
	StateTTL time.Duration
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	if v.MaxLineBytes <= 0 {
		v.MaxLineBytes = DefaultMaxLineBytes
	}
	if v.MaxInFlight <= 0 {
		v.MaxInFlight = DefaultMaxInFlight
	}
	if v.MaxListen <= 0 {
		v.MaxListen = DefaultMaxListen
	}
	if v.RequestTimeout <= 0 {
		v.RequestTimeout = DefaultRequestTimeout
	}
	if v.DrainTimeout <= 0 {
		v.DrainTimeout = DefaultDrainTimeout
	}
	if v.StateTTL <= 0 {
		v.StateTTL = DefaultStateTTL
	}
	return v
}

// Serve serves srv on r and w until r ends (EOF: the client closed stdin)
// or ctx is done, then lets requests in flight finish within
// DrainTimeout, ends listen streams with their result, and returns. It
// returns nil at the end of the input, ctx's error when ctx ended it, and
// the error of a failed read or write otherwise. srv's change events go to
// this client while Serve runs (srv.SetEvents).
func Serve(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer, opts *Options) error {
	o := opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{
		srv: srv, opts: o, log: o.Logger, out: &writer{w: w},
		id:       "stdio-" + randomHex(8),
		inflight: map[string]*call{}, pending: map[string]chan clientAnswer{},
		listens: map[string]*listenSub{}, used: map[string]time.Time{},
		subs: map[string]struct{}{}, baseCtx: ctx,
	}
	srv.SetEvents(s)
	defer srv.SetEvents(nil)

	lines := make(chan lineOrErr)
	readerDone := make(chan struct{})
	go func() { // owned by Serve: ends at EOF, on a read error, or when ctx is done
		defer close(readerDone)
		lr := newLineReader(r, o.MaxLineBytes)
		for {
			line, tooLong, err := lr.next()
			var item lineOrErr
			if err == nil {
				item = lineOrErr{line: append([]byte(nil), line...), tooLong: tooLong}
			} else {
				item = lineOrErr{err: err}
			}
			select {
			case lines <- item:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var result error
loop:
	for {
		select {
		case <-ctx.Done():
			result = ctx.Err()
			break loop
		case item := <-lines:
			if item.err != nil {
				if !errors.Is(item.err, io.EOF) {
					result = item.err
				}
				break loop
			}
			if item.tooLong {
				s.writeError(protocol.ID{}, protocol.NewError(protocol.CodeInvalidRequest,
					"invalid request: the message exceeds the %d-byte limit", o.MaxLineBytes))
				continue
			}
			s.handleLine(item.line)
			if err := s.out.failed(); err != nil {
				result = err
				break loop
			}
		}
	}
	s.finish(result == nil)
	cancel()
	// The reader goroutine ends with ctx unless it is blocked in a read
	// that never returns (stdin left open by a parent that stopped
	// reading us): that read ends with the process.
	select {
	case <-readerDone:
	case <-time.After(100 * time.Millisecond):
	}
	if result == nil {
		result = s.out.failed()
	}
	return result
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writer writes one message per line; safe for concurrent use. After a
// failed write every later write is dropped and failed reports the error.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error
}

func (w *writer) write(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = append(append(w.buf[:0], msg...), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	}
	return nil
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// session is the state of the one client of the process.
type session struct {
	srv     *mcp.Server
	opts    Options
	log     *slog.Logger
	out     *writer
	id      string // the legacy session id handlers see
	baseCtx context.Context

	mu sync.Mutex
	wg sync.WaitGroup // handler goroutines
	// era is locked by the client's opening (zero until then).
	era protocol.Era
	// legacy session, set by a successful initialize
	version  string
	info     protocol.Implementation
	caps     protocol.ClientCapabilities
	logLevel protocol.LoggingLevel
	subs     map[string]struct{} // resources/subscribe URIs
	// requests in flight by id (String form); listen streams by id
	inflight map[string]*call
	listens  map[string]*listenSub
	// server-to-client requests waiting for the client's answer
	pending map[string]chan clientAnswer
	nextOut uint64
	// used MRTR requestStates and when they were used
	used    map[string]time.Time
	closing bool
}

// call is one request in flight.
type call struct {
	id        protocol.ID
	cancel    context.CancelFunc
	cancelled bool // guarded by session.mu: the response is not sent
}

// listenSub is one subscriptions/listen stream.
type listenSub struct {
	id     protocol.ID
	idJSON []byte
	filter protocol.SubscriptionFilter
}

type clientAnswer struct {
	result json.RawMessage
	err    *protocol.Error
}

func (s *session) write(msg []byte) {
	if err := s.out.write(msg); err != nil {
		s.log.Debug("stdio: write failed", "err", err)
	}
}

func (s *session) writeError(id protocol.ID, e *protocol.Error) {
	s.write(protocol.AppendErrorResponse(nil, id, e))
}

func (s *session) writeResult(id protocol.ID, res protocol.Result) {
	raw, err := json.Marshal(res)
	if err != nil {
		s.log.Error("stdio: marshalling a result", "err", err)
		s.writeError(id, protocol.NewError(protocol.CodeInternalError, "internal error"))
		return
	}
	s.write(protocol.AppendResponse(nil, id, raw))
}

// handleLine serves one incoming line.
func (s *session) handleLine(line []byte) {
	if len(trimSpace(line)) == 0 {
		return // blank lines between messages are tolerated
	}
	msg, err := protocol.Decode(line, s.opts.MaxDepth)
	if err != nil {
		var de *protocol.DecodeError
		if errors.As(err, &de) {
			s.writeError(de.ID, de.Err)
		} else {
			s.writeError(protocol.ID{}, protocol.NewError(protocol.CodeParseError, "parse error"))
		}
		return
	}
	var head protocol.ParamsHead
	if msg.Params != nil {
		if err := json.Unmarshal(msg.Params, &head); err != nil {
			if msg.Kind() == protocol.KindRequest {
				s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err))
			}
			return
		}
	}
	switch msg.Kind() {
	case protocol.KindResponse:
		s.clientResponse(msg)
	case protocol.KindNotification:
		s.notification(msg, &head)
	case protocol.KindRequest:
		s.request(msg, &head)
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
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

// initialize opens a legacy session; a failed one leaves the era open.
func (s *session) initialize(msg *protocol.Message) {
	var p protocol.InitializeParams
	if msg.Params == nil {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: initialize requires params"))
		return
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err))
		return
	}
	if e := p.Validate(); e != nil {
		s.writeError(msg.ID, e)
		return
	}
	req := mcp.NewRequest(&mcp.RequestInit{Method: msg.Method, ID: msg.ID, Era: protocol.EraLegacy, Features: Features,
		ClientInfo: p.ClientInfo, ClientCapabilities: p.Capabilities})
	res, err := s.srv.Handle(s.baseCtx, req, msg.Params)
	if err != nil {
		s.writeError(msg.ID, asProtocolError(err))
		return
	}
	ir, ok := res.(*protocol.InitializeResult)
	if !ok {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInternalError, "internal error"))
		return
	}
	s.mu.Lock()
	s.era = protocol.EraLegacy
	s.version = ir.ProtocolVersion
	s.info = *p.ClientInfo
	s.caps = *p.Capabilities
	s.mu.Unlock()
	s.writeResult(msg.ID, res)
}

func asProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.NewError(protocol.CodeInternalError, "internal error")
}

// legacyRequest serves a request of the 2025-11-25 session.
func (s *session) legacyRequest(msg *protocol.Message, head *protocol.ParamsHead) {
	switch msg.Method {
	case protocol.MethodInitialize:
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidRequest, "invalid request: the session is already initialized"))
		return
	case protocol.MethodPing:
		s.write(protocol.AppendResponse(nil, msg.ID, []byte("{}")))
		return
	}
	if !protocol.IsEraMethod(protocol.EraLegacy, msg.Method) {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeMethodNotFound, "method not found: %q", msg.Method))
		return
	}
	s.mu.Lock()
	info, caps := s.info, s.caps
	in := &mcp.RequestInit{
		Method: msg.Method, ID: msg.ID, Era: protocol.EraLegacy, ProtocolVersion: s.version,
		SessionID: s.id, ClientInfo: &info, ClientCapabilities: &caps, LogLevel: s.logLevel,
		Features: Features,
	}
	s.mu.Unlock()
	var effect func()
	switch msg.Method {
	case protocol.MethodLoggingSetLevel:
		var p protocol.SetLevelParams
		_ = json.Unmarshal(msg.Params, &p)
		effect = func() {
			s.mu.Lock()
			s.logLevel = p.Level
			s.mu.Unlock()
		}
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		subscribe := msg.Method == protocol.MethodResourcesSubscribe
		effect = func() {
			if head.URI == nil {
				return
			}
			s.mu.Lock()
			if subscribe {
				s.subs[*head.URI] = struct{}{}
			} else {
				delete(s.subs, *head.URI)
			}
			s.mu.Unlock()
		}
	}
	s.run(msg, in, effect)
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
		s.writeError(msg.ID, protocol.NewError(protocol.CodeMethodNotFound, "method not found: %q", msg.Method))
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
	if head.RequestState != nil && !s.useOnce(*head.RequestState) {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: this requestState was already used"))
		return
	}
	m := head.Meta
	in := &mcp.RequestInit{
		Method: msg.Method, ID: msg.ID, Era: protocol.EraModern, ProtocolVersion: *m.ProtocolVersion,
		ClientInfo: m.ClientInfo, ClientCapabilities: m.ClientCapabilities, Features: Features,
	}
	if m.LogLevel != nil {
		in.LogLevel = *m.LogLevel
	}
	s.run(msg, in, nil)
}

// useOnce records a requestState; false when it was used before.
func (s *session) useOnce(state string) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.used {
		if now.Sub(t) > s.opts.StateTTL {
			delete(s.used, k)
		}
	}
	if _, ok := s.used[state]; ok {
		return false
	}
	s.used[state] = now
	return true
}

// run starts the handler of a request in its own goroutine; effect, if
// set, runs once the handler succeeded and before the response is sent.
// run sets in.Out.
func (s *session) run(msg *protocol.Message, in *mcp.RequestInit, effect func()) {
	key := msg.ID.String()
	ctx, cancel := context.WithTimeout(s.baseCtx, s.opts.RequestTimeout)
	c := &call{id: msg.ID, cancel: cancel}
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		cancel()
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInternalError, "the server is shutting down"))
		return
	case s.inflight[key] != nil || s.listens[key] != nil:
		s.mu.Unlock()
		cancel()
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidRequest,
			"invalid request: request id %s is already in use by a request in flight", msg.ID))
		return
	case len(s.inflight)+len(s.listens) >= s.opts.MaxInFlight:
		s.mu.Unlock()
		cancel()
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInternalError, "too many requests in flight (%d); retry", s.opts.MaxInFlight))
		return
	}
	s.inflight[key] = c
	s.wg.Add(1)
	s.mu.Unlock()
	in.Out = &outbound{s: s, c: c, era: in.Era}
	req := mcp.NewRequest(in)
	go func() { // owned by the session: ends with the handler, whose ctx Serve cancels
		defer s.wg.Done()
		defer cancel()
		res, err := s.srv.Handle(ctx, req, msg.Params)
		s.mu.Lock()
		delete(s.inflight, key)
		cancelled := c.cancelled
		s.mu.Unlock()
		if cancelled {
			return // a cancelled request gets no response
		}
		if err != nil {
			e := asProtocolError(err)
			if ctx.Err() == context.DeadlineExceeded {
				e = protocol.NewError(protocol.CodeInternalError, "request timed out")
			}
			s.writeError(msg.ID, e)
			return
		}
		if effect != nil {
			effect()
		}
		s.writeResult(msg.ID, res)
	}()
}

// notification handles a client notification.
func (s *session) notification(msg *protocol.Message, head *protocol.ParamsHead) {
	switch msg.Method {
	case protocol.NotificationCancelled:
		var id protocol.ID
		if len(head.RequestID) == 0 || id.UnmarshalJSON(head.RequestID) != nil {
			return // a malformed cancel is ignored
		}
		s.cancelRequest(id.String())
	case protocol.NotificationRootsListChanged:
		s.mu.Lock()
		if s.era != protocol.EraLegacy {
			s.mu.Unlock()
			return
		}
		info, caps := s.info, s.caps
		in := &mcp.RequestInit{Method: msg.Method, Era: protocol.EraLegacy, ProtocolVersion: s.version,
			SessionID: s.id, ClientInfo: &info, ClientCapabilities: &caps, LogLevel: s.logLevel, Features: Features}
		if s.closing {
			s.mu.Unlock()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		in.Out = &outbound{s: s, era: protocol.EraLegacy, c: &call{cancel: func() {}}}
		req := mcp.NewRequest(in)
		go func() { // owned by the session; bounded by RequestTimeout
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(s.baseCtx, s.opts.RequestTimeout)
			defer cancel()
			s.srv.HandleNotification(ctx, req)
		}()
	}
	// notifications/initialized and unknown notifications need nothing.
}

// cancelRequest cancels the request or ends the listen stream with that id.
func (s *session) cancelRequest(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.inflight[key]; c != nil {
		c.cancelled = true
		c.cancel()
		return
	}
	delete(s.listens, key) // a cancelled listen gets no result
}

// clientResponse hands the client's answer to the server-to-client request
// waiting for it; an answer nobody waits for is dropped.
func (s *session) clientResponse(msg *protocol.Message) {
	key := msg.ID.String()
	s.mu.Lock()
	ch := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if ch == nil {
		s.log.Debug("stdio: dropping a response to no pending request", "id", key)
		return
	}
	ch <- clientAnswer{result: msg.Result, err: msg.Error} // buffered, one answer
}

// openListen opens a subscriptions/listen stream: the acknowledgement is
// its first message; events follow, tagged with the subscription id, until
// the client cancels it or the input ends.
func (s *session) openListen(msg *protocol.Message) {
	var p protocol.ListenParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Notifications == nil {
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: params.notifications (a SubscriptionFilter) is required"))
		return
	}
	key := msg.ID.String()
	l := &listenSub{id: msg.ID, idJSON: msg.ID.AppendJSON(nil), filter: listen.Honoured(p.Notifications, false)}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.inflight[key] != nil || s.listens[key] != nil:
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInvalidRequest,
			"invalid request: request id %s is already in use by a request in flight", msg.ID))
		return
	case len(s.listens) >= s.opts.MaxListen:
		s.writeError(msg.ID, protocol.NewError(protocol.CodeInternalError, "too many listen streams (%d); retry later", s.opts.MaxListen))
		return
	}
	// Written under s.mu: no event can be written for the stream before
	// its acknowledgement.
	s.write(listen.AckMessage(msg.ID, l.filter))
	s.listens[key] = l
}

// ListChanged implements mcp.Events: the legacy session gets
// notifications/<kind>/list_changed; modern listen streams that asked for
// it get it tagged with their subscription id.
func (s *session) ListChanged(_ context.Context, kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.era {
	case protocol.EraLegacy:
		method, _, ok := listen.ListChangedMethod(&protocol.SubscriptionFilter{}, kind)
		if !ok {
			return fmt.Errorf("stdio: unknown list kind %q", kind)
		}
		s.write(protocol.AppendNotification(nil, method, nil))
	case protocol.EraModern:
		for _, l := range s.listens {
			method, wanted, ok := listen.ListChangedMethod(&l.filter, kind)
			if !ok {
				return fmt.Errorf("stdio: unknown list kind %q", kind)
			}
			if wanted {
				s.write(listen.AppendTagged(nil, l.idJSON, method, ""))
			}
		}
	}
	return nil
}

// ResourceUpdated implements mcp.Events: to the legacy session when it
// subscribed to uri, and to the listen streams whose filter names uri.
func (s *session) ResourceUpdated(_ context.Context, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.era {
	case protocol.EraLegacy:
		if _, ok := s.subs[uri]; ok {
			n, err := protocol.EncodeNotification(protocol.NotificationResourceUpdated, &protocol.ResourceUpdatedParams{URI: uri})
			if err != nil {
				return err
			}
			s.write(n)
		}
	case protocol.EraModern:
		for _, l := range s.listens {
			for _, u := range l.filter.ResourceSubscriptions {
				if u == uri {
					s.write(listen.AppendTagged(nil, l.idJSON, protocol.NotificationResourceUpdated, uri))
					break
				}
			}
		}
	}
	return nil
}

// NotifySession implements mcp.SessionNotifier for the process's legacy
// session.
func (s *session) NotifySession(_ context.Context, sessionID, method string, params any) error {
	s.mu.Lock()
	ok := s.era == protocol.EraLegacy && sessionID == s.id
	s.mu.Unlock()
	if !ok {
		return mcp.ErrNotSupported
	}
	n, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	s.write(n)
	return nil
}

// finish ends the session: requests in flight get DrainTimeout to finish
// (when the input ended; none when ctx ended Serve), then are cancelled;
// listen streams end with their result.
func (s *session) finish(drain bool) {
	s.mu.Lock()
	s.closing = true
	// Nobody can answer a server-to-client request any more.
	for key, ch := range s.pending {
		delete(s.pending, key)
		ch <- clientAnswer{err: protocol.NewError(protocol.CodeInternalError, "the client closed its input")}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { // ends when every handler has returned
		s.wg.Wait()
		close(done)
	}()
	if drain {
		select {
		case <-done:
		case <-time.After(s.opts.DrainTimeout):
		}
	}
	s.mu.Lock()
	for _, c := range s.inflight {
		c.cancelled = true
		c.cancel()
	}
	for key, l := range s.listens {
		s.write(listen.FinalMessage(l.id))
		delete(s.listens, key)
	}
	s.mu.Unlock()
	select {
	case <-done:
	case <-time.After(s.opts.DrainTimeout):
		s.log.Warn("stdio: handlers still running after cancellation")
	}
}

// outbound sends a request's notifications and server-to-client requests
// on stdout.
type outbound struct {
	s   *session
	c   *call
	era protocol.Era
}

func (o *outbound) Notify(_ context.Context, method string, params any) error {
	o.s.mu.Lock()
	cancelled := o.c.cancelled
	o.s.mu.Unlock()
	if cancelled {
		return errors.New("stdio: the request was cancelled")
	}
	n, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return o.s.out.write(n)
}

// Call sends a server-to-client request (legacy era) and waits for the
// client's answer; when ctx ends first the client is told with
// notifications/cancelled.
func (o *outbound) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if o.era != protocol.EraLegacy {
		return nil, mcp.ErrNotSupported
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	s := o.s
	ch := make(chan clientAnswer, 1)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, errors.New("stdio: the session is ending")
	}
	s.nextOut++
	id := protocol.StringID(fmt.Sprintf("s-%d", s.nextOut))
	key := id.String()
	s.pending[key] = ch
	s.mu.Unlock()
	if err := s.out.write(protocol.AppendRequest(nil, id, method, p)); err != nil {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
		return nil, err
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		return a.result, nil
	case <-ctx.Done():
		s.mu.Lock()
		_, waiting := s.pending[key]
		delete(s.pending, key)
		s.mu.Unlock()
		if waiting {
			n, _ := protocol.EncodeNotification(protocol.NotificationCancelled,
				&protocol.CancelledParams{RequestID: id, Reason: "the server request was cancelled"})
			_ = s.out.write(n)
		}
		return nil, ctx.Err()
	}
}
