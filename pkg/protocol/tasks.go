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
