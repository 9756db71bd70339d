package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// When the "inputs" write finds the task terminal (cancelled in the store
// before the cancel reached the worker), Inputs fails and the task's
// context ends: the handler never goes on as if the client had answered.
func TestInputsOnTerminalTask(t *testing.T) {
	e, err := bus.StartEmbedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	nc, _ := e.Connect("w")
	defer nc.Close()
	fnc, _ := e.Connect("fe")
	defer fnc.Close()
	st, _ := sessionstore.NewMemory(nil)
	defer func() { _ = st.Close(context.Background()) }()
	// the frontend's task writer, as in pkg/frontend/tasks.go
	_, _ = fnc.QueueSubscribe(bus.Subjects{}.TaskWrite(), bus.TaskWriters, func(m *nats.Msg) {
		var op tasks.WriteOp
		_ = json.Unmarshal(m.Data, &op)
		r, _ := tasks.Apply(context.Background(), st, &op, time.Now())
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	})
	srv := mcp.NewServer(protocol.Implementation{Name: "x", Version: "0"}, nil)
	w, err := New(bus.NATS(nc), srv, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	created, tctx, err := w.tasks.Create(context.Background(), mcp.NewRequest(&mcp.RequestInit{}))
	if err != nil {
		t.Fatal(err)
	}
	// A frontend's tasks/cancel CAS has landed; its cancel control message
	// has not reached the worker yet (or was lost: its error is ignored).
	if _, err := tasks.Update(context.Background(), st, created.TaskID, "", func(r *tasks.Record) bool { return r.Cancel(time.Now()) }); err != nil {
		t.Fatal(err)
	}
	got, err := w.tasks.Inputs(tctx, created.TaskID, map[string]*protocol.InputRequest{"confirm": {Method: protocol.MethodElicitationCreate}})
	if err == nil {
		t.Errorf("Inputs on a cancelled task returned responses %v and a nil error; the handler proceeds without input", got)
	}
	if tctx.Err() == nil {
		t.Error("the task's context goes on after Inputs found it cancelled")
	}
	w.tasks.Finish(context.Background(), created.TaskID, &protocol.CallToolResult{}, nil)
}

// A running task answers its control messages that ask for an answer (a
// frontend's "ping", which tells a live worker from a gone one).
func TestTaskControlIsAnswered(t *testing.T) {
	l := bus.NewLocal(slog.New(slog.DiscardHandler))
	defer l.Close()
	st, _ := sessionstore.NewMemory(nil)
	defer func() { _ = st.Close(context.Background()) }()
	sub, err := l.QueueSubscribe(bus.Subjects{}.TaskWrite(), bus.TaskWriters, func(m *nats.Msg) {
		var op tasks.WriteOp
		_ = json.Unmarshal(m.Data, &op)
		r, _ := tasks.Apply(context.Background(), st, &op, time.Now())
		b, _ := json.Marshal(r)
		_ = bus.Respond(l, m, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	srv := mcp.NewServer(protocol.Implementation{Name: "x", Version: "0"}, nil)
	w, err := New(l, srv, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	created, _, err := w.tasks.Create(context.Background(), mcp.NewRequest(&mcp.RequestInit{}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.tasks.Finish(context.Background(), created.TaskID, &protocol.CallToolResult{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, _ := json.Marshal(&tasks.Control{Op: "ping"})
	m, err := l.RequestWithContext(ctx, bus.Subjects{}.TaskControl(created.TaskID), b)
	if err != nil || string(m.Data) != "ok" {
		t.Fatalf("ping of a running task: %v, %v", m, err)
	}
}
