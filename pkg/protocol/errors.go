package protocol

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeResourceNotFound is the legacy (<= 2025-11-25) resource-not-found
	// code; modern servers use CodeInvalidParams with data.uri.
	CodeResourceNotFound = -32002

	// Modern (2026-07-28) codes.
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022

	// CodeURLElicitationRequired is the legacy (2025-11-25) error a handler
	// returns when a URL elicitation must complete first.
	CodeURLElicitationRequired = -32042
)

// Error is a JSON-RPC error object. It implements error, and errors.Is
// compares codes, so a code survives crossing the bus:
//
//	errors.Is(err, protocol.ErrMethodNotFound)
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; never mutate them.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
)

// NewError returns an *Error with the given code and formatted message.
func NewError(code int64, format string, args ...any) *Error {
	if len(args) > 0 {
		format = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Message: format}
}

// WithData returns a copy of e carrying data marshalled as JSON. A value that
// cannot be marshalled is dropped.
func (e *Error) WithData(data any) *Error {
	c := *e
	if raw, err := json.Marshal(data); err == nil {
		c.Data = raw
	}
	return &c
}

// UnsupportedVersionData is the data of a -32022 (or legacy -32602) version
// error.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}
