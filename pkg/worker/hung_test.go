package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/prometheus/client_golang/prometheus"
)

// gauge reads the value of an unlabelled gauge of reg.
func gauge(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatalf("gathering metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	tb.Fatalf("no gauge %s", name)
	return 0
}

// hungServer has "hang", a tool that ignores its context and blocks until
// the test ends (deadlocked, not dead), and "quick", which answers at once.
func hungServer(tb testing.TB) (*mcp.Server, <-chan struct{}) {
	tb.Helper()
	s := newServer()
	started := make(chan struct{}, 16)
	forever := make(chan struct{})
	// Registered before the fixture: runs after its Shutdown, so the hung
	// goroutines end with the test.
	tb.Cleanup(func() { close(forever) })
	addTool(tb, s, "hang", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		started <- struct{}{}
		<-forever
		return mcp.TextResult("too late"), nil
	})
	addTool(tb, s, "quick", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("quick"), nil
	})
	return s, started
}

func wantBusy(tb testing.TB, m *protocol.Message) {
	tb.Helper()
	if m.Error == nil || m.Error.Code != protocol.CodeInternalError || !strings.Contains(m.Error.Message, "busy") {
		tb.Fatalf("got %+v, want -32603 \"busy\"", m)
	}
}

// TestHungHandlerEndsAtDeadline: a handler that never returns costs its
// request (answered with the timeout error at its deadline) and one
// in-flight slot while it hangs, not the worker.
func TestHungHandlerEndsAtDeadline(t *testing.T) {
	s, started := hungServer(t)
	reg := prometheus.NewRegistry()
	f := newFixture(t, s, &worker.Options{MaxInFlight: 2, HeartbeatInterval: -1, Metrics: worker.NewMetrics(reg)})
	stuck := func() float64 { return gauge(t, reg, "mcpfleet_worker_stuck_handlers") }

	hang := func(id int64) {
		t.Helper()
		hdr := legacy("s1")
		deadline := time.Now().Add(300 * time.Millisecond)
		hdr.DeadlineMs = deadline.UnixMilli()
		st := f.fe.callTool(t, hdr, protocol.Int64ID(id), "hang", "")
		recv(t, started, "the hung handler's start")
		m := st.response(t)
		if time.Now().Before(deadline.Truncate(time.Millisecond)) {
			t.Errorf("answered before the deadline")
		}
		if m.Error == nil || m.Error.Code != protocol.CodeInternalError || !strings.Contains(m.Error.Message, "timed out") {
			t.Fatalf("hung request: got %+v, want -32603 \"timed out\"", m)
		}
	}
	hang(1)
	testutil.Poll(t, "the stuck gauge at 1", func() bool { return stuck() == 1 })
	// One slot is left: other requests still run.
	for i := range 3 {
		if m := f.fe.callTool(t, nil, protocol.Int64ID(int64(10+i)), "quick", "").response(t); m.Error != nil {
			t.Fatalf("quick request beside a hung one: %+v", m.Error)
		}
	}
	hang(2)
	testutil.Poll(t, "the stuck gauge at 2", func() bool { return stuck() == 2 })
	// Both slots are held by hung handlers: the worker says busy at once.
	wantBusy(t, f.fe.callTool(t, nil, protocol.Int64ID(20), "quick", "").response(t))
}

// TestCancelledHandlerKeepsItsSlot: a handler that ignores its
// cancellation still runs, so it still counts against MaxInFlight; the
// client's stream ends at once all the same.
func TestCancelledHandlerKeepsItsSlot(t *testing.T) {
	s, started := hungServer(t)
	reg := prometheus.NewRegistry()
	f := newFixture(t, s, &worker.Options{MaxInFlight: 1, HeartbeatInterval: -1, Metrics: worker.NewMetrics(reg)})
	st := f.fe.callTool(t, modern(), protocol.Int64ID(1), "hang", "")
	recv(t, started, "the hung handler's start")
	f.fe.cancel(t, bus.CancelKeyStream(f.fe.id, st.id))
	st.expect(t, bus.FrameEnd)
	testutil.Poll(t, "the stuck gauge at 1", func() bool { return gauge(t, reg, "mcpfleet_worker_stuck_handlers") == 1 })
	wantBusy(t, f.fe.callTool(t, nil, protocol.Int64ID(2), "quick", "").response(t))
	// The cancelled request is answered (the gauge moves just after the
	// stuck one) while its handler still hangs.
	testutil.Poll(t, "no request in flight (the cancelled one is answered)", func() bool {
		return gauge(t, reg, "mcpfleet_worker_inflight_requests") == 0
	})
}

// panicky is a structured result whose encoding panics: server-author code
// that runs on the worker's goroutine after the handler returned.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom in MarshalJSON") }

// TestPanicsCostTheRequest: a handler that panics, or whose result panics
// while it is encoded, gets -32603 and runs once (no redelivery to the
// other worker of the queue group); the workers keep serving.
func TestPanicsCostTheRequest(t *testing.T) {
	s := newServer()
	var calls atomic.Int64
	addTool(t, s, "panic", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		calls.Add(1)
		panic("boom")
	})
	addTool(t, s, "badresult", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		calls.Add(1)
		return &protocol.CallToolResult{StructuredContent: panicky{}}, nil
	})
	addTool(t, s, "quick", func(context.Context, *mcp.Request, json.RawMessage) (*protocol.CallToolResult, error) {
		return mcp.TextResult("quick"), nil
	})
	f := newFixture(t, s, nil)
	// A second worker in the same queue group: a redelivery would reach it.
	w2, err := worker.New(bus.NATS(connect(t, f.bus, "worker2")), s, &worker.Options{Subjects: f.subj, Logger: discard, HeartbeatInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = w2.Shutdown(ctx)
	})
	for i, tool := range []string{"panic", "badresult", "panic", "badresult"} {
		calls.Store(0)
		st := f.fe.callTool(t, nil, protocol.Int64ID(int64(i)), tool, "")
		m := st.response(t)
		if m.Error == nil || m.Error.Code != protocol.CodeInternalError {
			t.Fatalf("%s: got %+v, want -32603", tool, m)
		}
		if m := f.fe.callTool(t, nil, protocol.Int64ID(int64(100+i)), "quick", "").response(t); m.Error != nil {
			t.Fatalf("after %s: %+v", tool, m.Error)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("%s ran %d times, want once", tool, n)
		}
		f.fe.close(st)
	}
}

// TestDeadlineWinsOverTheHandlersAnswer: a handler that returns as soon
// as its context ends (at the request's deadline) races the deadline's
// own answer; the request is answered with the timeout error whichever
// wins, never with what the handler made of its context's end (here a
// result). The race is narrow: many requests, one at a time.
func TestDeadlineWinsOverTheHandlersAnswer(t *testing.T) {
	s := newServer()
	addTool(t, s, "late", func(ctx context.Context, _ *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
		<-ctx.Done()
		return mcp.TextResult("made of the end"), nil
	})
	f := newFixture(t, s, nil)
	for i := range 300 {
		hdr := legacy("s1")
		hdr.DeadlineMs = time.Now().Add(3 * time.Millisecond).UnixMilli()
		m := f.fe.callTool(t, hdr, protocol.Int64ID(int64(i)), "late", "").response(t)
		if m.Error == nil || m.Error.Message != protocol.ErrRequestTimedOut().Message {
			t.Fatalf("request %d past its deadline: got %+v (%s), want the timeout error", i, m.Error, m.Result)
		}
	}
}
