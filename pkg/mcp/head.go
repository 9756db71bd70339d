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

	// call is what scanCallHead read besides, for tools/call's decode;
	// nil when the head was read otherwise.
	call *callHead
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

// decodeHead decodes params' head as json.Unmarshal does; params must not
// be empty.
func decodeHead(params []byte) (*paramsHead, error) {
	if h, ok := scanHead(params); ok {
		return h, nil
	}
	return unmarshalHead(params)
}

// decodeCallHead is decodeHead for a tools/call's params: the same head,
// which keeps (in call) what tools/call's decode reads when the params
// could be read plainly.
func decodeCallHead(params []byte) (*paramsHead, error) {
	if h, ok := scanCallHead(params); ok {
		return h, nil
	}
	return unmarshalHead(params)
}

func unmarshalHead(params []byte) (*paramsHead, error) {
	h := new(paramsHead)
	if err := json.Unmarshal(params, h); err != nil {
		return nil, protocol.ErrBadParams(err)
	}
	return h, nil
}

// headMembers are paramsHead's json names, in the order of the values
// scanHead reads.
var headMembers = []string{"_meta", "requestState", "inputResponses"}

// capped returns raw with no room past its end, so that appending to it
// (Request.ProgressToken is handed out) copies instead of writing into
// the params it aliases.
func capped(raw []byte) json.RawMessage { return raw[:len(raw):len(raw)] }

// scanHead is decodeHead without a reflection walk, when the members can
// be read plainly (protocol.ScanMembers) and the trace strings are plain;
// ok false sends the caller to encoding/json. The raw members alias
// params (the request keeps params for its life, and nothing writes them).
func scanHead(params []byte) (h *paramsHead, ok bool) {
	var v [3][]byte
	if !protocol.ScanMembers(params, headMembers, v[:]) {
		return nil, false
	}
	h = &paramsHead{RequestState: capped(v[1]), InputResponses: capped(v[2])}
	if v[0] == nil || string(v[0]) == "null" {
		return h, true
	}
	meta := new(metaHead)
	if _, ok := scanMetaHead(v[0], meta); !ok {
		return nil, false
	}
	h.Meta = meta
	return h, true
}

// scanMetaHead sets m from raw, a _meta that is not null, and returns
// the members it read; ok is false (and m unspecified) when they cannot
// be read plainly or a trace string is not plain. The raw members alias
// raw.
func scanMetaHead(raw []byte, m *metaHead) (sm protocol.ScannedMeta, ok bool) {
	if sm, ok = protocol.ScanRequestMeta(raw); !ok {
		return sm, false
	}
	*m = metaHead{ProgressToken: capped(sm.ProgressToken), ProtocolVersion: capped(sm.ProtocolVersion),
		ClientCapabilities: capped(sm.ClientCapabilities), ClientInfo: capped(sm.ClientInfo), LogLevel: capped(sm.LogLevel)}
	for _, f := range []struct {
		raw []byte
		dst *string
	}{{sm.Traceparent, &m.Traceparent}, {sm.Tracestate, &m.Tracestate}} {
		if f.raw != nil {
			if *f.dst, ok = protocol.PlainString(f.raw); !ok {
				return sm, false
			}
		}
	}
	return sm, true
}

// NewRequestParams is [NewRequest] for a transport that has the request's
// params at hand: it decodes their head once, and [Server.Handle] reuses
// it when it is given the same params (the same bytes, not a copy); for
// tools/call, so does the decode of the call's name, arguments and _meta,
// which then reads the params no further. When
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
	decode := decodeHead
	if r.in.Method == protocol.MethodToolsCall {
		decode = decodeCallHead // and the tools/call decode reads what it kept
	}
	h, err := decode(params)
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
	if v, ok := metaString(m.ProtocolVersion); ok {
		in.ProtocolVersion = v
	}
	in.ClientInfo, _ = protocol.SharedClientInfo(m.ClientInfo)
	in.ClientCapabilities, _ = protocol.SharedClientCapabilities(m.ClientCapabilities)
	if v, ok := metaString(m.LogLevel); ok {
		in.LogLevel = protocol.LoggingLevel(v)
	}
}

// metaString returns the string raw holds; ok is false when raw is
// absent, null or not a string.
func metaString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if s, ok := protocol.PlainString(raw); ok {
		return s, true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}
