package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
)

// wait bounds every wait of these tests. It is generous: the race
// detector on a 2-core machine is slow, and a passing test never waits
// this long.
const wait = 10 * time.Second

var discard = slog.New(slog.DiscardHandler)

// startBus starts an embedded NATS server for the test.
func startBus(tb testing.TB) *bus.Embedded {
	tb.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: discard})
	if err != nil {
		tb.Fatalf("starting embedded NATS: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			tb.Errorf("stopping embedded NATS: %v", err)
		}
	})
	return e
}

func connect(tb testing.TB, e *bus.Embedded, name string) *nats.Conn {
	tb.Helper()
	nc, err := e.Connect(name)
	if err != nil {
		tb.Fatalf("connecting %s: %v", name, err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

var prefixSeq atomic.Int64

// fixture is one worker serving srv on an embedded NATS, plus a fake
// frontend. Each fixture has its own subject prefix, so its worker is the
// only member of its queue group.
type fixture struct {
	bus  *bus.Embedded
	subj bus.Subjects
	w    *worker.Worker
	wnc  *nats.Conn // the worker's connection
	fe   *frontend

	shutdownOnce sync.Once
}

// newFixture starts a worker with opts (nil: defaults, with heartbeats
// off so frame sequences are exact) and a frontend named "fe1".
func newFixture(tb testing.TB, srv *mcp.Server, opts *worker.Options) *fixture {
	tb.Helper()
	f := &fixture{bus: startBus(tb), subj: bus.Subjects{Prefix: "t" + strconv.FormatInt(prefixSeq.Add(1), 10)}}
	var o worker.Options
	if opts != nil {
		o = *opts
	} else {
		o.HeartbeatInterval = -1
	}
	o.Subjects = f.subj
	if o.AckTimeout == 0 {
		// The fake frontend acks every frame, late on a loaded machine:
		// only the tests of the fallback (acked_test.go) take it.
		o.AckTimeout = wait
	}
	if o.Logger == nil {
		o.Logger = discard
	}
	f.wnc = connect(tb, f.bus, "worker")
	w, err := worker.New(bus.NATS(f.wnc), srv, &o)
	if err != nil {
		tb.Fatalf("worker.New: %v", err)
	}
	if err := w.Start(context.Background()); err != nil {
		tb.Fatalf("worker.Start: %v", err)
	}
	f.w = w
	tb.Cleanup(func() { f.shutdown(tb) })
	f.fe = newFrontend(tb, f.bus, f.subj, "fe1")
	return f
}

// shutdown stops the worker, waiting for its requests; after it, every
// frame the worker will ever publish has been published. Idempotent.
func (f *fixture) shutdown(tb testing.TB) {
	tb.Helper()
	f.shutdownOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := f.w.Shutdown(ctx); err != nil {
			tb.Errorf("worker.Shutdown: %v", err)
		}
	})
}

// rest returns every frame still to arrive on st. Call it after shutdown:
// it publishes a sentinel on the worker's own connection, which NATS
// delivers after everything the worker published before it.
func (f *fixture) rest(tb testing.TB, st *stream) []frame {
	tb.Helper()
	if err := f.wnc.Publish(st.subject, []byte(sentinel)); err != nil {
		tb.Fatalf("publishing the sentinel: %v", err)
	}
	if err := f.wnc.Flush(); err != nil {
		tb.Fatalf("flushing: %v", err)
	}
	var out []frame
	for {
		fr := st.next(tb)
		if string(fr.raw) == sentinel {
			return out
		}
		out = append(out, fr)
	}
}

// wantNoMore shuts the worker down and fails if any stream gets another
// frame.
func (f *fixture) wantNoMore(tb testing.TB, streams ...*stream) {
	tb.Helper()
	f.shutdown(tb)
	for _, st := range streams {
		if more := f.rest(tb, st); len(more) > 0 {
			tb.Errorf("stream %s got frames after its last one: %v", st.id, more)
		}
	}
}

const sentinel = "~sentinel~"

// frame is one message on a stream subject.
type frame struct {
	kind    bus.FrameKind
	payload []byte
	raw     []byte
	seq     uint64 // an acked frame's sequence number (0: a plain frame)
}

func (f frame) String() string {
	return fmt.Sprintf("%c:%s", byte(f.kind), f.payload)
}

// msg decodes the frame's JSON-RPC payload.
func (f frame) msg(tb testing.TB) *protocol.Message {
	tb.Helper()
	m, err := protocol.Decode(f.payload, 0)
	if err != nil {
		tb.Fatalf("frame %s: decoding: %v", f, err)
	}
	return m
}

// frontend plays the frontend's part: it publishes request envelopes and
// reads the frames of its streams.
type frontend struct {
	tb   testing.TB
	nc   *nats.Conn
	subj bus.Subjects
	id   string

	mu      sync.Mutex
	streams map[string]*stream
	seq     int

	// noAck, when set, leaves acked frames unacked (a frontend cut off).
	noAck atomic.Bool
}

type stream struct {
	id      string
	subject string
	ch      chan frame
}

func newFrontend(tb testing.TB, e *bus.Embedded, subj bus.Subjects, id string) *frontend {
	tb.Helper()
	fe := &frontend{tb: tb, nc: connect(tb, e, "frontend-"+id), subj: subj, id: id, streams: map[string]*stream{}}
	sub, err := fe.nc.Subscribe(subj.FrontendStreams(id), fe.onFrame)
	if err != nil {
		tb.Fatalf("subscribing to the streams: %v", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := fe.nc.Flush(); err != nil {
		tb.Fatalf("flushing: %v", err)
	}
	return fe
}

func (fe *frontend) onFrame(m *nats.Msg) {
	fe.mu.Lock()
	st := fe.streams[bus.StreamID(m.Subject)]
	fe.mu.Unlock()
	if st == nil {
		fe.tb.Errorf("frame %q on unknown stream subject %s", m.Data, m.Subject)
		return
	}
	status := ""
	if m.Header != nil {
		status = m.Header.Get("Status")
	}
	k, p := bus.ParseFrame(m.Data, status)
	seq := bus.FrameSeq(m)
	if seq > 0 && m.Reply != "" && !fe.noAck.Load() {
		_ = m.Respond(nil) // as a frontend does once it logged the frame
	}
	select {
	case st.ch <- frame{kind: k, payload: p, raw: m.Data, seq: seq}:
	default:
		fe.tb.Errorf("stream %s: frame buffer full, dropping %q", st.id, m.Data)
	}
}

func (fe *frontend) newStream() *stream {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	fe.seq++
	id := "st" + strconv.Itoa(fe.seq)
	st := &stream{id: id, subject: fe.subj.Stream(fe.id, id), ch: make(chan frame, 256)}
	fe.streams[id] = st
	return st
}

// close forgets a stream whose exchange is over.
func (fe *frontend) close(st *stream) {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	delete(fe.streams, st.id)
}

// send publishes request (method, id, params) with header hdr (nil: a
// legacy request of session "s1"), on a new stream, and returns it. The
// request has reached NATS when send returns.
func (fe *frontend) send(tb testing.TB, hdr *bus.RequestHeader, id protocol.ID, method, name, params string) *stream {
	tb.Helper()
	st := fe.publish(tb, hdr, id, method, name, params)
	if err := fe.nc.Flush(); err != nil {
		tb.Fatalf("flushing: %v", err)
	}
	return st
}

// publish is send without the flush.
func (fe *frontend) publish(tb testing.TB, hdr *bus.RequestHeader, id protocol.ID, method, name, params string) *stream {
	tb.Helper()
	if hdr == nil {
		hdr = legacy("s1")
	}
	st := fe.newStream()
	h := *hdr
	h.Frontend, h.Stream = fe.id, st.id
	var p []byte
	if params != "" {
		p = []byte(params)
	}
	data, err := bus.EncodeRequest(&h, protocol.AppendRequest(nil, id, method, p))
	if err != nil {
		tb.Fatalf("encoding the envelope: %v", err)
	}
	if err := fe.nc.PublishMsg(&nats.Msg{Subject: fe.subj.Request(method, name), Reply: st.subject, Data: data}); err != nil {
		tb.Fatalf("publishing the request: %v", err)
	}
	return st
}

// callTool sends tools/call of tool with args (a JSON object or "").
func (fe *frontend) callTool(tb testing.TB, hdr *bus.RequestHeader, id protocol.ID, tool, args string) *stream {
	tb.Helper()
	params := `{"name":` + quote(tool) + `}`
	if args != "" {
		params = `{"name":` + quote(tool) + `,"arguments":` + args + `}`
	}
	return fe.send(tb, hdr, id, protocol.MethodToolsCall, tool, params)
}

// cancel publishes a cancellation key.
func (fe *frontend) cancel(tb testing.TB, key string) {
	tb.Helper()
	if err := fe.nc.Publish(fe.subj.Cancel(), []byte(key)); err != nil {
		tb.Fatalf("publishing cancel %s: %v", key, err)
	}
	if err := fe.nc.Flush(); err != nil {
		tb.Fatalf("flushing: %v", err)
	}
}

// answer publishes a client's answer (a JSON-RPC response) to worker wid,
// as POSTed on session.
func (fe *frontend) answer(tb testing.TB, wid, session string, resp []byte) {
	tb.Helper()
	data, err := bus.EncodeAnswer(&bus.ClientAnswer{Session: session}, resp)
	if err != nil {
		tb.Fatalf("encoding the answer: %v", err)
	}
	if err := fe.nc.Publish(fe.subj.WorkerInbox(wid), data); err != nil {
		tb.Fatalf("publishing the answer: %v", err)
	}
	if err := fe.nc.Flush(); err != nil {
		tb.Fatalf("flushing: %v", err)
	}
}

// next returns the stream's next frame, failing after wait.
func (st *stream) next(tb testing.TB) frame {
	tb.Helper()
	select {
	case fr := <-st.ch:
		return fr
	case <-time.After(wait):
		tb.Fatalf("stream %s: no frame within %s", st.id, wait)
		return frame{}
	}
}

// expect returns the next frame, which must be of kind k.
func (st *stream) expect(tb testing.TB, k bus.FrameKind) frame {
	tb.Helper()
	fr := st.next(tb)
	if fr.kind != k {
		tb.Fatalf("stream %s: got frame %s, want kind %c", st.id, fr, byte(k))
	}
	return fr
}

// response returns the next frame, which must be a response, decoded.
func (st *stream) response(tb testing.TB) *protocol.Message {
	tb.Helper()
	m := st.expect(tb, bus.FrameResponse).msg(tb)
	if m.Kind() != protocol.KindResponse {
		tb.Fatalf("response frame holds a %s", m.Kind())
	}
	return m
}

// legacy is the header of a legacy request of session sid, whose client
// declared elicitation and asked for info-level logs.
func legacy(sid string) *bus.RequestHeader {
	return &bus.RequestHeader{Era: protocol.EraLegacy, Session: &bus.SessionInfo{
		ID:                 sid,
		ProtocolVersion:    protocol.Version20251125,
		ClientInfo:         &protocol.Implementation{Name: "client", Version: "1"},
		ClientCapabilities: &protocol.ClientCapabilities{Elicitation: &protocol.ElicitationCapability{}},
		LogLevel:           protocol.LevelInfo,
	}}
}

// modern is the header of a modern request.
func modern() *bus.RequestHeader { return &bus.RequestHeader{Era: protocol.EraModern} }

// modernMeta is the _meta every modern request carries.
const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// recv receives from ch within wait.
func recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		tb.Fatalf("%s did not happen within %s", what, wait)
		var zero T
		return zero
	}
}

// newServer returns an mcp.Server with quiet logs.
func newServer() *mcp.Server {
	return mcp.NewServer(protocol.Implementation{Name: "worker-test", Version: "0.0.1"}, &mcp.ServerOptions{Logger: discard})
}

// addTool registers a raw tool.
func addTool(tb testing.TB, s *mcp.Server, name string, h mcp.ToolHandler) {
	tb.Helper()
	if err := s.AddTool(&protocol.Tool{Name: name}, h); err != nil {
		tb.Fatalf("AddTool(%s): %v", name, err)
	}
}

// blocker is a tool that blocks until released or cancelled, reporting
// both events.
type blocker struct {
	started   chan string    // the "tag" argument, when the handler starts
	release   chan struct{}  // closed to let every call return
	cancelled chan error     // context.Cause, when the ctx ends first
	deadlines chan time.Time // the ctx deadline, at start
	returned  chan struct{}  // one value per handler return

	releaseOnce sync.Once
}

func newBlocker(tb testing.TB, s *mcp.Server, name string) *blocker {
	tb.Helper()
	b := &blocker{
		started:   make(chan string, 64),
		release:   make(chan struct{}),
		cancelled: make(chan error, 64),
		deadlines: make(chan time.Time, 64),
		returned:  make(chan struct{}, 64),
	}
	tb.Cleanup(b.releaseAll)
	addTool(tb, s, name, func(ctx context.Context, _ *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
		defer func() { b.returned <- struct{}{} }()
		var in struct {
			Tag string `json:"tag"`
		}
		_ = json.Unmarshal(args, &in)
		dl, _ := ctx.Deadline()
		b.deadlines <- dl
		b.started <- in.Tag
		select {
		case <-b.release:
			return mcp.TextResult("released " + in.Tag), nil
		case <-ctx.Done():
			b.cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	})
	return b
}

// releaseAll lets every running and future call return. Idempotent.
func (b *blocker) releaseAll() { b.releaseOnce.Do(func() { close(b.release) }) }

// validateMessage checks a message the worker sent against the schema of
// version, given the request method for responses.
func validateMessage(tb testing.TB, version, method string, payload []byte) {
	tb.Helper()
	if err := testenv.SchemasFor(tb, version).ValidateMessage(method, payload); err != nil {
		tb.Error(err)
	}
}
