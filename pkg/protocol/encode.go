package protocol

import (
	"encoding/json"
	"strconv"
)

// Encoding. These build envelopes by appending, so raw results are copied
// verbatim and never re-marshalled.

// AppendResponse appends {"jsonrpc":"2.0","id":id,"result":result}.
// result must be valid JSON (an object).
func AppendResponse(b []byte, id ID, result []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.AppendJSON(b)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// AppendErrorResponse appends an error response. An absent id (the request
// could not be read) is omitted: MCP's schemas forbid a null id.
func AppendErrorResponse(b []byte, id ID, e *Error) []byte {
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id.IsValid() {
		b = append(b, `"id":`...)
		b = id.AppendJSON(b)
		b = append(b, ',')
	}
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message)
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, "}}"...)
}

// AppendNotification appends a notification; params may be nil.
func AppendNotification(b []byte, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0",`...)
	return appendMethodParams(b, method, params)
}

// AppendRequest appends a request; params may be nil.
func AppendRequest(b []byte, id ID, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.AppendJSON(b)
	b = append(b, ',')
	return appendMethodParams(b, method, params)
}

// appendMethodParams appends `"method":method,"params":params}` (no
// params member when params is empty), closing the message.
func appendMethodParams(b []byte, method string, params []byte) []byte {
	b = append(b, `"method":`...)
	b = appendJSONString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// EncodeResponse marshals result and wraps it in a response envelope.
func EncodeResponse(id ID, result any) ([]byte, error) {
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return AppendResponse(nil, id, raw), nil
}

// EncodeNotification marshals params and wraps them in a notification.
func EncodeNotification(method string, params any) ([]byte, error) {
	var raw []byte
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	return AppendNotification(nil, method, raw), nil
}
