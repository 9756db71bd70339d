package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
)

var _ = worker.New
var _ = nats.Connect
var _ = json.Marshal
var _ = errors.Is
var _ = time.Now
var _ = context.Background
var _ = bus.FrameEnd
var _ = protocol.Int64ID
func TestZZShutdownAnswersCancelledRequests(t *testing.T) {
	s := echoServer(t)
	b := newBlocker(t, s, "block")
	f := newFixture(t, s, nil)
	st := f.fe.callTool(t, legacy("s1"), protocol.Int64ID(1), "block", "")
	recv(t, b.started, "the handler start")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = f.w.Shutdown(ctx)
	fr := st.next(t)
	if fr.kind != bus.FrameResponse {
		t.Fatalf("got %s, want an error response telling the client to retry", fr)
	}
	if m := fr.msg(t); m.Error == nil || m.Error.Code != protocol.CodeInternalError {
		t.Errorf("got %s, want -32603", fr.payload)
	}
}

func TestZZShutdownWithoutStart(t *testing.T) {
	e := startBus(t)
	w, err := worker.New(connect(t, e, "worker"), newServer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown without Start = %v, want nil", err)
	}
}

func TestZZShutdownLosesNoQueuedRequest(t *testing.T) {
	f := newFixture(t, echoServer(t), nil)
	const n = 3000
	streams := make([]*stream, 0, n)
	for i := range n {
		st := f.fe.newStream()
		h := *legacy("s1")
		h.Frontend, h.Stream = f.fe.id, st.id
		data, err := bus.EncodeRequest(&h, protocol.AppendRequest(nil, protocol.Int64ID(int64(i)), protocol.MethodToolsCall, []byte(`{"name":"echo","arguments":{"text":"x"}}`)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.fe.nc.PublishMsg(&nats.Msg{Subject: f.subj.Request(protocol.MethodToolsCall, "echo"), Reply: st.subject, Data: data}); err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	if err := f.fe.nc.Flush(); err != nil { // NATS has routed (or refused) every request
		t.Fatal(err)
	}
	f.shutdown(t)
	lost := 0
	for _, st := range streams {
		if frames := f.rest(t, st); len(frames) != 1 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d requests queued at Shutdown got no answer (want exactly one frame each)", lost, n)
	}
}

func TestZZServerToClientCallCancelledByDeadline(t *testing.T) {
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
