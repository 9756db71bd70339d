package protocol_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Each rule's error has one code and one wording, whichever transport
// answers with it; the wording is pinned here.
func TestRuleErrors(t *testing.T) {
	tests := []struct {
		err  *protocol.Error
		code int64
		msg  string
	}{
		{protocol.ErrSessionNotFound(), -32001, "Session not found"},
		{protocol.ErrAlreadyInitialized(), -32600, "Invalid Request: the session is already initialized"},
		{protocol.ErrInitializeNeedsParams(), -32602, "invalid params: initialize requires params"},
		{protocol.ErrRequestIDInUse(protocol.Int64ID(7)), -32600, "invalid request: request id 7 is already in use by a request in flight in this session"},
		{protocol.ErrRequestIDInUse(protocol.StringID("a")), -32600, `invalid request: request id "a" is already in use by a request in flight in this session`},
		{protocol.ErrStateUsed(), -32602, "invalid params: this requestState was already used"},
		{protocol.ErrUnknownMethod("x/y"), -32601, `method not found: "x/y"`},
		{protocol.ErrListenNeedsFilter(), -32602, "invalid params: params.notifications (a SubscriptionFilter) is required"},
		{protocol.ErrBadParams(errors.New("boom")), -32602, "invalid params: boom"},
		{protocol.ErrUnknownLogLevel("loud"), -32602, `invalid params: unknown logging level "loud"`},
		{protocol.ErrURIRequired(), -32602, "invalid params: uri is required"},
		{protocol.ErrUnknownTool("t"), -32602, `invalid params: unknown tool "t"`},
		{protocol.ErrUnknownPrompt("p"), -32602, `invalid params: unknown prompt "p"`},
		{protocol.ErrResourceNotFound(protocol.EraLegacy, "u://x"), -32002, "resource not found: u://x"},
		{protocol.ErrResourceNotFound(protocol.EraModern, "u://x"), -32602, "resource not found: u://x"},
		{protocol.ErrRequestTimedOut(), -32603, "request timed out"},
		{protocol.ErrInternalFailure(), -32603, "internal error"},
		{protocol.ErrUnparsable(), -32700, "parse error"},
		{protocol.ErrHeaderMismatch("the Mcp-Method header is required"), -32020, "header mismatch: the Mcp-Method header is required"},
		{protocol.ErrHeaderMismatch("Mcp-Name %q does not match the body", "x"), -32020, `header mismatch: Mcp-Name "x" does not match the body`},
		{protocol.ErrBusUnavailable(), -32603, "message bus unavailable; retry"},
		{protocol.ErrSessionStoreUnavailable(), -32603, "session store unavailable; retry"},
		{protocol.ErrStreamNotOpened(), -32603, "could not open the stream; retry"},
	}
	for _, tc := range tests {
		if tc.err.Code != tc.code || tc.err.Message != tc.msg {
			t.Errorf("got %d %q, want %d %q", tc.err.Code, tc.err.Message, tc.code, tc.msg)
		}
	}
	if d := string(protocol.ErrResourceNotFound(protocol.EraModern, "u://x").Data); d != `{"uri":"u://x"}` {
		t.Errorf("resource not found data = %s", d)
	}
	// A fresh value each time: one caller's change is nobody else's.
	a := protocol.ErrStateUsed()
	a.Message = "changed"
	if protocol.ErrStateUsed().Message == "changed" {
		t.Error("ErrStateUsed returned a shared value")
	}
}

func TestAsError(t *testing.T) {
	pe := protocol.ErrStateUsed()
	if got := protocol.AsError(fmt.Errorf("wrapped: %w", pe)); got != pe {
		t.Errorf("AsError(wrapped) = %v, want %v", got, pe)
	}
	if got := protocol.AsError(errors.New("plain")); got.Code != protocol.CodeInternalError || got.Message != "internal error" {
		t.Errorf("AsError(plain) = %v", got)
	}
}
