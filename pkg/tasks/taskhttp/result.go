package taskhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
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
	changes := make(chan *nats.Msg, 16)
	sub, err := h.nc.ChanSubscribe(h.subj.TaskEvent(taskID), changes)
	if err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, msg.ID, protocol.ErrBusUnavailable())
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	deadline := time.NewTimer(h.requestTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second) // in case a change event is lost
	defer poll.Stop()
	var sse EventWriter
	asked := map[string]bool{}
	for {
		ctx, cancel := context.WithTimeout(r.Context(), opTimeout)
		rec, _, err := tasks.Get(ctx, h.store, taskID, principal)
		if err == nil && !rec.Status.Terminal() && h.workerGone(ctx, rec) {
			rec, err = h.failOrphaned(ctx, taskID, principal, time.Now())
		}
		cancel()
		if err != nil {
			if sse == nil {
				h.storeErr(w, msg, taskID, err)
			} else {
				_ = sse.Event(protocol.AppendErrorResponse(nil, msg.ID, errStoreUnavailable()))
			}
			return
		}
		if rec.Status.Terminal() {
			out := outcome(msg.ID, rec)
			if sse == nil {
				httpx.WriteJSON(w, http.StatusOK, out, nil)
			} else {
				_ = sse.Event(out)
			}
			return
		}
		for key, in := range rec.Inputs {
			if asked[key] {
				continue
			}
			asked[key] = true
			if sse == nil {
				sse = h.startSSE(w)
			}
			if err := sse.Event(inputRequest(taskID, key, in)); err != nil {
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
				_ = sse.Event(protocol.AppendErrorResponse(nil, msg.ID, e))
			}
			return
		case <-r.Context().Done():
			return
		case <-h.closing:
			return
		}
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
