package stream_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// appendMsg sends an append envelope as a worker does and returns the
// frontend's reply.
func appendMsg(t *testing.T, nc *nats.Conn, h bus.AppendHeader, kind bus.FrameKind, payload string) string {
	t.Helper()
	data, err := bus.EncodeAppend(&h, bus.AppendFrame(nil, kind, []byte(payload)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := nc.Request(bus.Subjects{}.Append(h.Frontend, h.Stream), data, 5*time.Second)
	if err != nil {
		t.Fatalf("append seq %d: %v", h.Seq, err)
	}
	return string(resp.Data)
}

// TestOnAppend: an append is logged once by its sequence number, only in
// a stream whose log exists, published live, and always acked.
func TestOnAppend(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{NoFixture: true})
	sess := &sessionstore.Session{ID: sessionstore.NewID()}
	if err := ip.Store.Create(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	h := bus.AppendHeader{Session: sess.ID, Frontend: "dead-fe", Stream: "b1", Seq: 1}
	sse := stream.PostStreamID(h.Frontend, h.Stream)
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`

	// A stream never started: acked, nothing logged.
	if got := appendMsg(t, ip.NC, h, bus.FrameNotification, note); got != "" {
		t.Fatalf("reply %q, want an ack", got)
	}
	if evs, err := ip.Store.EventsAfter(t.Context(), sess.ID, sse, 0); err != nil || len(evs) != 0 {
		t.Fatalf("a stream without a log got %v, %v", evs, err)
	}

	live := make(chan *nats.Msg, 8)
	sub, err := ip.NC.ChanSubscribe(bus.Subjects{}.Live(sess.ID, sse), live)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if _, err := ip.Store.AppendEvent(t.Context(), sess.ID, sse, []byte("\x00start 1")); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		seq  uint64
		kind bus.FrameKind
		data string
	}{{1, bus.FrameNotification, note}, {1, bus.FrameNotification, note}, {2, bus.FrameResponse, `{"jsonrpc":"2.0","id":1,"result":{}}`}, {2, bus.FrameResponse, "dup"}} {
		h.Seq = step.seq
		if got := appendMsg(t, ip.NC, h, step.kind, step.data); got != "" {
			t.Fatalf("seq %d: reply %q, want an ack", step.seq, got)
		}
	}
	evs, err := ip.Store.EventsAfter(t.Context(), sess.ID, sse, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || string(evs[0].Data) != note || !strings.Contains(string(evs[1].Data), `"result"`) {
		t.Fatalf("the log after the start: %+v", evs)
	}
	for i, want := range []uint64{2, 3} {
		select {
		case m := <-live:
			idx, data, _, ok := bus.ParseLiveEvent(m.Data)
			if !ok || idx != want || string(data) != string(evs[i].Data) {
				t.Fatalf("live event %d: %q", i, m.Data)
			}
		case <-time.After(testenv.HangGuard(5 * time.Second)):
			t.Fatalf("no live event %d", i)
		}
	}
	select {
	case m := <-live:
		t.Fatalf("a duplicate was published live: %q", m.Data)
	default:
	}

	// Malformed, or of a session that is gone: acked and dropped.
	resp, err := ip.NC.Request(bus.Subjects{}.Append("x", "y"), []byte("not an envelope"), 5*time.Second)
	if err != nil || len(resp.Data) != 0 {
		t.Fatalf("a malformed append: %v %+v", err, resp)
	}
	h.Session, h.Seq = sessionstore.NewID(), 1
	if got := appendMsg(t, ip.NC, h, bus.FrameNotification, note); got != "" {
		t.Fatalf("unknown session: reply %q", got)
	}
}

// TestHolderGivesTheLog: when another frontend logged one of the stream's
// messages before the holder could (the holder was slow to ack), the
// attached client gets what the log has, in order, each once: here a
// message logged in the worker's place under its next sequence number,
// instead of the worker's own.
func TestHolderGivesTheLog(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{NoFixture: true})
	cl := testenv.NewClient(t, ip.URL)
	cl.Initialize(nil)
	s := cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "progress_steady",
		"arguments": map[string]any{"count": 3, "interval_ms": 400}, "_meta": map[string]any{"progressToken": "t"}}), nil)
	ev, m := s.NextMessage(t, testenv.HangGuard(10*time.Second)) // progress 1: seq 1
	if m.Method != "notifications/progress" {
		t.Fatalf("first message %+v", m)
	}
	id, _, _ := stream.ParseEventID(ev.ID)
	fe, busID, ok := stream.SplitPostStream(id)
	if !ok {
		t.Fatalf("event id %q", ev.ID)
	}
	injected := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"logged elsewhere"}}`
	if got := appendMsg(t, ip.NC, bus.AppendHeader{Session: cl.SessionID, Frontend: fe, Stream: busID, Seq: 2}, bus.FrameNotification, injected); got != "" {
		t.Fatalf("reply %q", got)
	}
	msgs, ids, ended := s.Rest(testenv.HangGuard(10 * time.Second))
	if !ended {
		t.Fatal("the stream did not end")
	}
	var got []string
	for _, m := range msgs {
		switch {
		case m.Method == "notifications/progress":
			var p struct{ Progress float64 }
			_ = json.Unmarshal(m.Params, &p)
			got = append(got, fmt.Sprintf("progress %g", p.Progress))
		case m.Method != "":
			got = append(got, m.Method)
		default:
			got = append(got, "response")
		}
	}
	want := []string{"notifications/message", "progress 3", "response"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the injected message the client got %v (ids %v), want %v", got, ids, want)
	}
	prev := ev.ID
	for _, id := range ids {
		if id <= prev && len(id) == len(prev) {
			t.Fatalf("ids not increasing: %s after %s", id, prev)
		}
		prev = id
	}
}
