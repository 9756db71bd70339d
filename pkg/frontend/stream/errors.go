package stream

import (
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The answers an exchange ends with when the worker side fails it; each
// wording is used by both the attached loop (the client is waiting on the
// POST) and the detached drain (the answer goes to the stream's log), so
// a client sees the same error whichever of them ended the exchange.

// errNoWorker answers a request no worker subscribes to: -32603 "no
// worker is available to serve <method>; retry later" (HTTP 503 while
// attached).
func errNoWorker(method string) *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "no worker is available to serve %q; retry later", method)
}

// errWorkerLost answers a request whose worker stopped sending liveness
// before it answered: -32603 "the worker handling <method> stopped
// responding; retry" (HTTP 502 while attached: the worker may have run
// it).
func errWorkerLost(method string) *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "the worker handling %q stopped responding; retry", method)
}

// errTimedOut answers a request that was not answered within the request
// timeout d: -32603 "request timed out after <d>" (HTTP 504 while
// attached).
func errTimedOut(d time.Duration) *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "request timed out after %s", d)
}

// errBusLost answers a request whose frontend lost its NATS connection
// before the answer started: -32603 "this server lost its message bus
// (NATS) connection; the request may still have run" (HTTP 502: a proxy
// must not send it elsewhere by itself).
func errBusLost() *protocol.Error {
	return protocol.NewError(protocol.CodeInternalError, "this server lost its message bus (NATS) connection; the request may still have run")
}
