package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The 2025-11-25 experimental tasks, across two frontends sharing a
// session: task augmentation, tasks/get, tasks/result (with input asked on
// its stream), tasks/cancel, per-session visibility.

type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

func legacyStartTask(t *testing.T, c *testenv.Client, id int, tool string, args map[string]any) legacyTask {
	t.Helper()
	raw := c.Call(id, "tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}})
	var res struct {
		Task legacyTask `json:"task"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Task.TaskID == "" || res.Task.Status != "working" || res.Task.TTL == nil || res.Task.CreatedAt == "" {
		t.Fatalf("%s with params.task: want a CreateTaskResult, got %s", tool, raw)
	}
	return res.Task
}

func legacyGetTask(t *testing.T, c *testenv.Client, id int, taskID string) legacyTask {
	t.Helper()
	var v legacyTask
	raw := c.Call(id, "tasks/get", map[string]any{"taskId": taskID})
	if err := json.Unmarshal(raw, &v); err != nil || v.TaskID != taskID {
		t.Fatalf("tasks/get: %s", raw)
	}
	return v
}

func TestLegacyTasks(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	cl := testenv.NewClient(t, c.URLs...)
	init := cl.Initialize(map[string]any{"elicitation": map[string]any{}})
	var ir struct {
		Capabilities struct {
			Tasks json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(init.Response().Result, &ir)
	if !strings.Contains(string(ir.Capabilities.Tasks), `"tools":{"call":{}}`) || !strings.Contains(string(ir.Capabilities.Tasks), `"list":{}`) {
		t.Fatalf("initialize: tasks capability %s", ir.Capabilities.Tasks)
	}
	// tools/list says which tools run as tasks.
	var tl struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(cl.Call(1, "tools/list", nil), &tl)
	support := map[string]string{}
	for _, tool := range tl.Tools {
		if tool.Execution != nil {
			support[tool.Name] = tool.Execution.TaskSupport
		}
	}
	if support["slow_compute"] != "optional" || support["failing_job"] != "required" || support["greet"] != "" {
		t.Fatalf("execution.taskSupport: %v", support)
	}

	// The session's stream carries notifications/tasks/status.
	get := cl.OpenGet(nil)

	// A task, polled and fetched with tasks/result (on both frontends).
	task := legacyStartTask(t, cl, 2, "slow_compute", map[string]any{"seconds": 0.3, "label": "legacy"})
	first := task.TaskID
	raw := cl.Call(3, "tasks/result", map[string]any{"taskId": task.TaskID})
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || !strings.Contains(res.Content[0].Text, "legacy") || res.Meta[protocol.MetaRelatedTask].TaskID != task.TaskID {
		t.Fatalf("tasks/result: %s", raw)
	}
	if v := legacyGetTask(t, cl, 4, task.TaskID); v.Status != "completed" {
		t.Fatalf("tasks/get after the result: %+v", v)
	}
	for {
		_, m := get.NextMessage(t, 10*time.Second)
		if m.Method == "notifications/tasks/status" && strings.Contains(string(m.Params), task.TaskID) && strings.Contains(string(m.Params), `"completed"`) {
			break
		}
	}

	// A tool error is a failed task; tasks/result still gives the result.
	task = legacyStartTask(t, cl, 5, "failing_job", nil)
	raw = cl.Call(6, "tasks/result", map[string]any{"taskId": task.TaskID})
	if !strings.Contains(string(raw), `"isError":true`) {
		t.Fatalf("failing_job's tasks/result: %s", raw)
	}
	if v := legacyGetTask(t, cl, 7, task.TaskID); v.Status != "failed" {
		t.Fatalf("failing_job: %+v", v)
	}

	// Augmentation rules: forbidden tools refuse params.task, required
	// ones need it.
	if r := cl.Post(testenv.Request(8, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "x"}, "task": map[string]any{}}), nil); r.ErrorCode() != protocol.CodeMethodNotFound {
		t.Fatalf("greet with params.task: %s", r)
	}
	if r := cl.Post(testenv.Request(9, "tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}), nil); r.ErrorCode() != protocol.CodeMethodNotFound {
		t.Fatalf("failing_job without params.task: %s", r)
	}

	// Input: tasks/result's stream carries the task's elicitation, tagged
	// with the task; the answer goes through the other frontend.
	task = legacyStartTask(t, cl, 10, "confirm_delete", map[string]any{"filename": "l.txt"})
	s := cl.PostStream(testenv.Request(11, "tasks/result", map[string]any{"taskId": task.TaskID}), nil)
	_, ask := s.NextMessage(t, 10*time.Second)
	if ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), protocol.MetaRelatedTask) || !strings.Contains(string(ask.ID), task.TaskID) {
		t.Fatalf("the task's input request: %s %s %s", ask.ID, ask.Method, ask.Params)
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(ask.ID), "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	if r := cl.Post(answer, nil); r.Status != 202 {
		t.Fatalf("the client's answer: %s", r)
	}
	msgs, _, ended := s.Rest(10 * time.Second)
	if resp := responseOf(msgs); !ended || resp == nil || !strings.Contains(string(resp.Result), "deleted l.txt") {
		t.Fatalf("tasks/result after the answer: %+v", msgs)
	}

	// Cancel: the task says cancelled; cancelling again is -32602.
	task = legacyStartTask(t, cl, 12, "slow_compute", map[string]any{"seconds": 60, "label": "cancel me"})
	var cancelled legacyTask
	_ = json.Unmarshal(cl.Call(13, "tasks/cancel", map[string]any{"taskId": task.TaskID}), &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %+v", cancelled)
	}
	if r := cl.Post(testenv.Request(14, "tasks/cancel", map[string]any{"taskId": task.TaskID}), nil); r.ErrorCode() != protocol.CodeInvalidParams {
		t.Fatalf("cancelling a cancelled task: %s", r)
	}

	// Another session does not see this session's tasks.
	other := testenv.NewClient(t, c.URLs...)
	other.Initialize(nil)
	if r := other.Post(testenv.Request(1, "tasks/get", map[string]any{"taskId": task.TaskID}), nil); r.ErrorCode() != protocol.CodeInvalidParams {
		t.Fatalf("another session's tasks/get: %s", r)
	}
	// tasks/list lists the session's own tasks, oldest first.
	var list struct {
		Tasks []legacyTask `json:"tasks"`
	}
	_ = json.Unmarshal(cl.Call(15, "tasks/list", nil), &list)
	if len(list.Tasks) != 4 || list.Tasks[0].TaskID != first || list.Tasks[3].TaskID != task.TaskID || list.Tasks[3].Status != "cancelled" {
		t.Fatalf("tasks/list: %+v", list.Tasks)
	}
	_ = json.Unmarshal(other.Call(2, "tasks/list", nil), &list)
	if len(list.Tasks) != 0 {
		t.Fatalf("another session's tasks/list: %+v", list.Tasks)
	}
	if r := cl.Post(testenv.Request(16, "tasks/list", map[string]any{"cursor": "nonsense"}), nil); r.ErrorCode() != protocol.CodeInvalidParams {
		t.Fatalf("a bad cursor: %s", r)
	}
}
