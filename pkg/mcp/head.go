package mcp

import (
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// paramsHead is what Handle (and NewRequestParams) read from a request's
// params before dispatch, in one decode: the _meta members and the MRTR
// members. Members whose type only some requests constrain are kept raw,
// so a request is refused only where it was before: a malformed _meta, a
// progressToken of the wrong kind, a non-string traceparent; the MRTR
// members are checked by startMRTR (MRTR methods of modern requests), and
// the modern description members by applyMeta, which ignores bad ones.
type paramsHead struct {
	Meta           *metaHead       `json:"_meta"`
	RequestState   json.RawMessage `json:"requestState"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

type metaHead struct {
	ProgressToken      json.RawMessage `json:"progressToken"`
	Traceparent        string          `json:"traceparent"`
	Tracestate         string          `json:"tracestate"`
	ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
}

// needsHead says whether params must be decoded for the head: when they
// may hold a _meta, and always for the MRTR methods of modern requests
// (requestState and inputResponses).
func needsHead(in *RequestInit, params []byte) bool {
	return mayHaveMeta(params) || (in.Era == protocol.EraModern && mrtrMethods[in.Method])
}

// decodeHead decodes params' head; params must not be empty.
func decodeHead(params []byte) (*paramsHead, error) {
	h := new(paramsHead)
	if err := json.Unmarshal(params, h); err != nil {
		return nil, protocol.ErrBadParams(err)
	}
	return h, nil
}

// NewRequestParams is [NewRequest] for a transport that has the request's
// params at hand: it decodes their head once, and [Server.Handle] reuses
// it when it is given the same params (the same bytes, not a copy). When
// init.Era is modern and the params carry a _meta, the request's protocol
// version, client info, client capabilities and log level are taken from
// it, as the 2026-07-28 era sends them with each request (a member that
// is absent or does not decode leaves the field as init has it, but client
// info and capabilities, which become nil). Params whose head does not
// decode give a plain NewRequest; Handle then reports the error.
//
// Decoded capabilities and client info are shared between requests that
// sent the same bytes: like those of init, they must not be modified.
func NewRequestParams(init *RequestInit, params json.RawMessage) *Request {
	r := NewRequest(init)
	if len(params) == 0 || !needsHead(&r.in, params) {
		return r
	}
	h, err := decodeHead(params)
	if err != nil {
		return r
	}
	r.head, r.headOf = h, params
	if r.in.Era == protocol.EraModern && h.Meta != nil {
		applyMeta(&r.in, h.Meta)
	}
	return r
}

// headFor returns the head NewRequestParams decoded for these params, or
// nil.
func (r *Request) headFor(params []byte) *paramsHead {
	if r.head == nil || len(params) != len(r.headOf) || len(params) == 0 || &params[0] != &r.headOf[0] {
		return nil
	}
	return r.head
}

// applyMeta fills a modern request's description from its _meta.
func applyMeta(in *RequestInit, m *metaHead) {
	var v string
	if len(m.ProtocolVersion) > 0 && json.Unmarshal(m.ProtocolVersion, &v) == nil && string(m.ProtocolVersion) != "null" {
		in.ProtocolVersion = v
	}
	in.ClientInfo, _ = protocol.SharedClientInfo(m.ClientInfo)
	in.ClientCapabilities, _ = protocol.SharedClientCapabilities(m.ClientCapabilities)
	var l protocol.LoggingLevel
	if len(m.LogLevel) > 0 && string(m.LogLevel) != "null" && json.Unmarshal(m.LogLevel, &l) == nil {
		in.LogLevel = l
	}
}
