package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
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
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.TasksRequired(msg.Method))
		return
	}
	var p protocol.UpdateTaskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err))
		return
	}
	if p.TaskID == "" {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %s needs a taskId", msg.Method))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
	defer cancel()
	principal := principalOf(r) // tasks are bound to their creator's principal
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
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown task %q", p.TaskID))
		return
	case err != nil:
		f.log.Error("frontend: task store", "method", msg.Method, "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "task store unavailable; retry"))
		return
	}
	raw, err := json.Marshal(res)
	if err != nil {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInternalError, "internal error"))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, protocol.AppendResponse(nil, msg.ID, raw), nil)
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
	if s := rec.SessionOf(); s != "" {
		// 2025-11-25: notifications/tasks/status on the session's stream.
		n, err := protocol.EncodeNotification(protocol.NotificationTasksStatus, rec.Task.Legacy())
		if err == nil {
			_ = f.nc.Publish(f.subj.Session(s), bus.AppendFrame(nil, bus.FrameNotification, n))
		}
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
	if f.fleet.Alive(rec.Worker) {
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

// The 2025-11-25 experimental tasks of a legacy session: tasks/get,
// tasks/cancel and tasks/result, answered from the store for the session's
// own tasks (principal "session:<id>").

// legacyTaskMethod reports whether a legacy request is a task method this
// frontend answers.
func legacyTaskMethod(method string) bool {
	switch method {
	case protocol.MethodTasksGet, protocol.MethodTasksCancel, protocol.MethodTasksResult, protocol.MethodTasksList:
		return true
	}
	return false
}

// taskPage is the page size of tasks/list.
const taskPage = 100

// legacyTaskList is tasks/list: the session's tasks that still exist,
// oldest first, taskPage at a time (the cursor is an offset).
func (f *Frontend) legacyTaskList(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) {
	var p protocol.PaginatedParams
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %v", err))
			return
		}
	}
	from := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: bad cursor"))
			return
		}
		from = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
	defer cancel()
	ids, err := tasks.Indexed(ctx, f.opts.Store, sessionID)
	if !f.taskStoreErr(w, msg, "", err) {
		return
	}
	res := &protocol.ListTasksResult{Tasks: []protocol.LegacyTask{}}
	principal := tasks.SessionPrincipal(sessionID)
	i := from
	for ; i < len(ids) && len(res.Tasks) < taskPage; i++ {
		rec, _, err := tasks.Get(ctx, f.opts.Store, ids[i], principal)
		if errors.Is(err, tasks.ErrNotFound) {
			continue // expired
		}
		if !f.taskStoreErr(w, msg, ids[i], err) {
			return
		}
		res.Tasks = append(res.Tasks, rec.Task.Legacy())
	}
	if i < len(ids) {
		res.NextCursor = strconv.Itoa(i)
	}
	httpx.WriteResult(w, msg.ID, res)
}

// taskRequestID is the id of a server-to-client request asking for a
// legacy task's input key (sent on its tasks/result stream); the client's
// response to it is the task's answer.
func taskRequestID(taskID, key string) protocol.ID {
	return protocol.StringID("task:" + taskID + ":" + key)
}

func parseTaskRequestID(id protocol.ID) (taskID, key string, ok bool) {
	if !id.IsString() || !strings.HasPrefix(id.Str(), "task:") {
		return "", "", false
	}
	rest := id.Str()[len("task:"):]
	i := strings.IndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

func (f *Frontend) legacyTask(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) {
	if msg.Method == protocol.MethodTasksList {
		f.legacyTaskList(w, r, sessionID, msg)
		return
	}
	var p protocol.TaskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.TaskID == "" {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: %s needs a taskId", msg.Method))
		return
	}
	principal := tasks.SessionPrincipal(sessionID)
	if msg.Method == protocol.MethodTasksResult {
		// It waits, possibly long: it holds the session's in-flight slots.
		held, ok := f.admit(w, r, msg.ID, sessionID)
		if !ok {
			return
		}
		defer held.release()
		f.legacyTaskResult(w, r, msg, p.TaskID, principal)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
	defer cancel()
	now := time.Now()
	var (
		rec *tasks.Record
		err error
	)
	switch msg.Method {
	case protocol.MethodTasksGet:
		rec, _, err = tasks.Get(ctx, f.opts.Store, p.TaskID, principal)
		if err == nil && !rec.Status.Terminal() && f.taskWorkerGone(ctx, rec) {
			rec, err = f.failOrphanedTask(ctx, p.TaskID, principal, now)
		}
	case protocol.MethodTasksCancel:
		cancelled := false
		rec, err = tasks.Update(ctx, f.opts.Store, p.TaskID, principal, func(t *tasks.Record) bool {
			cancelled = t.Cancel(now)
			return cancelled
		})
		if err == nil && !cancelled {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: task %q is already %s", p.TaskID, rec.Status))
			return
		}
		if err == nil {
			f.taskChanged(rec)
			_ = f.taskControl(ctx, p.TaskID, &tasks.Control{Op: "cancel"})
		}
	}
	if !f.taskStoreErr(w, msg, p.TaskID, err) {
		return
	}
	httpx.WriteResult(w, msg.ID, &protocol.LegacyTaskResult{LegacyTask: rec.Task.Legacy()})
}

// taskStoreErr writes the error for err (unknown task: -32602; store
// trouble: 503) and reports whether there was none.
func (f *Frontend) taskStoreErr(w http.ResponseWriter, msg *protocol.Message, taskID string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, tasks.ErrNotFound):
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown task %q", taskID))
	default:
		f.log.Error("frontend: task store", "method", msg.Method, "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "task store unavailable; retry"))
	}
	return false
}

// legacyTaskResult is tasks/result: it waits (up to the request timeout)
// for the task to end and answers what the task's request would have, with
// the related-task _meta. While the task waits for input, its requests go
// to the client on this response's SSE stream, with ids that route the
// client's answers back to the task.
func (f *Frontend) legacyTaskResult(w http.ResponseWriter, r *http.Request, msg *protocol.Message, taskID, principal string) {
	changes := make(chan *nats.Msg, 16)
	sub, err := f.nc.ChanSubscribe(f.subj.TaskEvent(taskID), changes)
	if err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.NewError(protocol.CodeInternalError, "message bus unavailable; retry"))
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	deadline := time.NewTimer(f.opts.RequestTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second) // in case a change event is lost
	defer poll.Stop()
	var sse *sseWriter
	asked := map[string]bool{}
	for {
		ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
		rec, _, err := tasks.Get(ctx, f.opts.Store, taskID, principal)
		if err == nil && !rec.Status.Terminal() && f.taskWorkerGone(ctx, rec) {
			rec, err = f.failOrphanedTask(ctx, taskID, principal, time.Now())
		}
		cancel()
		if err != nil {
			if sse == nil {
				f.taskStoreErr(w, msg, taskID, err)
			} else {
				_ = sse.event("", protocol.AppendErrorResponse(nil, msg.ID, protocol.NewError(protocol.CodeInternalError, "task store unavailable; retry")))
			}
			return
		}
		if rec.Status.Terminal() {
			out := legacyTaskOutcome(msg.ID, rec)
			if sse == nil {
				httpx.WriteJSON(w, http.StatusOK, out, nil)
			} else {
				_ = sse.event("", out)
			}
			return
		}
		for key, in := range rec.Inputs {
			if asked[key] {
				continue
			}
			asked[key] = true
			if sse == nil {
				sse = startSSE(w, f.opts.WriteTimeout, nil)
			}
			if err := sse.event("", legacyTaskInputRequest(taskID, key, in)); err != nil {
				return
			}
		}
		select {
		case <-changes:
		case <-poll.C:
		case <-deadline.C:
			e := protocol.NewError(protocol.CodeInternalError, "task %q is still %s; call tasks/result again", taskID, rec.Status)
			if sse == nil {
				httpx.WriteError(w, http.StatusOK, msg.ID, e)
			} else {
				_ = sse.event("", protocol.AppendErrorResponse(nil, msg.ID, e))
			}
			return
		case <-r.Context().Done():
			return
		case <-f.shutdown:
			return
		}
	}
}

// legacyTaskOutcome is a terminal task's tasks/result response: the tool's
// result (also when the tool reported an error) or the JSON-RPC error,
// with the related-task _meta.
func legacyTaskOutcome(id protocol.ID, rec *tasks.Record) []byte {
	if len(rec.Result) > 0 {
		var res map[string]json.RawMessage
		if json.Unmarshal(rec.Result, &res) == nil {
			meta := map[string]json.RawMessage{}
			if m, ok := res["_meta"]; ok {
				_ = json.Unmarshal(m, &meta)
			}
			meta[protocol.MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": rec.TaskID})
			res["_meta"], _ = json.Marshal(meta)
			if b, err := json.Marshal(res); err == nil {
				return protocol.AppendResponse(nil, id, b)
			}
		}
	}
	e := rec.Error // the request's own error, as it would have been answered
	if e == nil {
		e = protocol.NewError(protocol.CodeInternalError, "task %s ended %s", rec.TaskID, rec.Status)
	}
	return protocol.AppendErrorResponse(nil, id, e)
}

// legacyTaskInputRequest is the server-to-client request for a task's
// input key, tagged with the related task.
func legacyTaskInputRequest(taskID, key string, in *protocol.InputRequest) []byte {
	params := map[string]any{}
	if b, err := json.Marshal(in.Params); err == nil {
		_ = json.Unmarshal(b, &params)
	}
	params["_meta"] = protocol.RelatedTaskMeta(taskID)
	p, _ := json.Marshal(params)
	return protocol.AppendRequest(nil, taskRequestID(taskID, key), in.Method, p)
}

// legacyTaskAnswer takes a client's response to a task's input request:
// the answer goes into the task (the worker reads it from there), an error
// fails the task. It reports whether msg was such a response.
func (f *Frontend) legacyTaskAnswer(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) bool {
	taskID, key, ok := parseTaskRequestID(msg.ID)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskTimeout)
	defer cancel()
	principal := tasks.SessionPrincipal(sessionID)
	now := time.Now()
	var (
		rec      *tasks.Record
		err      error
		accepted map[string]json.RawMessage
		failed   bool
	)
	if msg.Error != nil {
		e := protocol.NewError(protocol.CodeInternalError, "the client answered the task's %s request with an error: %s", key, msg.Error.Message)
		rec, err = tasks.Update(ctx, f.opts.Store, taskID, principal, func(t *tasks.Record) bool {
			failed = t.Finish(nil, e, now)
			return failed
		})
	} else {
		rec, err = tasks.Update(ctx, f.opts.Store, taskID, principal, func(t *tasks.Record) bool {
			accepted = t.Answer(map[string]json.RawMessage{key: msg.Result}, now)
			return accepted != nil
		})
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		httpx.HTTPError(w, http.StatusNotFound, protocol.CodeInvalidParams, "unknown task")
		return true
	case err != nil:
		httpx.HTTPError(w, http.StatusServiceUnavailable, protocol.CodeInternalError, "task store unavailable; retry")
		return true
	}
	if accepted != nil || failed {
		f.taskChanged(rec)
	}
	if accepted != nil {
		_ = f.taskControl(ctx, taskID, &tasks.Control{Op: "input", Responses: accepted})
	}
	if failed {
		_ = f.taskControl(ctx, taskID, &tasks.Control{Op: "cancel"})
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}
