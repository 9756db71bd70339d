package protocol

import "encoding/json"

// Reserved _meta keys.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaRelatedTask        = "io.modelcontextprotocol/related-task"
	MetaModelImmediate     = "io.modelcontextprotocol/model-immediate-response"
	MetaProgressToken      = "progressToken"
	MetaTraceparent        = "traceparent"
	MetaTracestate         = "tracestate"
	MetaBaggage            = "baggage"
)

// Meta is a _meta object.
type Meta map[string]any

// RequestMeta is the part of a request's params._meta that the server reads.
// Unknown keys are ignored.
type RequestMeta struct {
	ProgressToken      json.RawMessage     `json:"progressToken,omitempty"`
	ProtocolVersion    *string             `json:"io.modelcontextprotocol/protocolVersion,omitempty"`
	ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
	ClientInfo         *Implementation     `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	LogLevel           *LoggingLevel       `json:"io.modelcontextprotocol/logLevel,omitempty"`
	Traceparent        string              `json:"traceparent,omitempty"`
	Tracestate         string              `json:"tracestate,omitempty"`
}

// ParamsHead is the subset of any request's params that transports need
// before dispatch: the _meta plus the routing names. Decoding params into it
// skips everything else.
type ParamsHead struct {
	Meta *RequestMeta `json:"_meta,omitempty"`
	// Name is tools/call and prompts/get's name.
	Name *string `json:"name,omitempty"`
	// URI is resources/read's uri (and subscribe/unsubscribe's).
	URI *string `json:"uri,omitempty"`
	// RequestID is notifications/cancelled's requestId.
	RequestID json.RawMessage `json:"requestId,omitempty"`
	// RequestState is an MRTR retry's requestState.
	RequestState *string `json:"requestState,omitempty"`
	// TaskID is tasks/get, tasks/update and tasks/cancel's taskId.
	TaskID *string `json:"taskId,omitempty"`
}

// CheckModernMeta applies the 2026-07-28 rules for a request's _meta, the
// same on every transport: a missing _meta or required key is -32602, an
// unsupported protocol version -32022 (with the supported list), an
// unknown log level -32602. versionCheck, when not nil, runs after the
// required keys are found and before the version is checked: HTTP compares
// the MCP-Protocol-Version header there (-32020 on mismatch).
func CheckModernMeta(meta *RequestMeta, versionCheck func(version string) *Error) *Error {
	switch {
	case meta == nil:
		return NewError(CodeInvalidParams, "invalid params: params._meta is required")
	case meta.ProtocolVersion == nil:
		return NewError(CodeInvalidParams, "invalid params: _meta[%q] is required", MetaProtocolVersion)
	case meta.ClientCapabilities == nil:
		return NewError(CodeInvalidParams, "invalid params: _meta[%q] is required", MetaClientCapabilities)
	}
	version := *meta.ProtocolVersion
	if versionCheck != nil {
		if e := versionCheck(version); e != nil {
			return e
		}
	}
	switch {
	case IsLegacyVersion(version):
		// Supported, but by sessions only: say so rather than "unsupported".
		return NewError(CodeUnsupportedProtocolVersion, "protocol version %q is spoken in sessions (initialize, then Mcp-Session-Id), not in params._meta, which takes %v",
			version, ModernVersions()).WithData(&UnsupportedVersionData{Supported: SupportedVersions(), Requested: version})
	case !IsModernVersion(version):
		return NewError(CodeUnsupportedProtocolVersion, "unsupported protocol version %q", version).
			WithData(&UnsupportedVersionData{Supported: SupportedVersions(), Requested: version})
	}
	if meta.LogLevel != nil && !meta.LogLevel.Valid() {
		return NewError(CodeInvalidParams, "invalid params: unknown log level %q", *meta.LogLevel)
	}
	return nil
}

// IsModernMeta reports whether a request's _meta makes it a 2026-07-28
// request: it names a protocol version or client capabilities.
func IsModernMeta(meta *RequestMeta) bool {
	return meta != nil && (meta.ProtocolVersion != nil || meta.ClientCapabilities != nil)
}

// paramsHeadMembers are ParamsHead's json names, in the order of the
// values DecodeParamsHead reads.
var paramsHeadMembers = []string{"_meta", "name", "uri", "requestId", "requestState", "taskId"}

// DecodeParamsHead decodes params into h as json.Unmarshal does (and
// returns its error), without a reflection walk over the params when
// their members can be read plainly (see ScanMembers); the _meta is then
// decoded alone.
func DecodeParamsHead(params []byte, h *ParamsHead) error {
	if h.scan(params) {
		return nil
	}
	*h = ParamsHead{}
	return json.Unmarshal(params, h)
}

func (h *ParamsHead) scan(params []byte) bool {
	var v [6][]byte
	if !ScanMembers(params, paramsHeadMembers, v[:]) {
		return false
	}
	for _, m := range []struct {
		raw []byte
		dst **string
	}{{v[1], &h.Name}, {v[2], &h.URI}, {v[4], &h.RequestState}, {v[5], &h.TaskID}} {
		if m.raw == nil {
			continue
		}
		s, ok := PlainString(m.raw)
		if !ok {
			return false
		}
		*m.dst = &s
	}
	h.RequestID = rawCopy(v[3])
	return v[0] == nil || json.Unmarshal(v[0], &h.Meta) == nil
}
