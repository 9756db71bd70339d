package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// taskHost runs this worker's tasks (mcp.TaskHost). Task state lives in
// the store, which only frontends reach: every change is a tasks.WriteOp
// on the bus that a frontend applies before it replies. The client's input
// and cancellation reach the running handler on the task's control
// subject, which this worker subscribes to for the task's life (no
// responders there tells a frontend the worker is gone).
type taskHost struct {
	w       *Worker
	mu      sync.Mutex
	running map[string]*runningTask
	wg      sync.WaitGroup // tasks between Create and Finish
}

type runningTask struct {
	id, principal string
	sub           *nats.Subscription
	cancel        context.CancelCauseFunc
	mu            sync.Mutex
	got           map[string]json.RawMessage // input responses not yet taken
	arrived       chan struct{}              // a response arrived (capacity 1)
}

// errTaskCancelled is the cause of a task's context when the client
// cancelled it; errTaskShutdown when the worker stopped.
var (
	errTaskCancelled = errors.New("the task was cancelled")
	errTaskShutdown  = errors.New("the worker running the task shut down")
)

// taskWriteTimeout bounds one state change sent to the frontends.
const taskWriteTimeout = 5 * time.Second

func newTaskHost(w *Worker) *taskHost {
	return &taskHost{w: w, running: map[string]*runningTask{}}
}

// write sends op to the frontends and waits for the store to have it.
func (h *taskHost) write(ctx context.Context, op *tasks.WriteOp) (tasks.WriteReply, error) {
	b, err := json.Marshal(op)
	if err != nil {
		return tasks.WriteReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, taskWriteTimeout)
	defer cancel()
	m, err := h.w.nc.RequestWithContext(ctx, h.w.subj.TaskWrite(), b)
	if err != nil {
		return tasks.WriteReply{}, fmt.Errorf("worker: task %s: %w", op.Op, err)
	}
	var r tasks.WriteReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return r, fmt.Errorf("worker: task %s: malformed reply: %w", op.Op, err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("worker: task %s: %s", op.Op, r.Error)
	}
	return r, nil
}

// Create implements mcp.TaskHost.
func (h *taskHost) Create(ctx context.Context, req *mcp.Request) (*protocol.CreateTaskResult, context.Context, error) {
	now := time.Now()
	rec := tasks.New(tasks.NewID(), req.Principal, h.w.opts.ID, now, tasks.DefaultTTL)
	tctx, cancel := context.WithCancelCause(context.Background())
	tctx, cancelDeadline := context.WithDeadline(tctx, now.Add(tasks.DefaultTTL))
	rt := &runningTask{id: rec.TaskID, principal: req.Principal, cancel: func(err error) { cancel(err); cancelDeadline() },
		got: map[string]json.RawMessage{}, arrived: make(chan struct{}, 1)}
	// Subscribed before the task exists: nothing sent to it is missed.
	sub, err := h.w.nc.Subscribe(h.w.subj.TaskControl(rec.TaskID), rt.onControl)
	if err != nil {
		rt.cancel(nil)
		return nil, nil, protocol.NewError(protocol.CodeInternalError, "could not create the task; retry")
	}
	rt.sub = sub
	h.mu.Lock()
	h.running[rec.TaskID] = rt
	h.wg.Add(1)
	h.mu.Unlock()
	if _, err := h.write(ctx, &tasks.WriteOp{Op: "create", Record: rec}); err != nil {
		h.w.log.Warn("worker: creating a task", "err", err)
		h.end(rt)
		return nil, nil, protocol.NewError(protocol.CodeInternalError, "could not create the task; retry")
	}
	return rec.CreateResult(), tctx, nil
}

func (h *taskHost) task(id string) *runningTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running[id]
}

// end forgets a task: its control subscription goes, its context ends.
func (h *taskHost) end(rt *runningTask) {
	h.mu.Lock()
	_, ok := h.running[rt.id]
	delete(h.running, rt.id)
	h.mu.Unlock()
	if !ok {
		return
	}
	_ = rt.sub.Unsubscribe()
	rt.cancel(nil)
	h.wg.Done()
}

// Inputs implements mcp.TaskHost.
func (h *taskHost) Inputs(ctx context.Context, taskID string, reqs map[string]*protocol.InputRequest) (map[string]json.RawMessage, error) {
	rt := h.task(taskID)
	if rt == nil {
		return nil, fmt.Errorf("worker: task %s is not running here", taskID)
	}
	r, err := h.write(ctx, &tasks.WriteOp{Op: "inputs", ID: taskID, Principal: rt.principal, Inputs: reqs})
	if err != nil {
		return nil, err
	}
	if r.Terminal {
		return nil, context.Cause(ctx)
	}
	for {
		rt.mu.Lock()
		have := 0
		for k := range reqs {
			if _, ok := rt.got[k]; ok {
				have++
			}
		}
		if have == len(reqs) {
			out := make(map[string]json.RawMessage, len(reqs))
			for k := range reqs {
				out[k] = rt.got[k]
				delete(rt.got, k)
			}
			rt.mu.Unlock()
			return out, nil
		}
		rt.mu.Unlock()
		select {
		case <-rt.arrived:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Finish implements mcp.TaskHost.
func (h *taskHost) Finish(ctx context.Context, taskID string, result protocol.Result, e *protocol.Error) {
	rt := h.task(taskID)
	if rt == nil {
		return
	}
	defer h.end(rt)
	op := &tasks.WriteOp{Op: "finish", ID: taskID, Principal: rt.principal, Error: e}
	if e == nil {
		b, err := json.Marshal(result)
		if err != nil {
			op.Error = protocol.NewError(protocol.CodeInternalError, "internal error")
		} else {
			op.Result = b
		}
	}
	if _, err := h.write(ctx, op); err != nil {
		h.w.log.Warn("worker: recording a task's outcome", "task", taskID, "err", err)
	}
}

// onControl handles a frontend's message for a running task.
func (rt *runningTask) onControl(m *nats.Msg) {
	var c tasks.Control
	if err := json.Unmarshal(m.Data, &c); err != nil {
		return
	}
	switch c.Op {
	case "cancel":
		rt.cancel(errTaskCancelled)
	case "input":
		rt.mu.Lock()
		for k, v := range c.Responses {
			rt.got[k] = v
		}
		rt.mu.Unlock()
		select {
		case rt.arrived <- struct{}{}:
		default:
		}
	}
	if m.Reply != "" {
		_ = m.Respond([]byte("ok"))
	}
}

// shutdown waits for the running tasks until ctx ends, then cancels them
// and waits a little for their outcome to be recorded.
func (h *taskHost) shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }() // ends when every task is finished
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	h.mu.Lock()
	for _, rt := range h.running {
		rt.cancel(errTaskShutdown)
	}
	h.mu.Unlock()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}
