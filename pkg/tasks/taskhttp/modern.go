package taskhttp

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// IsModernMethod reports whether a 2026-07-28 request is a task method
// ServeModern answers.
func IsModernMethod(method string) bool {
	switch method {
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		return true
	}
	return false
}

// ServeModern answers a 2026-07-28 tasks/get, tasks/update or
// tasks/cancel (msg, whose params head is head) from the store, for the
// tasks of the request's principal. The request must declare the
// extension (-32021 otherwise, before anything else is looked at); an
// unknown task is -32602; a store failure is 503.
func (h *Handler) ServeModern(w http.ResponseWriter, r *http.Request, msg *protocol.Message, head *protocol.ParamsHead) {
	if !protocol.DeclaresTasks(head.Meta.ClientCapabilities) {
		httpx.WriteError(w, http.StatusBadRequest, msg.ID, protocol.TasksRequired(msg.Method))
		return
	}
	var p protocol.UpdateTaskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrBadParams(err))
		return
	}
	if p.TaskID == "" {
		httpx.WriteError(w, http.StatusOK, msg.ID, errNeedsTaskID(msg.Method))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	principal := h.principal(r) // tasks are bound to their creator's principal
	now := time.Now()
	var (
		rec *tasks.Record
		err error
		res protocol.Result
	)
	switch msg.Method {
	case protocol.MethodTasksGet:
		rec, _, err = tasks.Get(ctx, h.store, p.TaskID, principal)
		if err == nil && !rec.Status.Terminal() && h.workerGone(ctx, rec) {
			rec, err = h.failOrphaned(ctx, p.TaskID, principal, now)
		}
		if err == nil {
			res = rec.GetResult()
		}
	case protocol.MethodTasksUpdate:
		var accepted map[string]json.RawMessage
		rec, err = tasks.Update(ctx, h.store, p.TaskID, principal, func(t *tasks.Record) bool {
			accepted = t.Answer(p.InputResponses, now)
			return accepted != nil
		})
		if err == nil && accepted != nil {
			h.changed(rec)
			// The record keeps them (a tasks/get sees the change at once,
			// and the worker reads them from there if this nudge is
			// lost); the nudge carries them to the worker now.
			_ = h.control(ctx, p.TaskID, &tasks.Control{Op: "input", Responses: accepted})
		}
		res = &protocol.EmptyResult{ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete}}
	case protocol.MethodTasksCancel:
		cancelled := false
		rec, err = tasks.Update(ctx, h.store, p.TaskID, principal, func(t *tasks.Record) bool {
			cancelled = t.Cancel(now)
			return cancelled
		})
		if err == nil && cancelled {
			h.changed(rec)
			_ = h.control(ctx, p.TaskID, &tasks.Control{Op: "cancel"})
		}
		res = &protocol.EmptyResult{ResultBase: protocol.ResultBase{ResultType: protocol.ResultTypeComplete}}
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		httpx.WriteError(w, http.StatusOK, msg.ID, errUnknownTask(p.TaskID))
		return
	case err != nil:
		h.log.ErrorContext(ctx, "frontend: task store", "method", msg.Method, "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, errStoreUnavailable())
		return
	}
	raw, err := json.Marshal(res)
	if err != nil {
		httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrInternalFailure())
		return
	}
	httpx.WriteJSON(w, http.StatusOK, protocol.AppendResponse(nil, msg.ID, raw), nil)
}

// OwnTasks returns the ids of ids that name tasks of principal: another
// principal's task, a legacy session's task or an unknown id is dropped
// (a listen stream's filter acknowledges only those, as if the others did
// not exist: their notifications would carry their results). A store
// failure is an error.
func (h *Handler) OwnTasks(ctx context.Context, principal string, ids []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	owned := ids[:0:0]
	for _, id := range ids {
		_, _, err := tasks.Get(ctx, h.store, id, principal)
		switch {
		case err == nil:
			owned = append(owned, id)
		case errors.Is(err, tasks.ErrNotFound):
		default:
			return nil, err
		}
	}
	return owned, nil
}

// changed announces a task's new state to the listen streams that watch
// it (notifications/tasks), on every frontend, and to its legacy
// session's stream (notifications/tasks/status).
func (h *Handler) changed(rec *tasks.Record) {
	if rec == nil {
		return
	}
	if err := h.nc.Publish(h.subj.TaskEvent(rec.TaskID), rec.Event()); err != nil {
		h.log.Warn("frontend: announcing a task change", "err", err)
	}
	if s := rec.SessionOf(); s != "" {
		// 2025-11-25: notifications/tasks/status on the session's stream.
		n, err := protocol.EncodeNotification(protocol.NotificationTasksStatus, rec.Task.Legacy())
		if err == nil {
			// Through any frontend, into the session's GET log (a session
			// event, not waited for: the task's state is in the store).
			ev := []bus.SessionEvent{{Key: "task." + rec.TaskID + "." + strconv.FormatUint(rand.Uint64(), 36), Session: s, Kind: bus.FrameNotification, Msg: n}}
			if b, err := bus.EncodeSessionEvents(ev); err == nil {
				_ = h.nc.Publish(h.subj.SessionEvents(), b)
			}
		}
	}
}

// control sends c to the worker running task id and waits for its
// acknowledgement. nats.ErrNoResponders means that worker is gone.
func (h *Handler) control(ctx context.Context, id string, c *tasks.Control) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = h.nc.RequestWithContext(ctx, h.subj.TaskControl(id), b)
	return err
}

// workerGone reports whether nobody runs a live task any more (its
// worker died). Both must agree: the worker stopped announcing itself
// (heartbeats, a few seconds) and its task's control subject has no
// responders. A worker that drains still answers; one behind a NATS
// reconnect still announces; a slow one is not "no responders".
func (h *Handler) workerGone(ctx context.Context, rec *tasks.Record) bool {
	if h.alive(rec.Worker) {
		return false
	}
	return errors.Is(h.control(ctx, rec.TaskID, &tasks.Control{Op: "ping"}), nats.ErrNoResponders)
}

// failOrphaned ends a task whose worker is gone: failed, with a clear
// message, unless it reached a terminal state meanwhile.
func (h *Handler) failOrphaned(ctx context.Context, id, principal string, now time.Time) (*tasks.Record, error) {
	e := protocol.NewError(protocol.CodeInternalError, "the worker running this task stopped before it finished")
	changed := false
	rec, err := tasks.Update(ctx, h.store, id, principal, func(t *tasks.Record) bool {
		changed = t.Finish(nil, e, now)
		return changed
	})
	if err == nil && changed {
		h.changed(rec)
	}
	return rec, err
}
