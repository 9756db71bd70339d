package protocol

import (
	"encoding/json"
	"time"
)

// ExtensionTasks names the 2026-07-28 tasks extension (SEP-2663) in
// capabilities.extensions: long-running tools/call requests answered with
// a task the client polls (tasks/get), feeds input (tasks/update) and
// cancels (tasks/cancel).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// TaskStatus is a task's state. Terminal states never change.
type TaskStatus string

// Task states.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is completed, failed or cancelled.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Task is the tasks extension's task (flat in CreateTaskResult and in
// tasks/get's result). TTLMs null means no expiry.
type Task struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTLMs          *int64     `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs,omitempty"`
}

// TaskTime formats t as tasks' timestamps (RFC 3339, UTC, milliseconds).
func TaskTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// CreateTaskResult answers a tools/call that became a task (resultType
// "task"): the task, and nothing of its outcome.
type CreateTaskResult struct {
	ResultBase
	Task
}

// GetTaskResult answers tasks/get (resultType "complete"): the task and,
// by status, the input it waits for, its result or its error.
type GetTaskResult struct {
	ResultBase
	Task
	InputRequests map[string]*InputRequest `json:"inputRequests,omitempty"`
	Result        json.RawMessage          `json:"result,omitempty"`
	Error         *Error                   `json:"error,omitempty"`
}

// TaskParams are the params of tasks/get and tasks/cancel.
type TaskParams struct {
	Meta   *RequestMeta `json:"_meta,omitempty"`
	TaskID string       `json:"taskId"`
}

// UpdateTaskParams are the params of tasks/update.
type UpdateTaskParams struct {
	Meta           *RequestMeta               `json:"_meta,omitempty"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// DeclaresTasks reports whether caps declare the tasks extension.
func DeclaresTasks(caps *ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[ExtensionTasks]
	return ok
}

// TasksRequired is the -32021 error for a request that needs the tasks
// extension the client did not declare.
func TasksRequired(what string) *Error {
	return NewError(CodeMissingRequiredClientCapability, "%s needs the %s extension, which the request's client capabilities do not declare", what, ExtensionTasks).
		WithData(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: struct{}{}}}})
}

// The 2025-11-25 experimental tasks: the same task, with the legacy field
// names (ttl, pollInterval), nested in CreateTaskResult.

// LegacyTask is a task on the 2025-11-25 wire.
type LegacyTask struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`
	LastUpdatedAt string     `json:"lastUpdatedAt"`
	TTL           *int64     `json:"ttl"`
	PollInterval  int64      `json:"pollInterval,omitempty"`
}

// Legacy returns t with the 2025-11-25 field names.
func (t *Task) Legacy() LegacyTask {
	return LegacyTask{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTLMs, PollInterval: t.PollIntervalMs}
}

// LegacyCreateTaskResult answers a task-augmented request (2025-11-25).
type LegacyCreateTaskResult struct {
	ResultBase
	Task LegacyTask `json:"task"`
}

// LegacyTaskResult answers tasks/get and tasks/cancel (2025-11-25): the
// task, flat.
type LegacyTaskResult struct {
	ResultBase
	LegacyTask
}

// TaskMetadata is a 2025-11-25 request's params.task (task augmentation).
type TaskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// RelatedTaskMeta is the _meta value tying a message to a task
// (io.modelcontextprotocol/related-task).
func RelatedTaskMeta(taskID string) Meta {
	return Meta{MetaRelatedTask: map[string]string{"taskId": taskID}}
}

// LegacyTasksCapability is what a server that runs tools/call as tasks
// declares in 2025-11-25. Tasks belong to their session: tasks/list lists
// the session's own. Read-only: every capabilities value that declares
// tasks shares these bytes.
var LegacyTasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// ListTasksResult answers tasks/list (2025-11-25).
type ListTasksResult struct {
	ResultBase
	Tasks      []LegacyTask `json:"tasks"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// NotificationTasksStatus is the optional 2025-11-25 notification of a
// task's new status (params: the task).
const NotificationTasksStatus = "notifications/tasks/status"
