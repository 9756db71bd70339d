package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

// elicitOutcome is what the elicit tool's req.Elicit returned.
type elicitOutcome struct {
	res *protocol.ElicitResult
	err error
}

// elicitServer has a tool "ask" that elicits a name and answers
// "<action> <name>", or a tool error with the elicitation's error.
func elicitServer(tb testing.TB) (*mcp.Server, <-chan elicitOutcome) {
	tb.Helper()
	s := newServer()
	out := make(chan elicitOutcome, 8)
	addTool(tb, s, "ask", func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		res, err := req.Elicit(ctx, &protocol.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		out <- elicitOutcome{res, err}
		if err != nil {
			return mcp.ToolError(err.Error()), nil
		}
		name, _ := res.Content["name"].(string)
		return mcp.TextResult(res.Action + " " + name), nil
	})
	return s, out
}

// serverRequest reads the next frame of st, which must be a server-to-client
// request of method, and returns its id.
func serverRequest(tb testing.TB, st *stream, method string) protocol.ID {
	tb.Helper()
	fr := st.expect(tb, bus.FrameServerRequest)
	validateMessage(tb, protocol.Version20251125, "", fr.payload)
	m := fr.msg(tb)
	if m.Kind() != protocol.KindRequest || m.Method != method || !m.ID.IsString() {
		tb.Fatalf("server request %s: want a %s request with a string id", fr.payload, method)
	}
	return m.ID
}

func TestServerToClientCall(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, nil)
	st := f.fe.callTool(t, legacy("s1"), protocol.Int64ID(1), "ask", "")
	id := serverRequest(t, st, protocol.MethodElicitationCreate)
	wid, ok := bus.ParseServerRequestID(id)
	if !ok || wid != f.w.ID() {
		t.Fatalf("ParseServerRequestID(%s) = %q, %v; want the worker id %q", id, wid, ok, f.w.ID())
	}

	// Noise the worker must ignore: an answer for an unknown id, and an
	// answer from another session. They are published before the right
	// answer on the same connection, so the worker sees them first: had it
	// taken one, the tool would see "Mallory".
	f.fe.answer(t, wid, "s1", protocol.AppendResponse(nil, protocol.StringID("mcpf-"+wid+"-999"), []byte(`{"action":"decline"}`)))
	f.fe.answer(t, wid, "intruder", protocol.AppendResponse(nil, id, []byte(`{"action":"accept","content":{"name":"Mallory"}}`)))
	f.fe.answer(t, wid, "s1", protocol.AppendResponse(nil, id, []byte(`{"action":"accept","content":{"name":"Ada"}}`)))

	got := recv(t, outcomes, "the elicitation's outcome")
	if got.err != nil || got.res.Action != protocol.ElicitAccept || got.res.Content["name"] != "Ada" {
		t.Fatalf("Elicit returned %+v, %v; want the s1 answer (Ada)", got.res, got.err)
	}
	m := st.response(t)
	if m.Error != nil || !strings.Contains(string(m.Result), "accept Ada") {
		t.Errorf("response %+v (%s), want \"accept Ada\"", m, m.Result)
	}
	// A late duplicate answer is harmless.
	f.fe.answer(t, wid, "s1", protocol.AppendResponse(nil, id, []byte(`{"action":"cancel"}`)))
	f.wantNoMore(t, st)
}

func TestServerToClientCallErrorAnswer(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, nil)
	st := f.fe.callTool(t, legacy("s1"), protocol.Int64ID(1), "ask", "")
	id := serverRequest(t, st, protocol.MethodElicitationCreate)
	f.fe.answer(t, f.w.ID(), "s1", protocol.AppendErrorResponse(nil, id, protocol.NewError(protocol.CodeInvalidParams, "form mode not supported")))
	got := recv(t, outcomes, "the elicitation's outcome")
	if !errors.Is(got.err, protocol.ErrInvalidParams) {
		t.Errorf("Elicit error = %v, want the client's -32602", got.err)
	}
	if m := st.response(t); m.Error != nil || !strings.Contains(string(m.Result), "form mode not supported") {
		t.Errorf("response %+v (%s), want a tool error naming the client's error", m, m.Result)
	}
	f.wantNoMore(t, st)
}

func TestServerToClientCallCancelled(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, nil)
	reqID := protocol.Int64ID(3)
	st := f.fe.callTool(t, legacy("s1"), reqID, "ask", "")
	id := serverRequest(t, st, protocol.MethodElicitationCreate)

	f.fe.cancel(t, bus.CancelKeyLegacy("s1", reqID))
	fr := st.next(t)
	if fr.kind != bus.FrameNotification {
		t.Fatalf("got %s, want notifications/cancelled before the end", fr)
	}
	validateMessage(t, protocol.Version20251125, "", fr.payload)
	n := fr.msg(t)
	var p protocol.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != protocol.NotificationCancelled || p.RequestID != id {
		t.Fatalf("got %s, want notifications/cancelled naming %s", fr.payload, id)
	}
	st.expect(t, bus.FrameEnd)
	if got := recv(t, outcomes, "the elicitation's outcome"); got.err == nil {
		t.Errorf("Elicit returned %+v after the cancel, want an error", got.res)
	}
	// An answer after the cancel goes nowhere.
	f.fe.answer(t, f.w.ID(), "s1", protocol.AppendResponse(nil, id, []byte(`{"action":"accept","content":{"name":"Late"}}`)))
	f.wantNoMore(t, st)
}

func TestServerToClientCallTimeout(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, &worker.Options{CallTimeout: 100 * time.Millisecond, HeartbeatInterval: -1})
	st := f.fe.callTool(t, legacy("s1"), protocol.Int64ID(1), "ask", "")
	id := serverRequest(t, st, protocol.MethodElicitationCreate)

	got := recv(t, outcomes, "the elicitation's outcome")
	if !errors.Is(got.err, worker.ErrCallTimeout) {
		t.Fatalf("Elicit error = %v, want one wrapping ErrCallTimeout", got.err)
	}
	fr := st.expect(t, bus.FrameNotification)
	n := fr.msg(t)
	var p protocol.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != protocol.NotificationCancelled || p.RequestID != id {
		t.Errorf("got %s, want notifications/cancelled naming %s", fr.payload, id)
	}
	m := st.response(t)
	var res struct {
		IsError bool `json:"isError"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || !res.IsError {
		t.Errorf("response %+v (%s), want the tool's error result", m, m.Result)
	}
	f.wantNoMore(t, st)
}

func TestServerToClientCallNeedsASession(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, nil)
	params := `{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`
	st := f.fe.send(t, modern(), protocol.Int64ID(1), protocol.MethodToolsCall, "ask", params)
	if got := recv(t, outcomes, "the elicitation's outcome"); got.err == nil {
		t.Errorf("Elicit on a modern request returned %+v, want an error", got.res)
	}
	if fr := st.next(t); fr.kind != bus.FrameResponse {
		t.Errorf("got %s, want the response (no server request on a modern stream)", fr)
	}
	f.wantNoMore(t, st)
}

func TestServerToClientCallCancelledByDeadline(t *testing.T) {
	s, outcomes := elicitServer(t)
	f := newFixture(t, s, nil)
	hdr := legacy("s1")
	hdr.DeadlineMs = time.Now().Add(300 * time.Millisecond).UnixMilli()
	st := f.fe.callTool(t, hdr, protocol.Int64ID(1), "ask", "")
	id := serverRequest(t, st, protocol.MethodElicitationCreate)
	if got := recv(t, outcomes, "the elicitation's outcome"); !errors.Is(got.err, context.DeadlineExceeded) {
		t.Fatalf("Elicit error = %v, want the deadline", got.err)
	}
	fr := st.next(t)
	if fr.kind != bus.FrameNotification {
		t.Fatalf("got %s, want notifications/cancelled naming %s before the response", fr, id)
	}
	n := fr.msg(t)
	var p protocol.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != protocol.NotificationCancelled || p.RequestID != id {
		t.Errorf("got %s, want notifications/cancelled naming %s", fr.payload, id)
	}
	st.expect(t, bus.FrameResponse)
	f.wantNoMore(t, st)
}
