package taskhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
)

const declares = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// serveModern runs ServeModern for method on task id as principal.
func (v *env) serveModern(t *testing.T, principal, method, params string) *httptest.ResponseRecorder {
	t.Helper()
	msg, head := request(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s}}`, method, params))
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("X-Principal", principal)
	w := httptest.NewRecorder()
	v.h.ServeModern(w, r, msg, head)
	return w
}

func TestIsModernMethod(t *testing.T) {
	for m, want := range map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true, "tasks/result": false, "tasks/list": false, "tools/call": false} {
		if IsModernMethod(m) != want {
			t.Errorf("IsModernMethod(%q) = %v", m, !want)
		}
	}
}

func TestServeModernRefusals(t *testing.T) {
	v := newEnv(t, nil)
	rec := v.task(t, "alice", "w1", false)
	v.setAlive("w1", true)
	for _, c := range []struct {
		name, principal, params string
		status                  int
		code                    int64
		msg                     string
	}{
		{"no extension", "alice", fmt.Sprintf(`"_meta":{},"taskId":%q`, rec.TaskID), 400, protocol.CodeMissingRequiredClientCapability, "tasks/get needs"},
		{"no taskId", "alice", declares, 200, protocol.CodeInvalidParams, "tasks/get needs a taskId"},
		{"bad params", "alice", declares + `,"taskId":"x","inputResponses":5`, 200, protocol.CodeInvalidParams, "invalid params"},
		{"unknown", "alice", declares + `,"taskId":"nope"`, 200, protocol.CodeInvalidParams, `unknown task "nope"`},
		{"another principal", "bob", declares + fmt.Sprintf(`,"taskId":%q`, rec.TaskID), 200, protocol.CodeInvalidParams, "unknown task"},
	} {
		w := v.serveModern(t, c.principal, protocol.MethodTasksGet, c.params)
		r := decode(t, w.Body.Bytes())
		if w.Code != c.status || r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.msg) {
			t.Errorf("%s: %d %s; want %d, code %d, %q", c.name, w.Code, w.Body, c.status, c.code, c.msg)
		}
	}
}

func TestServeModernGetUpdateCancel(t *testing.T) {
	v := newEnv(t, nil)
	rec := v.task(t, "alice", "w1", false)
	v.setAlive("w1", true)
	controls := v.worker(t, rec.TaskID)
	changes := v.watch(t, v.subj.TaskEvent(rec.TaskID))
	id := fmt.Sprintf(`,"taskId":%q`, rec.TaskID)

	w := v.serveModern(t, "alice", protocol.MethodTasksGet, declares+id)
	if r := decode(t, w.Body.Bytes()); w.Code != 200 || field(t, r, "status") != "working" || field(t, r, "resultType") != "complete" {
		t.Fatalf("tasks/get: %d %s", w.Code, w.Body)
	}

	v.update(t, rec, func(r *tasks.Record) bool {
		return r.AskInputs(map[string]*protocol.InputRequest{"k": {Method: "elicitation/create"}}, time.Now())
	})
	w = v.serveModern(t, "alice", protocol.MethodTasksUpdate, declares+id+`,"inputResponses":{"k":{"action":"accept"}}`)
	if r := decode(t, w.Body.Bytes()); w.Code != 200 || r.Error != nil || field(t, r, "resultType") != "complete" {
		t.Fatalf("tasks/update: %d %s", w.Code, w.Body)
	}
	if c := recv(t, controls, "the input nudge"); c.Op != "input" || string(c.Responses["k"]) != `{"action":"accept"}` {
		t.Fatalf("control: %+v", c)
	}
	recv(t, changes, "the task event of the update")
	if got := v.get(t, rec); got.Status != protocol.TaskWorking || string(got.Answers["k"]) != `{"action":"accept"}` {
		t.Fatalf("after tasks/update: %+v", got)
	}
	// An update that answers nothing changes nothing and still succeeds.
	w = v.serveModern(t, "alice", protocol.MethodTasksUpdate, declares+id+`,"inputResponses":{"other":{}}`)
	if r := decode(t, w.Body.Bytes()); r.Error != nil {
		t.Fatalf("an update answering nothing: %s", w.Body)
	}

	w = v.serveModern(t, "alice", protocol.MethodTasksCancel, declares+id)
	if r := decode(t, w.Body.Bytes()); w.Code != 200 || r.Error != nil {
		t.Fatalf("tasks/cancel: %d %s", w.Code, w.Body)
	}
	if c := recv(t, controls, "the cancel"); c.Op != "cancel" {
		t.Fatalf("control: %+v", c)
	}
	var ev map[string]any
	_ = json.Unmarshal(recv(t, changes, "the task event of the cancel").Data, &ev)
	if ev["status"] != "cancelled" || ev["resultType"] != nil {
		t.Fatalf("task event: %v", ev)
	}
	// Cancelling a terminal task is no error in this era.
	w = v.serveModern(t, "alice", protocol.MethodTasksCancel, declares+id)
	if r := decode(t, w.Body.Bytes()); r.Error != nil {
		t.Fatalf("a second cancel: %s", w.Body)
	}
}

func TestOrphanedTask(t *testing.T) {
	v := newEnv(t, nil)
	get := func(rec *tasks.Record) string {
		w := v.serveModern(t, "alice", protocol.MethodTasksGet, declares+fmt.Sprintf(`,"taskId":%q`, rec.TaskID))
		return field(t, decode(t, w.Body.Bytes()), "status")
	}
	// Announcing itself: alive, even without a control responder.
	announced := v.task(t, "alice", "w1", false)
	v.setAlive("w1", true)
	if s := get(announced); s != "working" {
		t.Fatalf("a task of a live worker: %s", s)
	}
	// Not announcing, but answering its task's controls: alive.
	answering := v.task(t, "alice", "w2", false)
	controls := v.worker(t, answering.TaskID)
	if s := get(answering); s != "working" {
		t.Fatalf("a task whose worker answers: %s", s)
	}
	if c := recv(t, controls, "the ping"); c.Op != "ping" {
		t.Fatalf("control: %+v", c)
	}
	// Neither: failed.
	orphan := v.task(t, "alice", "w3", false)
	changes := v.watch(t, v.subj.TaskEvent(orphan.TaskID))
	w := v.serveModern(t, "alice", protocol.MethodTasksGet, declares+fmt.Sprintf(`,"taskId":%q`, orphan.TaskID))
	r := decode(t, w.Body.Bytes())
	if field(t, r, "status") != "failed" || !strings.Contains(string(r.Result["error"]), "the worker running this task stopped before it finished") {
		t.Fatalf("an orphaned task: %s", w.Body)
	}
	recv(t, changes, "the task event of the failure")
}

func TestOwnTasks(t *testing.T) {
	v := newEnv(t, nil)
	mine := v.task(t, "alice", "w1", false)
	theirs := v.task(t, "bob", "w1", false)
	legacy := v.task(t, tasks.SessionPrincipal("s1"), "w1", true)
	ids := []string{mine.TaskID, theirs.TaskID, legacy.TaskID, "unknown"}
	got, err := v.h.OwnTasks(context.Background(), "alice", ids)
	if err != nil || len(got) != 1 || got[0] != mine.TaskID {
		t.Fatalf("OwnTasks = %v, %v; want [%s]", got, err, mine.TaskID)
	}
	if ids[0] != mine.TaskID || ids[1] != theirs.TaskID {
		t.Fatal("OwnTasks changed its argument")
	}
}
