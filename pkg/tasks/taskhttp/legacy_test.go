package taskhttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
)

// serveLegacy runs ServeLegacy for body in session.
func (v *env) serveLegacy(t *testing.T, session, body string) *httptest.ResponseRecorder {
	t.Helper()
	msg, _ := request(t, body)
	w := httptest.NewRecorder()
	v.h.ServeLegacy(w, httptest.NewRequest(http.MethodPost, "/mcp", nil), session, msg)
	return w
}

func legacyCall(method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":{%s}}`, method, params)
}

func TestIsLegacyMethod(t *testing.T) {
	for m, want := range map[string]bool{"tasks/get": true, "tasks/list": true, "tasks/result": true, "tasks/cancel": true, "tasks/update": false, "ping": false} {
		if IsLegacyMethod(m) != want {
			t.Errorf("IsLegacyMethod(%q) = %v", m, !want)
		}
	}
}

func TestLegacyGetCancel(t *testing.T) {
	v := newEnv(t, nil)
	rec := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.setAlive("w1", true)
	controls := v.worker(t, rec.TaskID)
	status := v.watch(t, v.subj.SessionEvents())
	id := fmt.Sprintf(`"taskId":%q`, rec.TaskID)

	w := v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksGet, id))
	if r := decode(t, w.Body.Bytes()); w.Code != 200 || field(t, r, "status") != "working" {
		t.Fatalf("tasks/get: %d %s", w.Code, w.Body)
	}
	for name, c := range map[string]struct{ session, body, msg string }{
		"another session": {"s2", legacyCall(protocol.MethodTasksGet, id), "unknown task"},
		"no taskId":       {"s1", legacyCall(protocol.MethodTasksGet, ""), "tasks/get needs a taskId"},
		"no params":       {"s1", `{"jsonrpc":"2.0","id":7,"method":"tasks/cancel"}`, "tasks/cancel needs a taskId"},
	} {
		r := decode(t, v.serveLegacy(t, c.session, c.body).Body.Bytes())
		if r.Error == nil || r.Error.Code != protocol.CodeInvalidParams || !strings.Contains(r.Error.Message, c.msg) {
			t.Errorf("%s: %+v, want %q", name, r.Error, c.msg)
		}
	}

	w = v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksCancel, id))
	if r := decode(t, w.Body.Bytes()); w.Code != 200 || field(t, r, "status") != "cancelled" {
		t.Fatalf("tasks/cancel: %d %s", w.Code, w.Body)
	}
	if c := recv(t, controls, "the cancel"); c.Op != "cancel" {
		t.Fatalf("control: %+v", c)
	}
	m := recv(t, status, "notifications/tasks/status")
	evs, err := bus.DecodeSessionEvents(m.Data)
	if err != nil || len(evs) != 1 || evs[0].Session != "s1" || evs[0].Kind != bus.FrameNotification || !strings.Contains(string(evs[0].Msg), protocol.NotificationTasksStatus) {
		t.Fatalf("session event: %q (%v)", m.Data, err)
	}
	r := decode(t, v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksCancel, id)).Body.Bytes())
	if r.Error == nil || !strings.Contains(r.Error.Message, "is already cancelled") {
		t.Fatalf("a second cancel: %+v", r.Error)
	}
}

func TestLegacyList(t *testing.T) {
	v := newEnv(t, nil)
	var ids []string
	for range 3 {
		ids = append(ids, v.task(t, tasks.SessionPrincipal("s1"), "w1", true).TaskID)
	}
	v.task(t, tasks.SessionPrincipal("s2"), "w1", true)
	list := func(params string) reply {
		t.Helper()
		return decode(t, v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksList, params)).Body.Bytes())
	}
	var got struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
		} `json:"tasks"`
	}
	r := list("")
	b, _ := json.Marshal(r.Result)
	_ = json.Unmarshal(b, &got)
	if len(got.Tasks) != 3 || got.Tasks[0].TaskID != ids[0] || got.Tasks[2].TaskID != ids[2] || r.Result["nextCursor"] != nil {
		t.Fatalf("tasks/list: %s", b)
	}
	r = list(`"cursor":"2"`)
	b, _ = json.Marshal(r.Result)
	got.Tasks = nil
	_ = json.Unmarshal(b, &got)
	if len(got.Tasks) != 1 || got.Tasks[0].TaskID != ids[2] {
		t.Fatalf("tasks/list from 2: %s", b)
	}
	if r := list(`"cursor":"x"`); r.Error == nil || !strings.Contains(r.Error.Message, "bad cursor") {
		t.Fatalf("a bad cursor: %+v", r.Error)
	}
	w := httptest.NewRecorder()
	msg, _ := request(t, `{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{"cursor":5}}`)
	v.h.ServeLegacy(w, httptest.NewRequest(http.MethodPost, "/mcp", nil), "s1", msg)
	if r := decode(t, w.Body.Bytes()); r.Error == nil || r.Error.Code != protocol.CodeInvalidParams {
		t.Fatalf("malformed params: %s", w.Body)
	}
	if r := decode(t, v.serveLegacy(t, "empty", legacyCall(protocol.MethodTasksList, "")).Body.Bytes()); r.Error != nil || string(r.Result["tasks"]) != "[]" {
		t.Fatalf("a session without tasks: %+v", r)
	}
}

func TestLegacyResultTerminal(t *testing.T) {
	v := newEnv(t, nil)
	rec := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.update(t, rec, func(r *tasks.Record) bool {
		return r.Finish(json.RawMessage(`{"content":[],"_meta":{"k":1}}`), nil, time.Now())
	})
	w := v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, rec.TaskID)))
	r := decode(t, w.Body.Bytes())
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(r.Result["_meta"], &meta)
	if w.Code != 200 || string(meta["k"]) != "1" || !strings.Contains(string(meta[protocol.MetaRelatedTask]), rec.TaskID) {
		t.Fatalf("tasks/result of a completed task: %d %s", w.Code, w.Body)
	}

	failed := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.update(t, failed, func(r *tasks.Record) bool {
		return r.Finish(nil, protocol.NewError(-32000, "boom"), time.Now())
	})
	w = v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, failed.TaskID)))
	if r := decode(t, w.Body.Bytes()); r.Error == nil || r.Error.Message != "boom" {
		t.Fatalf("tasks/result of a failed task: %s", w.Body)
	}
	w = v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksResult, `"taskId":"nope"`))
	if r := decode(t, w.Body.Bytes()); r.Error == nil || !strings.Contains(r.Error.Message, "unknown task") {
		t.Fatalf("tasks/result of an unknown task: %s", w.Body)
	}
}

func TestLegacyResultWithInput(t *testing.T) {
	admitted := make(chan string, 1)
	released := make(chan struct{}, 1)
	v := newEnv(t, func(o *Options) {
		o.Admit = func(_ http.ResponseWriter, _ *http.Request, _ protocol.ID, session string) (func(), bool) {
			admitted <- session
			return func() { released <- struct{}{} }, true
		}
	})
	rec := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.setAlive("w1", true)
	controls := v.worker(t, rec.TaskID)
	v.update(t, rec, func(r *tasks.Record) bool {
		return r.AskInputs(map[string]*protocol.InputRequest{"k": {Method: "elicitation/create", Params: map[string]any{"message": "?"}}}, time.Now())
	})
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { // ends when the task ends (below)
		done <- v.serveLegacy(t, "s1", legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, rec.TaskID)))
	}()
	if s := recv(t, admitted, "Admit"); s != "s1" {
		t.Fatalf("admitted for %q", s)
	}
	ask, err := protocol.Decode(recv(t, v.events.ch, "the input request"), 0)
	if err != nil || ask.Kind() != protocol.KindRequest || ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), protocol.MetaRelatedTask) {
		t.Fatalf("input request: %+v, %v", ask, err)
	}

	// The client's answer to it goes into the task.
	answer, _ := request(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, ask.ID.AppendJSON(nil)))
	w := httptest.NewRecorder()
	if !v.h.LegacyAnswer(w, httptest.NewRequest(http.MethodPost, "/mcp", nil), "s1", answer) || w.Code != http.StatusAccepted {
		t.Fatalf("the answer: %d %s", w.Code, w.Body)
	}
	if c := recv(t, controls, "the input nudge"); c.Op != "input" || string(c.Responses["k"]) != `{"action":"accept"}` {
		t.Fatalf("control: %+v", c)
	}
	v.update(t, rec, func(r *tasks.Record) bool { return r.Finish(json.RawMessage(`{"content":[]}`), nil, time.Now()) })
	_ = v.nc.Publish(v.subj.TaskEvent(rec.TaskID), []byte("{}"))
	out, err := protocol.Decode(recv(t, v.events.ch, "the outcome"), 0)
	if err != nil || out.Kind() != protocol.KindResponse || out.Error != nil {
		t.Fatalf("outcome: %+v, %v", out, err)
	}
	if w := recv(t, done, "the end of tasks/result"); w.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("not an SSE response: %v", w.Header())
	}
	recv(t, released, "the slots' release")
}

func TestLegacyResultRefusedAndEnds(t *testing.T) {
	v := newEnv(t, func(o *Options) {
		o.Admit = func(w http.ResponseWriter, _ *http.Request, id protocol.ID, _ string) (func(), bool) {
			httpx.WriteError(w, http.StatusTooManyRequests, id, protocol.NewError(protocol.CodeInternalError, "full"))
			return nil, false
		}
	})
	rec := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.setAlive("w1", true)
	call := legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, rec.TaskID))
	if w := v.serveLegacy(t, "s1", call); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a refused tasks/result: %d %s", w.Code, w.Body)
	}

	// The request timeout (the behaviour under test) ends a wait.
	v = newEnv(t, func(o *Options) { o.RequestTimeout = 50 * time.Millisecond })
	rec = v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.setAlive("w1", true)
	call = legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, rec.TaskID))
	w := v.serveLegacy(t, "s1", call)
	if r := decode(t, w.Body.Bytes()); r.Error == nil || !strings.Contains(r.Error.Message, "is still working; call tasks/result again") {
		t.Fatalf("a timed-out tasks/result: %s", w.Body)
	}

	// Closing ends a wait at once.
	v = newEnv(t, nil)
	rec = v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	v.setAlive("w1", true)
	call = legacyCall(protocol.MethodTasksResult, fmt.Sprintf(`"taskId":%q`, rec.TaskID))
	done := make(chan struct{})
	go func() { // ends when closing is closed
		defer close(done)
		v.serveLegacy(t, "s1", call)
	}()
	close(v.closing)
	recv(t, done, "the end of tasks/result at shutdown")
}

func TestLegacyAnswer(t *testing.T) {
	v := newEnv(t, nil)
	rec := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	controls := v.worker(t, rec.TaskID)
	v.update(t, rec, func(r *tasks.Record) bool {
		return r.AskInputs(map[string]*protocol.InputRequest{"k": {Method: "roots/list"}}, time.Now())
	})
	answer := func(session, body string) (*httptest.ResponseRecorder, bool) {
		msg, _ := request(t, body)
		w := httptest.NewRecorder()
		ok := v.h.LegacyAnswer(w, httptest.NewRequest(http.MethodPost, "/mcp", nil), session, msg)
		return w, ok
	}
	if w, ok := answer("s1", `{"jsonrpc":"2.0","id":"w1-5","result":{}}`); ok || w.Body.Len() != 0 {
		t.Fatal("a response to another server request was taken")
	}
	if w, ok := answer("s2", fmt.Sprintf(`{"jsonrpc":"2.0","id":"task:%s:k","result":{}}`, rec.TaskID)); !ok || w.Code != http.StatusNotFound {
		t.Fatalf("another session's task: %v %d", ok, w.Code)
	}
	w, ok := answer("s1", fmt.Sprintf(`{"jsonrpc":"2.0","id":"task:%s:k","error":{"code":-1,"message":"no"}}`, rec.TaskID))
	if !ok || w.Code != http.StatusAccepted {
		t.Fatalf("an error answer: %v %d", ok, w.Code)
	}
	if c := recv(t, controls, "the cancel"); c.Op != "cancel" {
		t.Fatalf("control: %+v", c)
	}
	if got := v.get(t, rec); got.Status != protocol.TaskFailed || !strings.Contains(got.Error.Message, "answered the task's k request with an error: no") {
		t.Fatalf("after an error answer: %+v", got)
	}
}

func TestInputRequestID(t *testing.T) {
	id := inputRequestID("abc", "k:1")
	task, key, ok := parseInputRequestID(id)
	if !ok || task != "abc" || key != "k:1" {
		t.Fatalf("round trip: %q %q %v", task, key, ok)
	}
	for _, bad := range []protocol.ID{protocol.Int64ID(1), protocol.StringID("x"), protocol.StringID("task:"), protocol.StringID("task::k")} {
		if _, _, ok := parseInputRequestID(bad); ok {
			t.Errorf("%v parsed", bad)
		}
	}
}
