package taskhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// result is tasks/result: it waits (up to the request timeout) for the
// task to end and answers what the task's request would have, with the
// related-task _meta. While the task waits for input, its requests go to
// the client on this response's SSE stream, with ids that route the
// client's answers back to the task (LegacyAnswer).
func (h *Handler) result(w http.ResponseWriter, r *http.Request, msg *protocol.Message, taskID, principal string) {
	deadline := time.Now().Add(h.requestTimeout)
	changes := make(chan *nats.Msg, 16)
	sub, err := h.nc.ChanSubscribe(h.subj.TaskEvent(taskID), changes)
	if err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.ErrBusUnavailable())
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	rs := &resultStream{h: h, w: w, r: r, msg: msg, taskID: taskID, principal: principal, asked: map[string]bool{}}
	if !rs.check() {
		return
	}
	loop := stream.Loop[*nats.Msg]{
		Events:  changes,
		OnEvent: func(*nats.Msg) bool { return rs.check() },
		Probe:   time.Second, // in case a change event is lost
		OnProbe: rs.check,
		// The request's deadline, and the ends from outside: the
		// client's request gone, the frontend stopping.
		Deadline: deadline, OnDeadline: rs.timedOut,
		Gone: r.Context().Done(),
		Stop: h.closing,
	}
	loop.Run()
}

// resultStream is one tasks/result waiting for its task: a plain JSON
// answer, or an SSE stream once the task asks the client for input.
type resultStream struct {
	h                 *Handler
	w                 http.ResponseWriter
	r                 *http.Request
	msg               *protocol.Message
	taskID, principal string
	sse               EventWriter         // nil until the first input request
	asked             map[string]bool     // input keys already sent
	status            protocol.TaskStatus // the last status read
}

// check reads the task and answers when it ended (or cannot be read),
// sending its new input requests meanwhile. It reports whether to go on
// waiting.
func (rs *resultStream) check() bool {
	h := rs.h
	ctx, cancel := context.WithTimeout(rs.r.Context(), opTimeout)
	rec, _, err := tasks.Get(ctx, h.store, rs.taskID, rs.principal)
	if err == nil && !rec.Status.Terminal() && h.workerGone(ctx, rec) {
		rec, err = h.failOrphaned(ctx, rs.taskID, rs.principal, time.Now())
	}
	cancel()
	if err != nil {
		if rs.sse == nil {
			h.storeErr(rs.w, rs.msg, rs.taskID, err)
		} else {
			_ = rs.sse.Event(protocol.AppendErrorResponse(nil, rs.msg.ID, errStoreUnavailable()))
		}
		return false
	}
	rs.status = rec.Status
	if rec.Status.Terminal() {
		out := outcome(rs.msg.ID, rec)
		if rs.sse == nil {
			httpx.WriteJSON(rs.w, http.StatusOK, out, nil)
		} else {
			_ = rs.sse.Event(out)
		}
		return false
	}
	for key, in := range rec.Inputs {
		if rs.asked[key] {
			continue
		}
		rs.asked[key] = true
		if rs.sse == nil {
			rs.sse = h.startSSE(rs.w)
		}
		if err := rs.sse.Event(inputRequest(rs.taskID, key, in)); err != nil {
			return false
		}
	}
	return true
}

// timedOut answers a task still running at the request's deadline.
func (rs *resultStream) timedOut() {
	e := protocol.NewError(protocol.CodeInternalError, "task %q is still %s; call tasks/result again", rs.taskID, rs.status)
	if rs.sse == nil {
		httpx.WriteError(rs.w, http.StatusOK, rs.msg.ID, e)
	} else {
		_ = rs.sse.Event(protocol.AppendErrorResponse(nil, rs.msg.ID, e))
	}
}

// outcome is a terminal task's tasks/result response: the tool's result
// (also when the tool reported an error) or the JSON-RPC error, with the
// related-task _meta.
func outcome(id protocol.ID, rec *tasks.Record) []byte {
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

// inputRequest is the server-to-client request for a task's input key,
// tagged with the related task.
func inputRequest(taskID, key string, in *protocol.InputRequest) []byte {
	params := map[string]any{}
	if b, err := json.Marshal(in.Params); err == nil {
		_ = json.Unmarshal(b, &params)
	}
	params["_meta"] = protocol.RelatedTaskMeta(taskID)
	p, _ := json.Marshal(params)
	return protocol.AppendRequest(nil, inputRequestID(taskID, key), in.Method, p)
}
