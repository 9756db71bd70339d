package taskhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
)

// The 2025-11-25 experimental tasks of a legacy session: tasks/get,
// tasks/cancel, tasks/list and tasks/result, answered from the store for
// the session's own tasks (principal tasks.SessionPrincipal(session)).

// IsLegacyMethod reports whether a legacy session's request is a task
// method ServeLegacy answers.
func IsLegacyMethod(method string) bool {
	switch method {
	case protocol.MethodTasksGet, protocol.MethodTasksCancel, protocol.MethodTasksResult, protocol.MethodTasksList:
		return true
	}
	return false
}

// pageSize is the page size of tasks/list.
const pageSize = 100

// ServeLegacy answers a task method (see IsLegacyMethod) of the legacy
// session sessionID. tasks/result waits for the task to end (up to
// RequestTimeout) holding the session's in-flight slots (Admit); while
// the task waits for input its requests go to the client on the
// response's SSE stream. An unknown task (or another session's) is
// -32602; a store failure is 503.
func (h *Handler) ServeLegacy(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) {
	if msg.Method == protocol.MethodTasksList {
		h.list(w, r, sessionID, msg)
		return
	}
	var p protocol.TaskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.TaskID == "" {
		httpx.WriteError(w, http.StatusOK, msg.ID, errNeedsTaskID(msg.Method))
		return
	}
	principal := tasks.SessionPrincipal(sessionID)
	if msg.Method == protocol.MethodTasksResult {
		// It waits, possibly long: it holds the session's in-flight slots.
		release, ok := h.admit(w, r, msg.ID, sessionID)
		if !ok {
			return
		}
		defer release()
		h.result(w, r, msg, p.TaskID, principal)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	now := time.Now()
	var (
		rec *tasks.Record
		err error
	)
	switch msg.Method {
	case protocol.MethodTasksGet:
		rec, _, err = tasks.Get(ctx, h.store, p.TaskID, principal)
		if err == nil && !rec.Status.Terminal() && h.workerGone(ctx, rec) {
			rec, err = h.failOrphaned(ctx, p.TaskID, principal, now)
		}
	case protocol.MethodTasksCancel:
		cancelled := false
		rec, err = tasks.Update(ctx, h.store, p.TaskID, principal, func(t *tasks.Record) bool {
			cancelled = t.Cancel(now)
			return cancelled
		})
		if err == nil && !cancelled {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.NewError(protocol.CodeInvalidParams, "invalid params: task %q is already %s", p.TaskID, rec.Status))
			return
		}
		if err == nil {
			h.changed(rec)
			_ = h.control(ctx, p.TaskID, &tasks.Control{Op: "cancel"})
		}
	}
	if !h.storeErr(w, msg, p.TaskID, err) {
		return
	}
	httpx.WriteResult(w, msg.ID, &protocol.LegacyTaskResult{LegacyTask: rec.Task.Legacy()})
}

// list is tasks/list: the session's tasks that still exist, oldest
// first, pageSize at a time (the cursor is an offset).
func (h *Handler) list(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) {
	var p protocol.PaginatedParams
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			httpx.WriteError(w, http.StatusOK, msg.ID, protocol.ErrBadParams(err))
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
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
	defer cancel()
	ids, err := tasks.Indexed(ctx, h.store, sessionID)
	if !h.storeErr(w, msg, "", err) {
		return
	}
	res := &protocol.ListTasksResult{Tasks: []protocol.LegacyTask{}}
	principal := tasks.SessionPrincipal(sessionID)
	i := from
	for ; i < len(ids) && len(res.Tasks) < pageSize; i++ {
		rec, _, err := tasks.Get(ctx, h.store, ids[i], principal)
		if errors.Is(err, tasks.ErrNotFound) {
			continue // expired
		}
		if !h.storeErr(w, msg, ids[i], err) {
			return
		}
		res.Tasks = append(res.Tasks, rec.Task.Legacy())
	}
	if i < len(ids) {
		res.NextCursor = strconv.Itoa(i)
	}
	httpx.WriteResult(w, msg.ID, res)
}

// storeErr writes the error for err (unknown task: -32602; store
// trouble: 503) and reports whether there was none.
func (h *Handler) storeErr(w http.ResponseWriter, msg *protocol.Message, taskID string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, tasks.ErrNotFound):
		httpx.WriteError(w, http.StatusOK, msg.ID, errUnknownTask(taskID))
	default:
		h.log.Error("frontend: task store", "method", msg.Method, "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, errStoreUnavailable())
	}
	return false
}

// inputRequestID is the id of a server-to-client request asking for a
// legacy task's input key (sent on its tasks/result stream); the client's
// response to it is the task's answer.
func inputRequestID(taskID, key string) protocol.ID {
	return protocol.StringID("task:" + taskID + ":" + key)
}

func parseInputRequestID(id protocol.ID) (taskID, key string, ok bool) {
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

// LegacyAnswer takes a legacy session's response msg if it answers a
// task's input request (sent on a tasks/result stream): the answer goes
// into the task (the worker reads it from there), an error fails the
// task; it answers 202 (404 for an unknown task, 503 on store trouble).
// It reports whether msg was such a response; when not, it wrote
// nothing.
func (h *Handler) LegacyAnswer(w http.ResponseWriter, r *http.Request, sessionID string, msg *protocol.Message) bool {
	taskID, key, ok := parseInputRequestID(msg.ID)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
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
		rec, err = tasks.Update(ctx, h.store, taskID, principal, func(t *tasks.Record) bool {
			failed = t.Finish(nil, e, now)
			return failed
		})
	} else {
		rec, err = tasks.Update(ctx, h.store, taskID, principal, func(t *tasks.Record) bool {
			accepted = t.Answer(map[string]json.RawMessage{key: msg.Result}, now)
			return accepted != nil
		})
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		httpx.HTTPError(w, http.StatusNotFound, protocol.CodeInvalidParams, "unknown task")
		return true
	case err != nil:
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, errStoreUnavailable())
		return true
	}
	if accepted != nil || failed {
		h.changed(rec)
	}
	if accepted != nil {
		_ = h.control(ctx, taskID, &tasks.Control{Op: "input", Responses: accepted})
	}
	if failed {
		_ = h.control(ctx, taskID, &tasks.Control{Op: "cancel"})
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}
