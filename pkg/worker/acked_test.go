package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
)

// progressServer has the tool "steps" sending n progress notifications
// (n from its arguments), then "done".
func progressServer(t *testing.T) *mcp.Server {
	s := newServer()
	addTool(t, s, "steps", func(ctx context.Context, req *mcp.Request, raw json.RawMessage) (*protocol.CallToolResult, error) {
		var in struct{ N int }
		_ = json.Unmarshal(raw, &in)
		for i := 1; i <= in.N; i++ {
			if err := req.Progress(ctx, float64(i), float64(in.N), ""); err != nil {
				return nil, err
			}
		}
		return mcp.TextResult("done"), nil
	})
	return s
}

const stepsParams = `{"name":"steps","arguments":{"n":5},"_meta":{"progressToken":"p"}}`

// TestAckedFramesInOrder: a legacy request's payload frames carry their
// sequence numbers 1, 2, ... in order, the response last; a modern
// request's frames carry none.
func TestAckedFramesInOrder(t *testing.T) {
	f := newFixture(t, progressServer(t), nil)
	st := f.fe.send(t, legacy("s1"), protocol.Int64ID(1), protocol.MethodToolsCall, "steps", stepsParams)
	for i := uint64(1); i <= 6; i++ {
		fr := st.next(t)
		want := bus.FrameNotification
		if i == 6 {
			want = bus.FrameResponse
		}
		if fr.kind != want || fr.seq != i {
			t.Fatalf("frame %d: %s seq %d, want %c seq %d", i, fr, fr.seq, want, i)
		}
	}
	mst := f.fe.send(t, modern(), protocol.Int64ID(1), protocol.MethodToolsCall, "steps",
		`{"name":"steps","arguments":{"n":2},"_meta":{"progressToken":"p",`+modernMeta[1:]+`}`)
	for range 3 {
		if fr := mst.next(t); fr.seq != 0 {
			t.Fatalf("a modern frame with seq %d: %s", fr.seq, fr)
		}
	}
	// A response that comes first is a plain JSON answer: never logged,
	// not acked.
	pst := f.fe.send(t, legacy("s1"), protocol.Int64ID(2), protocol.MethodToolsCall, "steps", `{"name":"steps","arguments":{"n":0}}`)
	if fr := pst.expect(t, bus.FrameResponse); fr.seq != 0 {
		t.Fatalf("a first response with seq %d", fr.seq)
	}
	f.wantNoMore(t, st, mst, pst)
}

// appender plays the frontends' append queue: it records each append
// envelope and acks it.
type appender struct {
	ch chan appended
}

type appended struct {
	hdr   bus.AppendHeader
	kind  bus.FrameKind
	frame []byte
}

func newAppender(t *testing.T, nc *nats.Conn, subj bus.Subjects) *appender {
	a := &appender{ch: make(chan appended, 64)}
	sub, err := nc.QueueSubscribe(subj.AllAppends(), bus.AppendQueue, func(m *nats.Msg) {
		h, fr, err := bus.DecodeAppend(m.Data)
		if err != nil {
			t.Errorf("a malformed append: %v", err)
			return
		}
		k, _ := bus.ParseFrame(fr, "")
		_ = m.Respond(nil) // acked before the test sees it: its cleanup cannot lose the ack
		a.ch <- appended{hdr: *h, kind: k, frame: fr}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return a
}

// expectAppends checks that the appender gets the steps tool's frames,
// each once, in order, for stream st of frontend fe.
func (a *appender) expectAppends(t *testing.T, fe, st string) {
	t.Helper()
	for i := uint64(1); i <= 6; i++ {
		got := recv(t, a.ch, fmt.Sprintf("append %d", i))
		want := bus.FrameNotification
		if i == 6 {
			want = bus.FrameResponse
		}
		if got.kind != want || got.hdr != (bus.AppendHeader{Session: "s1", Frontend: fe, Stream: st, Seq: i}) {
			t.Fatalf("append %d: %c %+v", i, got.kind, got.hdr)
		}
	}
	select {
	case got := <-a.ch:
		t.Fatalf("an extra append: %+v", got.hdr)
	default:
	}
}

// TestAckedFallbackNoHolder: when no frontend holds the stream (its
// subject has no responders: the holder is dead), every frame goes
// through the append queue, at once.
func TestAckedFallbackNoHolder(t *testing.T) {
	f := newFixture(t, progressServer(t), nil)
	a := newAppender(t, connect(t, f.bus, "other frontend"), f.subj)
	hdr := *legacy("s1")
	hdr.Frontend, hdr.Stream = "dead", "st1" // nobody listens there
	data, err := bus.EncodeRequest(&hdr, protocol.AppendRequest(nil, protocol.Int64ID(1), protocol.MethodToolsCall, []byte(stepsParams)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.fe.nc.PublishMsg(&nats.Msg{Subject: f.subj.Request(protocol.MethodToolsCall, "steps"), Reply: f.subj.Stream("dead", "st1"), Data: data}); err != nil {
		t.Fatal(err)
	}
	a.expectAppends(t, "dead", "st1")
	// No responders is immediate: six frames cost no ack timeout (the
	// fixture's is 10s).
	if d := time.Since(start); d > wait/2 {
		t.Errorf("the appends took %s", d)
	}
}

// TestAckedFallbackCutOff: a holder that receives frames but does not ack
// them (cut off) costs each frame the ack timeout, then the frame goes
// through the append queue; the holder saw each frame too (it logs them
// idempotently).
func TestAckedFallbackCutOff(t *testing.T) {
	f := newFixture(t, progressServer(t), &worker.Options{HeartbeatInterval: -1, AckTimeout: 50 * time.Millisecond})
	a := newAppender(t, connect(t, f.bus, "other frontend"), f.subj)
	f.fe.noAck.Store(true)
	st := f.fe.send(t, legacy("s1"), protocol.Int64ID(1), protocol.MethodToolsCall, "steps", stepsParams)
	a.expectAppends(t, "fe1", st.id)
	for i := uint64(1); i <= 6; i++ {
		if fr := st.next(t); fr.seq != i {
			t.Fatalf("the holder's frame %d has seq %d", i, fr.seq)
		}
	}
	f.wantNoMore(t, st)
}

// TestAckedAbort: a cancelled legacy request whose stream started ends
// it with an acked end frame, after the frames before it; one that sent
// nothing yet ends it with a plain one (there is no log to write).
func TestAckedAbort(t *testing.T) {
	s := newServer()
	started := make(chan struct{}, 1)
	addTool(t, s, "wait", func(ctx context.Context, req *mcp.Request, raw json.RawMessage) (*protocol.CallToolResult, error) {
		var in struct{ Progress bool }
		_ = json.Unmarshal(raw, &in)
		if in.Progress {
			if err := req.Progress(ctx, 1, 2, ""); err != nil {
				return nil, err
			}
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	f := newFixture(t, s, nil)
	var streams []*stream
	for i, tc := range []struct {
		progress bool
		seqs     []uint64
	}{{false, []uint64{0}}, {true, []uint64{1, 2}}} {
		id := protocol.Int64ID(int64(i))
		st := f.fe.send(t, legacy("s1"), id, protocol.MethodToolsCall, "wait",
			fmt.Sprintf(`{"name":"wait","arguments":{"progress":%v},"_meta":{"progressToken":"p"}}`, tc.progress))
		streams = append(streams, st)
		recv(t, started, "the handler start")
		f.fe.cancel(t, bus.CancelKeyLegacy("s1", id))
		for j, seq := range tc.seqs {
			fr := st.next(t)
			want := bus.FrameNotification
			if j == len(tc.seqs)-1 {
				want = bus.FrameEnd
			}
			if fr.kind != want || fr.seq != seq {
				t.Fatalf("progress %v, frame %d: %s seq %d, want %c seq %d", tc.progress, j, fr, fr.seq, want, seq)
			}
		}
	}
	f.wantNoMore(t, streams...)
}
