package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The tasks extension (2026-07-28) across separate frontend and worker
// processes: task state in Redis, any frontend answers about any task.

var tasksCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{protocol.ExtensionTasks: map[string]any{}}}

// taskView is what tasks/get and CreateTaskResult carry.
type taskView struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *protocol.Error `json:"error"`
}

func taskOf(t *testing.T, r *testenv.Reply) taskView {
	t.Helper()
	resp := r.Response()
	if r.Status != 200 || resp == nil || resp.Error != nil {
		t.Fatalf("got %s, want a result", r)
	}
	var v taskView
	if err := json.Unmarshal(resp.Result, &v); err != nil {
		t.Fatalf("result: %v: %s", err, resp.Result)
	}
	return v
}

func startTask(t *testing.T, c *testenv.Client, id int, tool string, args map[string]any) taskView {
	t.Helper()
	v := taskOf(t, modern(t, c, id, "tools/call", map[string]any{"name": tool, "arguments": args}, tasksCaps, nil))
	if v.ResultType != "task" || v.TaskID == "" || v.Status != "working" {
		t.Fatalf("%s: want a CreateTaskResult, got %+v", tool, v)
	}
	return v
}

func getTask(t *testing.T, c *testenv.Client, id int, taskID string) taskView {
	t.Helper()
	v := taskOf(t, modern(t, c, id, "tasks/get", map[string]any{"taskId": taskID}, tasksCaps, nil))
	if v.TaskID != taskID || v.ResultType != "complete" {
		t.Fatalf("tasks/get %s: %+v", taskID, v)
	}
	return v
}

// pollTask polls tasks/get until the status is one of want.
func pollTask(t *testing.T, c *testenv.Client, taskID string, timeout time.Duration, want ...string) taskView {
	t.Helper()
	timeout = testenv.HangGuard(timeout)
	var v taskView
	i := 1000
	if !testutil.WaitFor(timeout, func() bool {
		i++
		v = getTask(t, c, i, taskID)
		return slices.Contains(want, v.Status)
	}) {
		t.Fatalf("task %s still %s after %v, want %v", taskID, v.Status, timeout, want)
	}
	return v
}

// A task created through frontend A is read, fed input and cancelled
// through frontend B.
func TestTaskAcrossFrontends(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	a := testenv.NewModernClient(t, c.URLs[0])
	b := testenv.NewModernClient(t, c.URLs[1])

	// Input through the other frontend.
	task := startTask(t, a, 1, "confirm_delete", map[string]any{"filename": "x.txt"})
	v := pollTask(t, b, task.TaskID, 5*time.Second, "input_required")
	if len(v.InputRequests) != 1 || v.InputRequests["confirm"] == nil {
		t.Fatalf("input requests: %v", v.InputRequests)
	}
	ack := taskOf(t, modern(t, b, 2, "tasks/update", map[string]any{"taskId": task.TaskID,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps, nil))
	if ack.ResultType != "complete" || ack.TaskID != "" {
		t.Fatalf("tasks/update ack: %+v", ack)
	}
	v = pollTask(t, a, task.TaskID, 5*time.Second, "completed", "failed", "cancelled")
	if v.Status != "completed" || v.Result == nil || v.Result.Content[0].Text != "deleted x.txt" {
		t.Fatalf("after the input: %+v", v)
	}

	// Cancel through the other frontend: the task ends cancelled and stays so.
	task = startTask(t, a, 3, "slow_compute", map[string]any{"seconds": 30, "label": "to cancel"})
	if v := getTask(t, b, 4, task.TaskID); v.Status != "working" {
		t.Fatalf("a fresh task: %+v", v)
	}
	if ack := taskOf(t, modern(t, b, 5, "tasks/cancel", map[string]any{"taskId": task.TaskID}, tasksCaps, nil)); ack.ResultType != "complete" || ack.Status != "" {
		t.Fatalf("tasks/cancel ack: %+v", ack)
	}
	if v := getTask(t, a, 6, task.TaskID); v.Status != "cancelled" {
		t.Fatalf("right after the cancel: %+v", v)
	}
	// A bounded wait, the behaviour under test being that nothing changes:
	// the worker's handler ends meanwhile (slow_compute reports no event
	// of its cancellation to wait for).
	time.Sleep(300 * time.Millisecond)
	if v := getTask(t, b, 7, task.TaskID); v.Status != "cancelled" || v.Result != nil {
		t.Fatalf("a cancelled task changed: %+v", v)
	}
	// Cancelling a terminal task is acknowledged and changes nothing.
	if ack := taskOf(t, modern(t, a, 8, "tasks/cancel", map[string]any{"taskId": task.TaskID}, tasksCaps, nil)); ack.ResultType != "complete" {
		t.Fatalf("second cancel: %+v", ack)
	}

	// The rules of the task methods.
	wantError(t, modern(t, b, 9, "tasks/get", map[string]any{"taskId": task.TaskID}, map[string]any{}, nil), 400, protocol.CodeMissingRequiredClientCapability)
	wantError(t, modern(t, b, 10, "tasks/get", map[string]any{"taskId": task.TaskID}, tasksCaps, map[string]string{"Mcp-Name": "another-task"}), 400, protocol.CodeHeaderMismatch)
	wantError(t, modern(t, b, 11, "tasks/get", map[string]any{"taskId": "no-such-task"}, tasksCaps, nil), 200, protocol.CodeInvalidParams)
	wantError(t, modern(t, b, 12, "tasks/result", map[string]any{"taskId": task.TaskID}, tasksCaps, nil), 404, protocol.CodeMethodNotFound)
	// A task-required tool without the extension: -32021 naming it.
	e := wantError(t, modern(t, a, 13, "tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}, map[string]any{}, nil), 400, protocol.CodeMissingRequiredClientCapability)
	if !strings.Contains(string(e.Error.Data), protocol.ExtensionTasks) {
		t.Fatalf("error data: %s", e.Error.Data)
	}
}

// A task outlives the frontend that created it.
func TestTaskSurvivesFrontendDeath(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 1})
	a := testenv.NewModernClient(t, c.URLs[0])
	b := testenv.NewModernClient(t, c.URLs[1])
	task := startTask(t, a, 1, "slow_compute", map[string]any{"seconds": 1.5, "label": "survivor"})
	c.Frontends[0].Kill()
	v := pollTask(t, b, task.TaskID, 10*time.Second, "completed", "failed", "cancelled")
	if v.Status != "completed" || v.Result == nil || !strings.Contains(v.Result.Content[0].Text, "survivor") {
		t.Fatalf("after the creating frontend died: %+v", v)
	}
}

// A task whose worker is killed ends failed, with a clear message, at the
// next tasks/get: it never stays working.
func TestTaskWorkerKilled(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 1})
	a := testenv.NewModernClient(t, c.URLs[0])
	task := startTask(t, a, 1, "slow_compute", map[string]any{"seconds": 60, "label": "orphan"})
	killed := time.Now()
	c.Workers[0].Kill()
	b := testenv.NewModernClient(t, c.URLs[1])
	v := pollTask(t, b, task.TaskID, 5*time.Second, "completed", "failed", "cancelled")
	t.Logf("the task of the killed worker ended %s %s after the kill", v.Status, time.Since(killed).Round(time.Millisecond))
	if v.Status != "failed" || v.Error == nil || !strings.Contains(v.Error.Message, "worker") {
		t.Fatalf("after the worker's death: %+v", v)
	}
}

// A listen stream whose filter names a task gets notifications/tasks as
// the task changes, whichever frontend and worker change it.
func TestTaskNotifications(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	a := testenv.NewModernClient(t, c.URLs[0])
	b := testenv.NewModernClient(t, c.URLs[1])
	task := startTask(t, a, 1, "confirm_delete", map[string]any{"filename": "n.txt"})
	pollTask(t, a, task.TaskID, 5*time.Second, "input_required")

	msg, hdr := testenv.ModernRequest("watch", "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{task.TaskID}}}, tasksCaps)
	s := b.PostStream(msg, hdr)
	if s.Status != 200 {
		t.Fatalf("listen: HTTP %d %s", s.Status, s.Body)
	}
	_, ack := s.NextMessage(t, 10*time.Second)
	if ack.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(ack.Params), task.TaskID) {
		t.Fatalf("ack: %s %s", ack.Method, ack.Params)
	}
	modern(t, a, 2, "tasks/update", map[string]any{"taskId": task.TaskID,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps, nil)
	var statuses []string
	for len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
		_, m := s.NextMessage(t, 10*time.Second)
		if m.Method != "notifications/tasks" {
			t.Fatalf("got %s", m.Method)
		}
		tagged(t, m, "watch")
		var p taskView
		if err := json.Unmarshal(m.Params, &p); err != nil || p.TaskID != task.TaskID {
			t.Fatalf("params: %s", m.Params)
		}
		statuses = append(statuses, p.Status)
		if p.Status == "completed" && (p.Result == nil || p.Result.Content[0].Text != "deleted n.txt") {
			t.Fatalf("completed without its result: %s", m.Params)
		}
	}
	if statuses[0] != "working" {
		t.Fatalf("statuses %v, want working then completed", statuses)
	}
	s.Close()
	// Without the extension, task ids are not honoured: the
	// acknowledgement leaves them out.
	msg, hdr = testenv.ModernRequest("w2", "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{task.TaskID}, "toolsListChanged": true}}, map[string]any{})
	s = b.PostStream(msg, hdr)
	if _, ack := s.NextMessage(t, 10*time.Second); ack.Method != "notifications/subscriptions/acknowledged" || strings.Contains(string(ack.Params), "taskIds") {
		t.Fatalf("ack without the extension: %s", ack.Params)
	}
	s.Close()
}
