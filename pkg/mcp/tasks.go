package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// TaskSupport says whether a tool may run as a task (the 2026-07-28 tasks
// extension). It is a registration property: nothing of it goes on the
// wire.
type TaskSupport int

// Task support levels.
const (
	// TaskForbidden (the default): the tool always answers synchronously.
	TaskForbidden TaskSupport = iota
	// TaskOptional: the tool runs as a task when the request declares the
	// extension, synchronously otherwise.
	TaskOptional
	// TaskRequired: the tool runs only as a task; a request without the
	// extension gets -32021.
	TaskRequired
)

// ToolOption configures a tool at registration.
type ToolOption func(*tool)

// WithTasks sets the tool's task support.
func WithTasks(s TaskSupport) ToolOption { return func(t *tool) { t.tasks = s } }

// BeginTaskManually makes a task tool's handler start the task itself with
// Request.BeginTask: what it does before (MRTR rounds included) is the
// synchronous part of the request; by default the task begins before the
// handler runs.
func BeginTaskManually() ToolOption { return func(t *tool) { t.manualTask = true } }

// RequiredScopesMeta is the tool _meta key naming the OAuth scopes a
// caller needs to call it (checked by the frontend when authentication
// is on: 403 insufficient_scope otherwise).
const RequiredScopesMeta = "io.mcpfleet/requiredScopes"

// RequireScopes makes calling the tool need the OAuth scopes (when the
// server runs with authentication).
func RequireScopes(scopes ...string) ToolOption {
	return func(t *tool) {
		if t.def.Meta == nil {
			t.def.Meta = protocol.Meta{}
		}
		t.def.Meta[RequiredScopesMeta] = scopes
	}
}

// TaskHost runs tasks for a transport: it keeps their state where any
// node can answer tasks/get and carries the client's input and
// cancellation to the running handler.
type TaskHost interface {
	// Create durably creates a working task for req (a tasks/get for it
	// succeeds once Create returns). The returned context ends when the
	// task is cancelled or expires; the handler runs under it. Finish is
	// called exactly once for every task Create returned.
	Create(ctx context.Context, req *Request) (*protocol.CreateTaskResult, context.Context, error)
	// Inputs moves the task to input_required, waiting for reqs, and
	// returns the client's responses (all of reqs' keys) once they came
	// with tasks/update, or ctx's error.
	Inputs(ctx context.Context, taskID string, reqs map[string]*protocol.InputRequest) (map[string]json.RawMessage, error)
	// Finish records the outcome: the tool's result (completed), or e
	// (failed). A task already terminal (cancelled) keeps its state.
	Finish(ctx context.Context, taskID string, result protocol.Result, e *protocol.Error)
}

// taskRun is one tools/call on its way to, or running as, a task.
type taskRun struct {
	host    TaskHost
	req     *Request
	cancel  context.CancelCauseFunc // ends the handler's context
	mu      sync.Mutex
	created *protocol.CreateTaskResult // set by begin
	begun   chan struct{}              // closed by begin
}

func (t *taskRun) hasBegun() bool {
	select {
	case <-t.begun:
		return true
	default:
		return false
	}
}

func (t *taskRun) id() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.created.TaskID
}

// begin creates the task; later calls do nothing.
func (t *taskRun) begin(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created != nil {
		return nil
	}
	created, tctx, err := t.host.Create(ctx, t.req)
	if err != nil {
		return err
	}
	t.created = created
	// The task's end (cancel, expiry) ends the handler.
	context.AfterFunc(tctx, func() { t.cancel(context.Cause(tctx)) })
	close(t.begun)
	return nil
}

// BeginTask turns the current tools/call into a task: the client gets
// the CreateTaskResult now, and the handler goes on in the background,
// under a context the task's cancellation ends. Only tools registered
// with BeginTaskManually call it (after their synchronous MRTR rounds);
// elsewhere, and when the request does not run as a task, it does
// nothing.
func (r *Request) BeginTask(ctx context.Context) error {
	if r.task == nil {
		return nil
	}
	return r.task.begin(ctx)
}

// TaskID returns the id of the task the request runs as ("" if none).
func (r *Request) TaskID() string {
	if r.task == nil || !r.task.hasBegun() {
		return ""
	}
	return r.task.id()
}

type toolOutcome struct {
	res protocol.Result
	err error
}

// runTask runs a task-capable tool for a request that declared the tasks
// extension: the answer is its CreateTaskResult once the task begins, or
// the handler's own answer if it ends first without beginning one (an MRTR
// round of a manual tool).
func (s *Server) runTask(ctx context.Context, req *Request, t *tool, args json.RawMessage) (protocol.Result, error) {
	hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	tr := &taskRun{host: req.in.TaskHost, req: req, cancel: hcancel, begun: make(chan struct{})}
	req.task = tr
	// Until the task begins, the request's end ends the handler.
	stop := context.AfterFunc(ctx, func() {
		if !tr.hasBegun() {
			hcancel(context.Cause(ctx))
		}
	})
	if !t.manualTask {
		if err := tr.begin(ctx); err != nil {
			stop()
			hcancel(nil)
			return nil, err
		}
	}
	done := make(chan toolOutcome, 1)
	go func() { // owned by the request, then by the task: ends with the handler
		defer func() {
			if p := recover(); p != nil {
				s.logger().ErrorContext(hctx, "mcp: task handler panic", "tool", t.def.Name, "panic", p, "stack", string(debug.Stack()))
				done <- toolOutcome{err: protocol.ErrInternalFailure()}
			}
		}()
		res, err := invokeTool(hctx, req, t, args)
		done <- toolOutcome{res, err}
	}()
	select {
	case o := <-done:
		stop()
		if !tr.hasBegun() {
			hcancel(nil)
			return o.res, o.err
		}
		s.finishTask(hctx, tr, o)
		hcancel(nil)
	case <-tr.begun:
		stop()
		go func() { // owned by the task: its host counts it until Finish
			s.finishTask(hctx, tr, <-done)
			hcancel(nil)
		}()
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if req.in.Era == protocol.EraLegacy {
		return &protocol.LegacyCreateTaskResult{Task: tr.created.Legacy()}, nil
	}
	return tr.created, nil
}

// finishTask hands a task's outcome to its host; hctx is the handler's
// context (its values: what the logs of the outcome carry).
func (s *Server) finishTask(hctx context.Context, tr *taskRun, o toolOutcome) {
	var e *protocol.Error
	if o.err != nil {
		switch {
		case errors.Is(o.err, ErrInputRequired):
			e = protocol.NewError(protocol.CodeInternalError, "the task asked for input outside of a task round")
		default:
			e = s.toProtocolError(hctx, tr.req, o.err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr.host.Finish(ctx, tr.id(), o.res, e)
}
