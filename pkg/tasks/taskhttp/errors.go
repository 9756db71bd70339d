package taskhttp

import "github.com/mcpfleet/mcpfleet/pkg/protocol"

// The answers both eras' task methods share.

// errNeedsTaskID answers a task method (method) whose params carry no
// taskId: -32602 "invalid params: <method> needs a taskId".
func errNeedsTaskID(method string) *protocol.Error {
	return protocol.NewError(protocol.CodeInvalidParams, "invalid params: %s needs a taskId", method)
}

// errUnknownTask answers a task method naming a task that does not exist,
// has expired or belongs to another principal: -32602 "invalid params:
// unknown task <taskID>" (HTTP 200).
func errUnknownTask(taskID string) *protocol.Error {
	return protocol.NewError(protocol.CodeInvalidParams, "invalid params: unknown task %q", taskID)
}

// errStoreUnavailable answers a task method the task store failed (not an
// unknown task, which is errUnknownTask): -32603 "task store unavailable;
// retry", sent with HTTP 503 (or as the last event of a tasks/result
// stream already open).
func errStoreUnavailable() *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "task store unavailable; retry")
}
