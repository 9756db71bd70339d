package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// Tasks (the 2026-07-28 tasks extension): workers run them, frontends keep
// their state in the store. A frontend applies the workers' task writes
// (bus.Subjects.TaskWrite, in a queue group: one frontend per write) and
// answers tasks/get, tasks/update and tasks/cancel for any task, whichever
// frontend and worker created it.

// taskTimeout bounds the store and bus calls of one task operation.
const taskTimeout = 5 * time.Second

// taskWriters bounds the task writes a frontend applies at once.
const taskWriters = 32

// startTaskWriter subscribes to the workers' task writes. Writes are
// applied concurrently (taskWriters at most): one slow store call does not
// hold up the others.
func (f *Frontend) startTaskWriter() (*nats.Subscription, error) {
	sem := make(chan struct{}, taskWriters)
	return f.nc.QueueSubscribe(f.subj.TaskWrite(), bus.TaskWriters, func(m *nats.Msg) {
		sem <- struct{}{}
		f.taskWG.Add(1)
		go func() { // owned by the frontend: Shutdown waits for taskWG
			defer func() { <-sem; f.taskWG.Done() }()
			var op tasks.WriteOp
			reply := tasks.WriteReply{}
			var changed *tasks.Record
			if err := json.Unmarshal(m.Data, &op); err != nil {
				reply.Error = "malformed task write"
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), taskTimeout)
				reply, changed = tasks.Apply(ctx, f.opts.Store, &op, time.Now())
				cancel()
			}
			b, _ := json.Marshal(reply)
			_ = m.Respond(b)
			f.taskChanged(changed)
		}()
	})
}

// stopTaskWriter stops taking task writes after those queued (Drain: the
// others go to the other frontends) and waits for those being applied.
func (f *Frontend) stopTaskWriter(ctx context.Context) {
	if f.taskSub == nil {
		return
	}
	closed := f.taskSub.StatusChanged(nats.SubscriptionClosed)
	if err := f.taskSub.Drain(); err == nil {
		select {
		case <-closed:
		case <-ctx.Done():
		}
	}
	done := make(chan struct{})
	go func() { f.taskWG.Wait(); close(done) }() // ends with the writes in progress, each bounded by taskTimeout
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// serveTask answers tasks/get, tasks/update and tasks/cancel from the
// store. The request must declare the extension (-32021 otherwise, before
// anything else is looked at); an unknown task is -32602.
func (f *Frontend) serveTask(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead) {
	if !protocol.DeclaresTasks(head.Meta.ClientCapabilities) {
		writeError(w, http.StatusBadRequest, msg.ID, protocol.TasksRequired(msg.Method))
		return
	}
	var p protocol.UpdateTaskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		writeError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err))
		return
	}
	if p.TaskID == "" {
		writeError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %s needs a taskId", msg.Method))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
	defer cancel()
	principal := "" // tasks are bound to the principal once authentication lands
	now := time.Now()
	var (
		rec *tasks.Record
		err error
		res protocol.Result
	)
	switch msg.Method {
	case protocol.MethodTasksGet:
		rec, _, err = tasks.Get(ctx, f.opts.Store, p.TaskID, principal)
		if err == nil && !rec.Status.Terminal() && f.taskWorkerGone(ctx, rec) {
			rec, err = f.failOrphanedTask(ctx, p.TaskID, principal, now)
		}
		if err == nil {
			res = rec.GetResult()
		}
	case protocol.MethodTasksUpdate:
		var accepted map[string]json.RawMessage
		rec, err = tasks.Update(ctx, f.opts.Store, p.TaskID, principal, func(t *tasks.Record) bool {
			accepted = t.Answer(p.InputResponses, now)
			return accepted != nil
		})
		if err == nil && accepted != nil {
			f.taskChanged(rec)
			// The record keeps them (a tasks/get sees the change at once,
			// and the worker reads them from there if this nudge is
			// lost); the nudge carries them to the worker now.
			_ = f.taskControl(ctx, p.TaskID, &tasks.Control{Op: "input", Responses: accepted})
		}
		res = &protocol.EmptyResult{ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete}}
	case protocol.MethodTasksCancel:
		cancelled := false
		rec, err = tasks.Update(ctx, f.opts.Store, p.TaskID, principal, func(t *tasks.Record) bool {
			cancelled = t.Cancel(now)
			return cancelled
		})
		if err == nil && cancelled {
			f.taskChanged(rec)
			_ = f.taskControl(ctx, p.TaskID, &tasks.Control{Op: "cancel"})
		}
		res = &protocol.EmptyResult{ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete}}
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		writeError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown task %q", p.TaskID))
		return
	case err != nil:
		f.log.Error("frontend: task store", "method", msg.Method, "err", err)
		writeError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "task store unavailable; retry"))
		return
	}
	raw, err := json.Marshal(res)
	if err != nil {
		writeError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInternalError, "internal error"))
		return
	}
	writeJSON(w, http.StatusOK, protocol.AppendResponse(nil, msg.ID, raw), nil)
}

// taskChanged announces a task's new state to the listen streams that
// watch it (notifications/tasks), on every frontend.
func (f *Frontend) taskChanged(rec *tasks.Record) {
	if rec == nil {
		return
	}
	if err := f.nc.Publish(f.subj.TaskEvent(rec.TaskID), rec.Event()); err != nil {
		f.log.Warn("frontend: announcing a task change", "err", err)
	}
}

// taskControl sends c to the worker running task id and waits for its
// acknowledgement. nats.ErrNoResponders means that worker is gone.
func (f *Frontend) taskControl(ctx context.Context, id string, c *tasks.Control) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = f.nc.RequestWithContext(ctx, f.subj.TaskControl(id), b)
	return err
}

// taskWorkerGone reports whether nobody runs a live task any more (its
// worker died). Both must agree: the worker stopped announcing itself
// (heartbeats, a few seconds) and its task's control subject has no
// responders. A worker that drains still answers; one behind a NATS
// reconnect still announces; a slow one is not "no responders".
func (f *Frontend) taskWorkerGone(ctx context.Context, rec *tasks.Record) bool {
	if f.fleet.alive(rec.Worker) {
		return false
	}
	return errors.Is(f.taskControl(ctx, rec.TaskID, &tasks.Control{Op: "ping"}), nats.ErrNoResponders)
}

// failOrphanedTask ends a task whose worker is gone: failed, with a clear
// message, unless it reached a terminal state meanwhile.
func (f *Frontend) failOrphanedTask(ctx context.Context, id, principal string, now time.Time) (*tasks.Record, error) {
	e := protocol.NewError(protocol.CodeInternalError, "the worker running this task stopped before it finished")
	changed := false
	rec, err := tasks.Update(ctx, f.opts.Store, id, principal, func(t *tasks.Record) bool {
		changed = t.Finish(nil, e, now)
		return changed
	})
	if err == nil && changed {
		f.taskChanged(rec)
	}
	return rec, err
}
