package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

func memStore(t *testing.T) *sessionstore.Memory {
	t.Helper()
	m, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func TestLifecycle(t *testing.T) {
	st := memStore(t)
	ctx := t.Context()
	now := time.Now()
	id := NewID()
	if len(id) != 22 {
		t.Fatalf("id %q", id)
	}
	if r, _ := Apply(ctx, st, &WriteOp{Op: "create", Record: New(id, "alice", "w1", now, time.Minute)}, now); r.Error != "" {
		t.Fatal(r.Error)
	}
	if _, _, err := Get(ctx, st, id, "bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another principal sees the task: %v", err)
	}
	ask := map[string]*protocol.InputRequest{"a": {Method: protocol.MethodElicitationCreate}, "b": {Method: protocol.MethodElicitationCreate}}
	if r, _ := Apply(ctx, st, &WriteOp{Op: "inputs", ID: id, Principal: "alice", Inputs: ask}, now); r.Error != "" || r.Terminal {
		t.Fatalf("inputs: %+v", r)
	}
	var accepted map[string]json.RawMessage
	rec, err := Update(ctx, st, id, "alice", func(r *Record) bool {
		accepted = r.Answer(map[string]json.RawMessage{"a": json.RawMessage(`{"action":"accept"}`), "zzz": json.RawMessage(`{}`)}, now)
		return accepted != nil
	})
	if err != nil || len(accepted) != 1 || rec.Status != protocol.TaskInputRequired || len(rec.Inputs) != 1 || rec.Inputs["b"] == nil {
		t.Fatalf("partial answer: %v %v %+v", err, accepted, rec)
	}
	rec, _ = Update(ctx, st, id, "alice", func(r *Record) bool {
		return r.Answer(map[string]json.RawMessage{"b": json.RawMessage(`{"action":"accept"}`)}, now) != nil
	})
	if rec.Status != protocol.TaskWorking || rec.Inputs != nil {
		t.Fatalf("all answered: %+v", rec)
	}
	if r, _ := Apply(ctx, st, &WriteOp{Op: "finish", ID: id, Principal: "alice", Result: json.RawMessage(`{"content":[]}`)}, now); r.Error != "" || r.Terminal {
		t.Fatalf("finish: %+v", r)
	}
	// Terminal states never change.
	if r, _ := Apply(ctx, st, &WriteOp{Op: "finish", ID: id, Principal: "alice", Error: protocol.NewError(-32603, "late")}, now); !r.Terminal {
		t.Fatalf("a second finish: %+v", r)
	}
	rec, _ = Update(ctx, st, id, "alice", func(r *Record) bool { return r.Cancel(now) })
	g := rec.GetResult()
	if g.Status != protocol.TaskCompleted || string(g.Result) != `{"content":[]}` || g.Error != nil || g.ResultType != "complete" {
		t.Fatalf("get after the terminal state: %+v", g)
	}
	c := New(NewID(), "", "w", now, time.Minute).CreateResult()
	b, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"result", "error", "inputRequests", "task", "ttl", "pollInterval", "requestState"} {
		if _, ok := m[k]; ok {
			t.Errorf("CreateTaskResult has %q: %s", k, b)
		}
	}
	if m["resultType"] != "task" || m["ttlMs"] == nil || m["status"] != "working" {
		t.Errorf("CreateTaskResult: %s", b)
	}
}

func TestCancelWins(t *testing.T) {
	st := memStore(t)
	ctx := t.Context()
	now := time.Now()
	id := NewID()
	Apply(ctx, st, &WriteOp{Op: "create", Record: New(id, "", "w", now, time.Minute)}, now)
	if rec, err := Update(ctx, st, id, "", func(r *Record) bool { return r.Cancel(now) }); err != nil || rec.Status != protocol.TaskCancelled {
		t.Fatalf("cancel: %v %+v", err, rec)
	}
	if r, _ := Apply(ctx, st, &WriteOp{Op: "finish", ID: id, Result: json.RawMessage(`{}`)}, now); !r.Terminal {
		t.Fatalf("a worker finishing after the cancel: %+v", r)
	}
	rec, _, _ := Get(ctx, st, id, "")
	if rec.Status != protocol.TaskCancelled {
		t.Fatalf("status %s", rec.Status)
	}
	if r, _ := Apply(ctx, st, &WriteOp{Op: "inputs", ID: "nope"}, now); r.Error == "" {
		t.Fatal("inputs on an unknown task succeeded")
	}
}

func TestSessionIndex(t *testing.T) {
	st := memStore(t)
	ctx := t.Context()
	now := time.Now()
	if ids, err := Indexed(ctx, st, "s1"); err != nil || ids != nil {
		t.Fatalf("empty index: %v %v", ids, err)
	}
	var want []string
	for i := 0; i < 3; i++ {
		r := New(NewID(), SessionPrincipal("s1"), "w", now, time.Minute)
		r.Legacy = true
		if rep, _ := Apply(ctx, st, &WriteOp{Op: "create", Record: r}, now); rep.Error != "" {
			t.Fatal(rep.Error)
		}
		want = append(want, r.TaskID)
	}
	// A modern task (no session) is not indexed.
	Apply(ctx, st, &WriteOp{Op: "create", Record: New(NewID(), "", "w", now, time.Minute)}, now)
	ids, err := Indexed(ctx, st, "s1")
	if err != nil || len(ids) != 3 || ids[0] != want[0] || ids[2] != want[2] {
		t.Fatalf("index %v, want %v (%v)", ids, want, err)
	}
	for i := 0; i < maxIndexed+5; i++ {
		if err := AddToIndex(ctx, st, "s2", NewID()); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _ := Indexed(ctx, st, "s2"); len(ids) != maxIndexed {
		t.Fatalf("index grew to %d, want %d at most", len(ids), maxIndexed)
	}
}
