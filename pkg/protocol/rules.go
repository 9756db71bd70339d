package protocol

import "errors"

// CodeSessionNotFound is the JSON-RPC code of the error answering a
// request that names an unknown or expired legacy session (HTTP 404).
const CodeSessionNotFound = -32001

// The constructors below are the one wording of each protocol rule that
// more than one transport (HTTP, stdio), process (frontend, worker) or
// package enforces. Each returns a fresh *Error the caller may extend
// (WithData) without affecting anyone else.

// ErrSessionNotFound answers a request naming a legacy session that does
// not exist, has expired or belongs to another principal: -32001
// "Session not found".
func ErrSessionNotFound() *Error {
	return NewError(CodeSessionNotFound, "Session not found")
}

// ErrAlreadyInitialized answers initialize sent again within a legacy
// session: -32600.
func ErrAlreadyInitialized() *Error {
	return NewError(CodeInvalidRequest, "Invalid Request: the session is already initialized")
}

// ErrInitializeNeedsParams answers initialize without params: -32602.
func ErrInitializeNeedsParams() *Error {
	return NewError(CodeInvalidParams, "invalid params: initialize requires params")
}

// ErrRequestIDInUse answers a request whose id is the id of a request of
// the same session (or stdio connection) still in flight: -32600.
func ErrRequestIDInUse(id ID) *Error {
	return NewError(CodeInvalidRequest, "invalid request: request id %s is already in use by a request in flight in this session", id)
}

// ErrStateUsed answers a 2026-07-28 request carrying a requestState that
// was already used (a requestState is single-use): -32602.
func ErrStateUsed() *Error {
	return NewError(CodeInvalidParams, "invalid params: this requestState was already used")
}

// ErrUnknownMethod answers a method the era does not have (or nobody
// serves): -32601 naming the method.
func ErrUnknownMethod(method string) *Error {
	return NewError(CodeMethodNotFound, "method not found: %q", method)
}

// ErrListenNeedsFilter answers subscriptions/listen without a
// params.notifications filter: -32602.
func ErrListenNeedsFilter() *Error {
	return NewError(CodeInvalidParams, "invalid params: params.notifications (a SubscriptionFilter) is required")
}

// ErrBadParams answers params that do not decode into the method's params
// type (err says why): -32602 "invalid params: <err>".
func ErrBadParams(err error) *Error {
	return NewError(CodeInvalidParams, "invalid params: %v", err)
}

// ErrUnknownLogLevel answers logging/setLevel with a level that is not
// one of the syslog levels: -32602.
func ErrUnknownLogLevel(level LoggingLevel) *Error {
	return NewError(CodeInvalidParams, "invalid params: unknown logging level %q", level)
}

// ErrURIRequired answers a resource request without params.uri: -32602.
func ErrURIRequired() *Error {
	return NewError(CodeInvalidParams, "invalid params: uri is required")
}

// ErrUnknownTool answers tools/call naming a tool nobody serves: -32602.
func ErrUnknownTool(name string) *Error {
	return NewError(CodeInvalidParams, "invalid params: unknown tool %q", name)
}

// ErrUnknownPrompt answers a request naming a prompt nobody serves:
// -32602.
func ErrUnknownPrompt(name string) *Error {
	return NewError(CodeInvalidParams, "invalid params: unknown prompt %q", name)
}

// ErrResourceNotFound answers a read of a resource nobody serves: -32002
// in the legacy era, -32602 in the modern one, both with data.uri.
func ErrResourceNotFound(era Era, uri string) *Error {
	code := int64(CodeResourceNotFound)
	if era == EraModern {
		code = CodeInvalidParams
	}
	return NewError(code, "resource not found: %s", uri).WithData(map[string]string{"uri": uri})
}

// ErrRequestTimedOut answers a request whose handler ran out of time:
// -32603.
func ErrRequestTimedOut() *Error {
	return NewError(CodeInternalError, "request timed out")
}

// ErrInternalFailure is the -32603 "internal error" that stands for a
// failure the client is not told about (a handler's non-protocol error, a
// result that does not encode); the server logs the cause.
func ErrInternalFailure() *Error {
	return NewError(CodeInternalError, "internal error")
}

// ErrUnparsable answers a message (an HTTP body, a stdio line) that
// Decode rejects without a *DecodeError saying why: -32700 "parse error",
// with no id (HTTP 400).
func ErrUnparsable() *Error {
	return NewError(CodeParseError, "parse error")
}

// ErrHeaderMismatch answers a 2026-07-28 HTTP request whose MCP headers
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*) are missing
// or disagree with the body: -32020 "header mismatch: <detail>", detail
// formatted from format and args as by fmt.Sprintf (HTTP 400).
func ErrHeaderMismatch(format string, args ...any) *Error {
	return NewError(CodeHeaderMismatch, "header mismatch: "+format, args...)
}

// ErrBusUnavailable answers a request the server could not hand on
// because the message bus refused it (a publish or subscribe failed):
// -32603 "message bus unavailable; retry", sent with HTTP 503 so that the
// client (or a proxy) retries.
func ErrBusUnavailable() *Error {
	return NewError(CodeInternalError, "message bus unavailable; retry")
}

// ErrSessionStoreUnavailable answers a request whose legacy session could
// not be read or written because the session store failed (not because
// the session is unknown, which is ErrSessionNotFound): -32603 "session
// store unavailable; retry", sent with HTTP 503.
func ErrSessionStoreUnavailable() *Error {
	return NewError(CodeInternalError, "session store unavailable; retry")
}

// ErrStreamNotOpened answers a request for a server-sent stream (a legacy
// session's GET stream, a 2026-07-28 subscriptions/listen stream) that the
// server could not open for a reason of its own: -32603 "could not open
// the stream; retry", sent with HTTP 503.
func ErrStreamNotOpened() *Error {
	return NewError(CodeInternalError, "could not open the stream; retry")
}

// AsError returns the *Error in err's chain (errors.As), or
// ErrInternalFailure when there is none: what a transport answers for a
// handler's error.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return ErrInternalFailure()
}
