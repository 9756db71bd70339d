package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// serverInfo is the implementation every test server announces.
var serverInfo = protocol.Implementation{Name: "test-server", Version: "1.2.3"}

// newServer returns a server with opts (nil: defaults) whose logger
// discards output, so expected panics and handler errors stay quiet.
func newServer(tb testing.TB, opts *mcp.ServerOptions) *mcp.Server {
	tb.Helper()
	var o mcp.ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return mcp.NewServer(serverInfo, &o)
}

// legacyInit and modernInit describe a request as a transport would, one
// that delivers unsolicited messages (a legacy session stream, modern
// listen streams), as a mcpfleet worker behind a frontend does; legacyReq
// and modernReq build it.
func legacyInit(method string) *mcp.RequestInit {
	return &mcp.RequestInit{
		Method: method, ID: protocol.Int64ID(1), Era: protocol.EraLegacy, ProtocolVersion: protocol.Version20251125, SessionID: "sess-1",
		Features: mcp.Features{SessionStream: true, Listen: true},
	}
}

func modernInit(method string) *mcp.RequestInit {
	return &mcp.RequestInit{
		Method: method, ID: protocol.Int64ID(1), Era: protocol.EraModern, ProtocolVersion: protocol.Version20260728,
		Features: mcp.Features{SessionStream: true, Listen: true},
	}
}

func legacyReq(method string) *mcp.Request { return mcp.NewRequest(legacyInit(method)) }

func modernReq(method string) *mcp.Request { return mcp.NewRequest(modernInit(method)) }

// handle runs req through s.Handle with params (a JSON object, or "" for
// none) and returns the marshalled result, or the protocol error. Any other
// error type fails the test: Handle promises *protocol.Error.
func handle(tb testing.TB, s *mcp.Server, req *mcp.Request, params string) (json.RawMessage, *protocol.Error) {
	tb.Helper()
	var raw json.RawMessage
	if params != "" {
		raw = json.RawMessage(params)
	}
	res, err := s.Handle(context.Background(), req, raw)
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			tb.Fatalf("%s: Handle returned %T (%v), want *protocol.Error", req.Method(), err, err)
		}
		if res != nil {
			tb.Fatalf("%s: Handle returned both a result and error %v", req.Method(), err)
		}
		return nil, pe
	}
	if res == nil {
		tb.Fatalf("%s: Handle returned neither a result nor an error", req.Method())
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		tb.Fatalf("%s: marshalling the result: %v", req.Method(), merr)
	}
	return b, nil
}

// mustResult is handle that fails the test on a protocol error.
func mustResult(tb testing.TB, s *mcp.Server, req *mcp.Request, params string) json.RawMessage {
	tb.Helper()
	raw, perr := handle(tb, s, req, params)
	if perr != nil {
		tb.Fatalf("%s %s: got error %v, want a result", req.Method(), params, perr)
	}
	return raw
}

// mustError is handle that wants a protocol error with code.
func mustError(tb testing.TB, s *mcp.Server, req *mcp.Request, params string, code int64) *protocol.Error {
	tb.Helper()
	raw, perr := handle(tb, s, req, params)
	if perr == nil {
		tb.Fatalf("%s %s: got result %s, want error %d", req.Method(), params, raw, code)
	}
	if perr.Code != code {
		tb.Fatalf("%s %s: got error %d %q, want code %d", req.Method(), params, perr.Code, perr.Message, code)
	}
	return perr
}

// decode unmarshals raw into a T.
func decode[T any](tb testing.TB, raw []byte) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatalf("decoding %s into %T: %v", raw, v, err)
	}
	return v
}

// members decodes a JSON object into its raw members.
func members(tb testing.TB, raw []byte) map[string]json.RawMessage {
	tb.Helper()
	return decode[map[string]json.RawMessage](tb, raw)
}

// wantJSON fails unless got and want are the same JSON value (member
// order and spacing aside).
func wantJSON(tb testing.TB, got []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("want is invalid JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("got JSON\n\t%s\nwant\n\t%s", got, want)
	}
}

// validate checks raw against definition def of the schema of version.
func validate(tb testing.TB, version, def string, raw []byte) {
	tb.Helper()
	if err := testenv.SchemasFor(tb, version).Validate(def, raw); err != nil {
		tb.Error(err)
	}
}

// sent is one message a recorder saw.
type sent struct {
	Method string
	Params json.RawMessage
}

// recorder is an mcp.Outbound that records what a request sends. reply,
// when set, answers Call; otherwise Call fails.
type recorder struct {
	reply func(method string, params json.RawMessage) (json.RawMessage, error)

	mu    sync.Mutex
	notes []sent
	calls []sent
}

var _ mcp.Outbound = (*recorder)(nil)

func (r *recorder) Notify(_ context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, sent{method, b})
	return nil
}

func (r *recorder) Call(_ context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.calls = append(r.calls, sent{method, b})
	r.mu.Unlock()
	if r.reply == nil {
		return nil, errors.New("recorder: no reply configured")
	}
	return r.reply(method, b)
}

func (r *recorder) notifications() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notes)
}

func (r *recorder) requests() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// eventLog is an mcp.Events that records every event as "kind" for list
// changes and "updated:<uri>" for resource updates.
type eventLog struct {
	mu  sync.Mutex
	got []string
}

var _ mcp.Events = (*eventLog)(nil)

func (e *eventLog) ListChanged(_ context.Context, kind string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, kind)
	return nil
}

func (e *eventLog) ResourceUpdated(_ context.Context, uri string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, "updated:"+uri)
	return nil
}

// take returns the events recorded since the last take.
func (e *eventLog) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	got := e.got
	e.got = nil
	return got
}

// textTool is a tool handler that returns text.
func textTool(text string) mcp.ToolHandler {
	return func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult(text), nil
	}
}

// addTools registers a text tool per name.
func addTools(tb testing.TB, s *mcp.Server, names ...string) {
	tb.Helper()
	for _, n := range names {
		if err := s.AddTool(&protocol.Tool{Name: n}, textTool(n)); err != nil {
			tb.Fatalf("AddTool(%q): %v", n, err)
		}
	}
}

// callResult is the decoded shape of a CallToolResult for assertions.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// callTool calls tool name with args (a JSON object or "" for none) on a
// legacy request and returns the decoded result.
func callTool(tb testing.TB, s *mcp.Server, name, args string) callResult {
	tb.Helper()
	params := `{"name":` + quote(name) + `}`
	if args != "" {
		params = `{"name":` + quote(name) + `,"arguments":` + args + `}`
	}
	raw := mustResult(tb, s, legacyReq(protocol.MethodToolsCall), params)
	validate(tb, protocol.Version20251125, "CallToolResult", raw)
	return decode[callResult](tb, raw)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
