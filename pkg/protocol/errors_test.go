package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestErrorIsComparesCodes(t *testing.T) {
	notFound := protocol.NewError(protocol.CodeMethodNotFound, "method %q not found", "x/y")
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same code", notFound, protocol.ErrMethodNotFound, true},
		{"same code, other message", protocol.NewError(protocol.CodeInvalidParams, "bad cursor"), protocol.ErrInvalidParams, true},
		{"other code", notFound, protocol.ErrInvalidParams, false},
		{"wrapped once", fmt.Errorf("calling the worker: %w", notFound), protocol.ErrMethodNotFound, true},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", notFound)), protocol.ErrMethodNotFound, true},
		{"wrapped, other code", fmt.Errorf("a: %w", notFound), protocol.ErrInternal, false},
		{"joined", errors.Join(errors.New("x"), protocol.NewError(protocol.CodeInternalError, "boom")), protocol.ErrInternal, true},
		{"with data", protocol.ErrInvalidParams.WithData(map[string]string{"uri": "file:///x"}), protocol.ErrInvalidParams, true},
		{"decode error", &protocol.DecodeError{Err: protocol.NewError(protocol.CodeParseError, "parse error: x")}, protocol.ErrParse, true},
		{"non-protocol target", notFound, errors.New("method not found"), false},
		{"non-protocol error", errors.New("jsonrpc error -32601"), protocol.ErrMethodNotFound, false},
		{"custom code", protocol.NewError(protocol.CodeUnsupportedProtocolVersion, "v"), &protocol.Error{Code: -32022}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, tc.target); got != tc.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", tc.err, tc.target, got, tc.want)
			}
		})
	}
}

func TestErrorsAsThroughWrapping(t *testing.T) {
	err := fmt.Errorf("worker: %w", protocol.NewError(protocol.CodeInvalidParams, "unknown tool %q", "x"))
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("errors.As(%v) found no *protocol.Error", err)
	}
	if pe.Code != protocol.CodeInvalidParams || pe.Message != `unknown tool "x"` {
		t.Errorf("got %d %q", pe.Code, pe.Message)
	}
}

func TestNewError(t *testing.T) {
	tests := []struct {
		name   string
		format string
		args   []any
		want   string
	}{
		{"formats arguments", "unknown tool %q", []any{"calc"}, `unknown tool "calc"`},
		{"no arguments keeps verbs literal", "100% done", nil, "100% done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := protocol.NewError(-1, tc.format, tc.args...)
			if e.Message != tc.want || e.Code != -1 || e.Data != nil {
				t.Errorf("NewError = %+v, want code -1 message %q", e, tc.want)
			}
			if got, want := e.Error(), "jsonrpc error -1: "+tc.want; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

func TestWithDataCopies(t *testing.T) {
	base := protocol.NewError(protocol.CodeUnsupportedProtocolVersion, "unsupported protocol version")
	withData := base.WithData(protocol.UnsupportedVersionData{Supported: []string{"2026-07-28"}, Requested: "1999-01-01"})

	if withData == base {
		t.Fatal("WithData returned the receiver, want a copy")
	}
	if base.Data != nil {
		t.Errorf("WithData changed the receiver's data to %s", base.Data)
	}
	if withData.Code != base.Code || withData.Message != base.Message {
		t.Errorf("copy = %d %q, want %d %q", withData.Code, withData.Message, base.Code, base.Message)
	}
	if want := `{"supported":["2026-07-28"],"requested":"1999-01-01"}`; string(withData.Data) != want {
		t.Errorf("Data = %s, want %s", withData.Data, want)
	}

	// Chaining replaces data on a new copy and leaves the first alone.
	again := withData.WithData(map[string]int{"n": 1})
	if string(again.Data) != `{"n":1}` {
		t.Errorf("second WithData Data = %s", again.Data)
	}
	if !bytes.Contains(withData.Data, []byte("supported")) {
		t.Errorf("second WithData changed the first copy: %s", withData.Data)
	}

	// Sentinels stay untouched.
	_ = protocol.ErrInvalidParams.WithData("x")
	if protocol.ErrInvalidParams.Data != nil {
		t.Errorf("WithData mutated the sentinel: %s", protocol.ErrInvalidParams.Data)
	}
}

func TestWithDataDropsUnmarshalable(t *testing.T) {
	e := protocol.NewError(protocol.CodeInternalError, "x")
	got := e.WithData(make(chan int))
	if got.Data != nil {
		t.Errorf("Data = %s, want nil for an unmarshalable value", got.Data)
	}
	if got == e {
		t.Error("WithData returned the receiver")
	}
}

func TestErrorJSON(t *testing.T) {
	e := protocol.NewError(protocol.CodeInvalidParams, "bad").WithData(map[string]string{"uri": "file:///x"})
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":-32602,"message":"bad","data":{"uri":"file:///x"}}`; string(raw) != want {
		t.Errorf("Marshal = %s, want %s", raw, want)
	}
	raw, err = json.Marshal(protocol.NewError(protocol.CodeInternalError, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":-32603,"message":"x"}`; string(raw) != want {
		t.Errorf("Marshal without data = %s, want %s", raw, want)
	}
}
