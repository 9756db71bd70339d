package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

func echoServer(tb testing.TB) *mcp.Server {
	tb.Helper()
	s := newServer()
	err := mcp.AddTool(s, &protocol.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.Request, in struct {
		Text string `json:"text"`
	}) (*protocol.CallToolResult, any, error) {
		return mcp.TextResult(in.Text), nil, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestResponse(t *testing.T) {
	f := newFixture(t, echoServer(t), nil)
	tests := []struct {
		name    string
		hdr     *bus.RequestHeader
		id      protocol.ID
		params  string
		version string
		want    string
	}{
		{
			name: "legacy, integer id", hdr: legacy("s1"), id: protocol.Int64ID(1),
			params: `{"name":"echo","arguments":{"text":"hi"}}`, version: protocol.Version20251125,
			want: `{"content":[{"type":"text","text":"hi"}]}`,
		},
		{
			name: "legacy, string id", hdr: legacy("s1"), id: protocol.StringID("abc"),
			params: `{"name":"echo","arguments":{"text":"yo"}}`, version: protocol.Version20251125,
			want: `{"content":[{"type":"text","text":"yo"}]}`,
		},
		{
			name: "modern", hdr: modern(), id: protocol.Int64ID(2),
			params: `{"name":"echo","arguments":{"text":"hi"},"_meta":` + modernMeta + `}`, version: protocol.Version20260728,
			want: `{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"worker-test","version":"0.0.1"}}}`,
		},
	}
	var streams []*stream
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := f.fe.send(t, tt.hdr, tt.id, protocol.MethodToolsCall, "echo", tt.params)
			streams = append(streams, st)
			fr := st.expect(t, bus.FrameResponse)
			validateMessage(t, tt.version, protocol.MethodToolsCall, fr.payload)
			m := fr.msg(t)
			if m.ID != tt.id || m.Error != nil {
				t.Fatalf("response %s: want id %s and a result", fr.payload, tt.id)
			}
			wantJSON(t, m.Result, tt.want)
		})
	}
	t.Run("a tool the worker does not serve has no responder", func(t *testing.T) {
		st := f.fe.send(t, nil, protocol.Int64ID(8), protocol.MethodToolsCall, "nope", `{"name":"nope"}`)
		streams = append(streams, st)
		st.expect(t, bus.FrameNoResponders)
	})
	t.Run("protocol errors are error responses", func(t *testing.T) {
		// On the unnamed subject (any worker), an unknown tool is -32602.
		st := f.fe.send(t, nil, protocol.Int64ID(9), protocol.MethodToolsCall, "", `{"name":"nope"}`)
		streams = append(streams, st)
		m := st.response(t)
		if m.ID != protocol.Int64ID(9) || m.Error == nil || m.Error.Code != protocol.CodeInvalidParams {
			t.Errorf("got %+v, want a -32602 error for id 9", m)
		}
	})
	t.Run("an envelope holding a notification gets -32600", func(t *testing.T) {
		st := f.fe.newStream()
		data, err := bus.EncodeRequest(&bus.RequestHeader{Era: protocol.EraLegacy, Frontend: f.fe.id, Stream: st.id},
			protocol.AppendNotification(nil, protocol.NotificationInitialized, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.fe.nc.PublishRequest(f.subj.Request(protocol.NotificationInitialized, ""), st.subject, data); err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
		m := st.response(t)
		if m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest {
			t.Errorf("got %+v, want -32600", m)
		}
	})
	// Exactly one response each: nothing follows.
	f.wantNoMore(t, streams...)
}

func TestNotificationsPrecedeResponse(t *testing.T) {
	s := newServer()
	addTool(t, s, "chatty", func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		steps := []func() error{
			func() error { return req.Progress(ctx, 1, 3, "one") },
			func() error { return req.Log(ctx, protocol.LevelInfo, "chatty", "first") },
			func() error { return req.Log(ctx, protocol.LevelDebug, "chatty", "below the threshold") },
			func() error { return req.Progress(ctx, 2, 3, "two") },
			func() error { return req.Log(ctx, protocol.LevelError, "chatty", map[string]int{"code": 7}) },
			func() error { return req.Progress(ctx, 3, 3, "three") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
		return mcp.TextResult("done"), nil
	})
	f := newFixture(t, s, nil)
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"total":3,"message":"one"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"chatty","data":"first"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":2,"total":3,"message":"two"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"chatty","data":{"code":7}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":3,"total":3,"message":"three"}}`,
	}
	tests := []struct {
		name, params, version string
		hdr                   *bus.RequestHeader
	}{
		{"legacy", `{"name":"chatty","_meta":{"progressToken":"p1"}}`, protocol.Version20251125, legacy("s1")},
		{"modern", `{"name":"chatty","_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}`, protocol.Version20260728, modern()},
	}
	var streams []*stream
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := f.fe.send(t, tt.hdr, protocol.Int64ID(1), protocol.MethodToolsCall, "chatty", tt.params)
			streams = append(streams, st)
			for i, w := range want {
				fr := st.expect(t, bus.FrameNotification)
				wantJSON(t, fr.payload, w)
				if t.Failed() {
					t.Fatalf("notification %d differs", i)
				}
				validateMessage(t, tt.version, "", fr.payload)
			}
			m := st.response(t)
			if m.ID != protocol.Int64ID(1) || m.Error != nil {
				t.Fatalf("response %+v, want a result for id 1", m)
			}
			validateMessage(t, tt.version, protocol.MethodToolsCall, protocol.AppendResponse(nil, m.ID, m.Result))
		})
	}
	f.wantNoMore(t, streams...)
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name string
		hdr  *bus.RequestHeader
		key  func(fe string, st *stream, id protocol.ID) string
	}{
		{"legacy by session and id", legacy("s1"), func(_ string, _ *stream, id protocol.ID) string { return bus.CancelKeyLegacy("s1", id) }},
		{"modern by stream", modern(), func(fe string, st *stream, _ protocol.ID) string { return bus.CancelKeyStream(fe, st.id) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer()
			b := newBlocker(t, s, "block")
			f := newFixture(t, s, nil)
			id := protocol.StringID("req-1")
			st := f.fe.callTool(t, tt.hdr, id, "block", `{"tag":"a"}`)
			recv(t, b.started, "the handler start")

			f.fe.cancel(t, "s|nobody|\"req-1\"") // unknown: harmless
			f.fe.cancel(t, tt.key(f.fe.id, st, id))
			cause := recv(t, b.cancelled, "the handler's cancellation")
			if cause == nil || !strings.Contains(cause.Error(), "cancel") {
				t.Errorf("context cause = %v, want a cancellation", cause)
			}
			st.expect(t, bus.FrameEnd)
			recv(t, b.returned, "the handler return")
			f.fe.cancel(t, tt.key(f.fe.id, st, id)) // duplicate: harmless

			// The worker still serves requests.
			addTool(t, s, "ping", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
				return mcp.TextResult("pong"), nil
			})
			st2 := f.fe.callTool(t, tt.hdr, protocol.StringID("req-2"), "ping", "")
			if m := st2.response(t); m.Error != nil {
				t.Errorf("request after the cancel: %+v", m.Error)
			}
			// No response (or second end) for the cancelled request, ever.
			f.wantNoMore(t, st, st2)
		})
	}
}

func TestCancelNeedsTheRightKey(t *testing.T) {
	s := newServer()
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	id := protocol.Int64ID(4)
	a := f.fe.callTool(t, legacy("s1"), id, "block", `{"tag":"a"}`)
	recv(t, b.started, "a's start")
	c := f.fe.callTool(t, legacy("s1"), protocol.Int64ID(5), "block", `{"tag":"c"}`)
	recv(t, b.started, "c's start")

	// Keys that are close to a's but not a's.
	f.fe.cancel(t, bus.CancelKeyLegacy("s2", id))                     // another session
	f.fe.cancel(t, bus.CancelKeyLegacy("s1", protocol.StringID("4"))) // "4" is not 4
	f.fe.cancel(t, bus.CancelKeyStream(f.fe.id, a.id))                // legacy requests are keyed by session
	// c's cancel is processed after those (one subscription, in order):
	// once c ends, they have been handled too.
	f.fe.cancel(t, bus.CancelKeyLegacy("s1", protocol.Int64ID(5)))
	c.expect(t, bus.FrameEnd)
	recv(t, b.cancelled, "c's cancellation")

	b.releaseAll()
	m := a.response(t)
	if m.Error != nil || !strings.Contains(string(m.Result), "released a") {
		t.Errorf("a: got %+v, want its normal result", m)
	}
	select {
	case err := <-b.cancelled:
		t.Errorf("a was cancelled by a wrong key: %v", err)
	default:
	}
	f.wantNoMore(t, a, c)
}

// TestCancelResponseRace publishes a cancel right behind requests whose
// tool returns at once: each request must end with exactly one of a
// response or an end frame.
func TestCancelResponseRace(t *testing.T) {
	s := newServer()
	addTool(t, s, "quick", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("quick"), nil
	})
	f := newFixture(t, s, nil)
	const n = 200
	streams := make([]*stream, 0, n)
	for i := range n {
		id := protocol.Int64ID(int64(i))
		hdr := legacy("race")
		key := bus.CancelKeyLegacy("race", id)
		if i%2 == 1 {
			hdr = modern()
		}
		st := f.fe.callTool(t, hdr, id, "quick", "")
		if i%2 == 1 {
			key = bus.CancelKeyStream(f.fe.id, st.id)
		}
		f.fe.cancel(t, key)
		streams = append(streams, st)
	}
	var responses, ends int
	for _, st := range streams {
		switch fr := st.next(t); fr.kind {
		case bus.FrameResponse:
			responses++
			if m := fr.msg(t); m.Error != nil {
				t.Errorf("stream %s: error response %+v", st.id, m.Error)
			}
		case bus.FrameEnd:
			ends++
		default:
			t.Errorf("stream %s: got %s, want a response or an end", st.id, fr)
		}
	}
	f.shutdown(t)
	for _, st := range streams {
		if more := f.rest(t, st); len(more) > 0 {
			t.Errorf("stream %s: frames after the outcome: %v", st.id, more)
		}
	}
	t.Logf("%d responses, %d ends", responses, ends)
}

func TestDuplicateRequestID(t *testing.T) {
	s := newServer()
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	id := protocol.Int64ID(7)

	first := f.fe.callTool(t, legacy("s1"), id, "block", `{"tag":"first"}`)
	if tag := recv(t, b.started, "the first start"); tag != "first" {
		t.Fatalf("started %q, want first", tag)
	}
	dup := f.fe.callTool(t, legacy("s1"), id, "block", `{"tag":"dup"}`)
	m := dup.response(t)
	if m.ID != id || m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest {
		t.Fatalf("duplicate: got %+v, want a -32600 error for id 7", m)
	}
	other := f.fe.callTool(t, legacy("s2"), id, "block", `{"tag":"other"}`)
	if tag := recv(t, b.started, "the other session's start"); tag != "other" {
		t.Fatalf("started %q, want other (the duplicate must not run)", tag)
	}

	b.releaseAll()
	for _, tt := range []struct {
		st   *stream
		want string
	}{{first, "released first"}, {other, "released other"}} {
		m := tt.st.response(t)
		if m.ID != id || m.Error != nil || !strings.Contains(string(m.Result), tt.want) {
			t.Errorf("got %+v (%s), want a result with %q", m, m.Result, tt.want)
		}
	}
	recv(t, b.returned, "the first return")
	recv(t, b.returned, "the other return")

	// Once the first is over, its id may be used again in the session.
	// Its entry is removed right after its response, so retry briefly.
	deadline := time.After(wait)
	for attempt := 0; ; attempt++ {
		again := f.fe.callTool(t, legacy("s1"), id, "block", `{"tag":"again"}`)
		m := again.response(t)
		if m.Error == nil {
			break
		}
		if m.Error.Code != protocol.CodeInvalidRequest {
			t.Fatalf("reusing the id: %+v", m.Error)
		}
		select {
		case <-deadline:
			t.Fatal("the id stayed in use after its request ended")
		default:
		}
	}
	f.wantNoMore(t, first, dup, other)
}

func TestHeartbeats(t *testing.T) {
	s := newServer()
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, &worker.Options{ID: "worker-hb", HeartbeatInterval: 50 * time.Millisecond})
	st := f.fe.callTool(t, nil, protocol.Int64ID(1), "block", "")
	recv(t, b.started, "the handler start")
	for range 3 {
		fr := st.expect(t, bus.FrameHeartbeat)
		if string(fr.payload) != "worker-hb" || string(fr.payload) != f.w.ID() {
			t.Fatalf("heartbeat payload %q, want the worker id %q", fr.payload, f.w.ID())
		}
	}
	b.releaseAll()
	for {
		fr := st.next(t)
		if fr.kind == bus.FrameHeartbeat {
			continue
		}
		if fr.kind != bus.FrameResponse {
			t.Fatalf("got %s, want heartbeats then the response", fr)
		}
		break
	}
	// No heartbeat after the response.
	f.wantNoMore(t, st)
}

func TestDeadline(t *testing.T) {
	tests := []struct {
		name   string
		offset time.Duration
	}{
		{"in the past", -time.Second},
		{"near", 150 * time.Millisecond},
	}
	s := newServer()
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dl := time.Now().Add(tt.offset).UnixMilli()
			hdr := legacy("s1")
			hdr.DeadlineMs = dl
			st := f.fe.callTool(t, hdr, protocol.Int64ID(int64(i)), "block", "")
			got := recv(t, b.deadlines, "the handler start")
			if want := time.UnixMilli(dl); !got.Equal(want) {
				t.Errorf("handler deadline %v, want %v", got, want)
			}
			recv(t, b.started, "the handler start")
			if cause := recv(t, b.cancelled, "the handler's timeout"); !errors.Is(cause, context.DeadlineExceeded) {
				t.Errorf("cause = %v, want DeadlineExceeded", cause)
			}
			fr := st.next(t)
			if fr.kind != bus.FrameResponse {
				t.Fatalf("got %s, want an error response (not an end)", fr)
			}
			m := fr.msg(t)
			if m.Error == nil || m.Error.Code != protocol.CodeInternalError || !strings.Contains(m.Error.Message, "timed out") {
				t.Errorf("got %+v, want -32603 \"timed out\"", m)
			}
		})
	}
	t.Run("no deadline means DefaultTimeout", func(t *testing.T) {
		s := newServer()
		b := newBlocker(t, s, "block")
		f := newFixture(t, s, &worker.Options{DefaultTimeout: time.Hour, HeartbeatInterval: -1})
		before := time.Now()
		st := f.fe.callTool(t, nil, protocol.Int64ID(1), "block", "")
		got := recv(t, b.deadlines, "the handler start")
		after := time.Now()
		if got.Before(before.Add(time.Hour)) || got.After(after.Add(time.Hour)) {
			t.Errorf("deadline %v, want about an hour from now", got)
		}
		b.releaseAll()
		if m := st.response(t); m.Error != nil {
			t.Errorf("got %+v", m.Error)
		}
	})
}

// BenchmarkRoundTrip measures one tools/call through the bus: envelope,
// worker dispatch, handler, response frame. Each iteration waits for its
// response before the next starts.
func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b, echoServer(b), nil)
	params := `{"name":"echo","arguments":{"text":"hello"}}`
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		st := f.fe.publish(b, nil, protocol.Int64ID(i), protocol.MethodToolsCall, "echo", params)
		if fr := st.next(b); fr.kind != bus.FrameResponse {
			b.Fatalf("got %s, want a response", fr)
		}
		f.fe.close(st)
	}
}

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

// Each request is answered exactly once whichever comes first: its
// handler's return or the end of its deadline, before its handler runs,
// while it runs or after it returned (deadlines from just past to just
// ahead, and a handler that returns at once). A request whose deadline
// had passed when it arrived is a timeout, never the handler's result:
// its context is done before the handler starts.
func TestRequestAnsweredOnceAtItsDeadline(t *testing.T) {
	s := newServer()
	addTool(t, s, "quick", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return &protocol.CallToolResult{Content: []protocol.Content{&protocol.TextContent{Text: "done"}}}, nil
	})
	f := newFixture(t, s, nil)
	var streams []*stream
	call := func(i int, deadline time.Time) *protocol.Message {
		hdr := legacy("s1")
		hdr.DeadlineMs = deadline.UnixMilli()
		st := f.fe.callTool(t, hdr, protocol.Int64ID(int64(i)), "quick", "")
		streams = append(streams, st)
		m := st.response(t)
		if m.Error != nil && !strings.Contains(m.Error.Message, "timed out") {
			t.Fatalf("request %d: %+v, want the result or a timeout", i, m.Error)
		}
		return m
	}
	for i := range 50 {
		if m := call(i, time.Now().Add(-time.Second)); m.Error == nil {
			t.Fatalf("request %d, its deadline a second past: got the handler's result, want a timeout", i)
		}
	}
	for i := 50; i < 250; i++ {
		call(i, time.Now().Add(time.Duration(i%5-2)*time.Millisecond))
	}
	f.wantNoMore(t, streams...)
}
