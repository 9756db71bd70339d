package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
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
	closing bool           // Shutdown began: no new tasks
	wg      sync.WaitGroup // tasks between Create and Finish
}

type runningTask struct {
	id, principal string
	nc            bus.Conn // answers the control messages
	sub           bus.Subscription
	ctx           context.Context // the task's context (its cause says why it ended)
	cancel        context.CancelCauseFunc
	mu            sync.Mutex
	got           map[string]json.RawMessage // input responses received
	changed       chan struct{}              // closed (and replaced) when got grows
}

// maxTasks caps the tasks one worker runs at once.
const maxTasks = 1000

// answerPoll is how often a task waiting for input reads its answers from
// the store, in case a frontend's nudge was lost.
const answerPoll = time.Second

// errTaskCancelled is the cause of a task's context when the client
// cancelled it; errTaskShutdown when the worker stopped.
var (
	errTaskCancelled = errors.New("the task was cancelled")
	errTaskShutdown  = errors.New("the worker running the task shut down")
	errTooLarge      = errors.New("over the bus's message size limit")
)

// taskWriteTimeout bounds one state change sent to the frontends.
const taskWriteTimeout = 5 * time.Second

func newTaskHost(w *Worker) *taskHost {
	return &taskHost{w: w, running: map[string]*runningTask{}}
}

// write sends op to the frontends and waits for the store to have it. Every
// op is idempotent, so a write whose reply was lost (a timeout, no
// frontend for a moment) is sent again, three times at most.
func (h *taskHost) write(ctx context.Context, op *tasks.WriteOp) (tasks.WriteReply, error) {
	b, err := json.Marshal(op)
	if err != nil {
		return tasks.WriteReply{}, err
	}
	if max := h.w.nc.MaxPayload(); max > 0 && int64(len(b)) > max {
		return tasks.WriteReply{}, fmt.Errorf("worker: task %s: %d bytes: %w (%d bytes)", op.Op, len(b), errTooLarge, max)
	}
	var m *nats.Msg
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, taskWriteTimeout)
		m, err = h.w.nc.RequestWithContext(actx, h.w.subj.TaskWrite(), b)
		cancel()
		if err == nil || attempt == 2 || ctx.Err() != nil ||
			!(errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
			break
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
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
	principal := req.Principal()
	if req.Era() == protocol.EraLegacy {
		principal = tasks.SessionPrincipal(req.SessionID())
	}
	rec := tasks.New(tasks.NewID(), principal, h.w.opts.ID, now, tasks.DefaultTTL)
	rec.Legacy = req.Era() == protocol.EraLegacy
	tctx, cancel := context.WithCancelCause(context.Background())
	// The work stops at 90% of the TTL, so the outcome stays readable for
	// the rest of it.
	tctx, cancelDeadline := context.WithDeadline(tctx, now.Add(tasks.DefaultTTL*9/10))
	rt := &runningTask{id: rec.TaskID, nc: h.w.nc, principal: principal, ctx: tctx, cancel: func(err error) { cancel(err); cancelDeadline() },
		got: map[string]json.RawMessage{}, changed: make(chan struct{})}
	h.mu.Lock()
	switch {
	case h.closing:
		h.mu.Unlock()
		rt.cancel(nil)
		return nil, nil, shuttingDownError()
	case len(h.running) >= maxTasks:
		h.mu.Unlock()
		rt.cancel(nil)
		return nil, nil, protocol.NewError(protocol.CodeInternalError, "worker busy (%d tasks running); retry later", maxTasks)
	}
	h.running[rec.TaskID] = rt
	h.wg.Add(1)
	h.mu.Unlock()
	// Subscribed before the task exists: nothing sent to it is missed.
	sub, err := h.w.nc.Subscribe(h.w.subj.TaskControl(rec.TaskID), h.w.guard("a task control message", rt.onControl))
	if err != nil {
		h.mu.Lock()
		delete(h.running, rec.TaskID)
		h.mu.Unlock()
		h.wg.Done()
		rt.cancel(nil)
		return nil, nil, taskNotCreatedError()
	}
	rt.sub = sub
	if _, err := h.write(ctx, &tasks.WriteOp{Op: "create", Record: rec}); err != nil {
		h.w.log.WarnContext(ctx, "worker: creating a task", "err", err)
		h.end(rt)
		return nil, nil, taskNotCreatedError()
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
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	r, err := h.write(ctx, &tasks.WriteOp{Op: "inputs", ID: taskID, Principal: rt.principal, Inputs: reqs})
	if err != nil {
		return nil, err
	}
	if r.Terminal {
		rt.cancel(errTaskCancelled)
		return nil, errTaskCancelled
	}
	poll := time.NewTicker(answerPoll)
	defer poll.Stop()
	for {
		rt.mu.Lock()
		out := make(map[string]json.RawMessage, len(keys))
		for _, k := range keys {
			if a, ok := rt.got[k]; ok {
				out[k] = a
			}
		}
		changed := rt.changed
		rt.mu.Unlock()
		if len(out) == len(keys) {
			return out, nil
		}
		select {
		case <-changed:
		case <-poll.C:
			// A nudge may have been lost: the answers are in the store.
			r, err := h.write(ctx, &tasks.WriteOp{Op: "answers", ID: taskID, Principal: rt.principal, Keys: keys})
			if err == nil {
				if r.Terminal {
					rt.cancel(errTaskCancelled)
					return nil, errTaskCancelled
				}
				rt.add(r.Responses)
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// add records input responses and wakes every waiter.
func (rt *runningTask) add(responses map[string]json.RawMessage) {
	if len(responses) == 0 {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for k, v := range responses {
		rt.got[k] = v
	}
	close(rt.changed)
	rt.changed = make(chan struct{})
}

// Finish implements mcp.TaskHost.
func (h *taskHost) Finish(ctx context.Context, taskID string, result protocol.Result, e *protocol.Error) {
	rt := h.task(taskID)
	if rt == nil {
		return
	}
	defer h.end(rt)
	if errors.Is(context.Cause(rt.ctx), errTaskShutdown) {
		e = protocol.NewError(protocol.CodeInternalError, "the worker running the task shut down before it finished; run it again")
	}
	op := &tasks.WriteOp{Op: "finish", ID: taskID, Principal: rt.principal, Error: e}
	if e == nil {
		b, err := h.marshal(result)
		if err != nil {
			h.w.log.WarnContext(ctx, "worker: marshalling a task's result", "task", taskID, "err", err)
			op.Error = protocol.ErrInternalFailure()
		} else {
			op.Result = b
		}
	}
	_, err := h.write(ctx, op)
	if errors.Is(err, errTooLarge) && op.Error == nil {
		// The result does not fit on the bus: the task fails, and says so.
		op.Result, op.Error = nil, protocol.NewError(protocol.CodeInternalError, "the task's result is too large to deliver")
		_, err = h.write(ctx, op)
	}
	if err != nil {
		h.w.log.WarnContext(ctx, "worker: recording a task's outcome", "task", taskID, "err", err)
	}
}

// marshal encodes a task's result; a panic in the result's own
// MarshalJSON (server-author code, run on the goroutine that finishes the
// task) is an error, not the end of the worker.
func (h *taskHost) marshal(result protocol.Result) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return json.Marshal(result)
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
		rt.add(c.Responses)
	}
	if m.Reply != "" {
		_ = bus.Respond(rt.nc, m, []byte("ok"))
	}
}

// shutdown waits for the running tasks until ctx ends, then cancels them
// and waits a little for their outcome to be recorded.
func (h *taskHost) shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true // no Create adds to wg from now on
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }() // ends when every task is finished: they are all cancelled below at the latest
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	for _, rt := range h.running {
		rt.cancel(errTaskShutdown)
	}
	h.mu.Unlock()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return fmt.Errorf("worker: tasks still running at the end of the drain were cancelled: %w", ctx.Err())
}

// taskNotCreatedError answers a task-augmented request whose task could not
// be set up (its control subscription or its record): -32603, retry.
func taskNotCreatedError() *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "could not create the task; retry")
}
