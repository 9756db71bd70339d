package protocol

import (
	"encoding/json"

	"github.com/mcpfleet/mcpfleet/internal/decodecache"
)

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
// skips everything else. The client capabilities and client info of a
// Meta that [DecodeParamsHead] or [DecodeWithHead] filled may be shared
// with other heads decoded from the same bytes: treat them as read-only.
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

// DecodeParamsHead decodes params into a zeroed h as json.Unmarshal does
// (and returns its error), without a reflection walk over the params
// when their members can be read plainly (see ScanMembers); the _meta is
// then decoded alone. What h held before is dropped, never decoded into
// (it may point to values shared with other heads).
func DecodeParamsHead(params []byte, h *ParamsHead) error {
	*h = ParamsHead{}
	if h.scan(params) {
		return nil
	}
	*h = ParamsHead{}
	return json.Unmarshal(params, h)
}

func (h *ParamsHead) scan(params []byte) bool {
	var v [6][]byte
	return ScanMembers(params, paramsHeadMembers, v[:]) && h.fill(&v)
}

// fill sets h from the values of paramsHeadMembers, as json.Unmarshal
// would, when they can be read plainly; false means the caller decodes
// with encoding/json.
func (h *ParamsHead) fill(v *[6][]byte) bool {
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
	if v[0] == nil {
		return true
	}
	if m, ok := scanMeta(v[0]); ok {
		h.Meta = m
		return true
	}
	return json.Unmarshal(v[0], &h.Meta) == nil
}

// DecodeRequestMeta decodes raw, a request's _meta, as json.Unmarshal into
// a *RequestMeta does (and returns its error; null gives nil), without a
// reflection walk when its members can be read plainly: then its client
// capabilities and client info are shared with every request that sent
// the same bytes, and must not be modified.
func DecodeRequestMeta(raw []byte) (*RequestMeta, error) {
	if m, ok := scanMeta(raw); ok {
		return m, nil
	}
	return unmarshalMeta(raw)
}

func unmarshalMeta(raw []byte) (*RequestMeta, error) {
	var m *RequestMeta
	err := json.Unmarshal(raw, &m)
	return m, err
}

// ScannedMeta is a request's _meta as [ScanRequestMeta] read it: the raw
// value of each member [RequestMeta] reads (nil when absent), aliasing
// the _meta. It lets a caller that wants these raw values and, later, the
// decoded RequestMeta read the _meta once.
type ScannedMeta struct {
	ProgressToken, ProtocolVersion, ClientCapabilities, ClientInfo, LogLevel, Traceparent, Tracestate []byte

	raw []byte // the _meta
}

// requestMetaMembers are RequestMeta's json names, in the order of the
// values ScanRequestMeta reads.
var requestMetaMembers = []string{MetaProgressToken, MetaProtocolVersion, MetaClientCapabilities,
	MetaClientInfo, MetaLogLevel, MetaTraceparent, MetaTracestate}

// ScanRequestMeta reads raw, a request's _meta, for RequestMeta's members
// in one pass of [ScanMembers]; ok is false when ScanMembers reports false
// (raw is not one object, or encoding/json could match its members
// otherwise), and the caller then decodes raw with [DecodeRequestMeta]
// or encoding/json. Nothing is decoded: a member may be of any type.
func ScanRequestMeta(raw []byte) (m ScannedMeta, ok bool) {
	var v [7][]byte
	if !ScanMembers(raw, requestMetaMembers, v[:]) {
		return ScannedMeta{}, false
	}
	return ScannedMeta{ProgressToken: v[0], ProtocolVersion: v[1], ClientCapabilities: v[2], ClientInfo: v[3],
		LogLevel: v[4], Traceparent: v[5], Tracestate: v[6], raw: raw}, true
}

// Decode returns what [DecodeRequestMeta] returns for the _meta that
// [ScanRequestMeta] read into m (the same value, error and sharing of
// client capabilities and client info), without reading the _meta's
// members again. Each call returns a new RequestMeta. m must come from
// ScanRequestMeta, and the _meta's bytes must not have changed since.
func (m *ScannedMeta) Decode() (*RequestMeta, error) {
	if rm, ok := m.decode(); ok {
		return rm, nil
	}
	return unmarshalMeta(m.raw)
}

// scanMeta decodes raw, a _meta value, as json.Unmarshal into a
// *RequestMeta does, without a reflection walk when its members can be
// read plainly (see ScanMembers) and its strings are plain; client
// capabilities and client info come from metaCaps and metaInfos. ok is
// false when the caller must decode with encoding/json instead: raw is
// not an object, or a member is null, of another type, or does not
// decode.
func scanMeta(raw []byte) (m *RequestMeta, ok bool) {
	sm, ok := ScanRequestMeta(raw)
	if !ok {
		return nil, false
	}
	return sm.decode()
}

// decode is scanMeta for the members m holds.
func (m *ScannedMeta) decode() (rm *RequestMeta, ok bool) {
	rm = &RequestMeta{ProgressToken: rawCopy(m.ProgressToken)}
	for _, f := range []struct {
		raw []byte
		dst *string
	}{{m.Traceparent, &rm.Traceparent}, {m.Tracestate, &rm.Tracestate}} {
		if f.raw == nil {
			continue
		}
		if *f.dst, ok = PlainString(f.raw); !ok {
			return nil, false
		}
	}
	if m.ProtocolVersion != nil {
		s, ok := PlainString(m.ProtocolVersion)
		if !ok {
			return nil, false
		}
		rm.ProtocolVersion = &s
	}
	if m.LogLevel != nil {
		s, ok := PlainString(m.LogLevel)
		if !ok {
			return nil, false
		}
		l := LoggingLevel(s)
		rm.LogLevel = &l
	}
	if m.ClientCapabilities != nil {
		if rm.ClientCapabilities, ok = cachedObject(metaCaps, m.ClientCapabilities); !ok {
			return nil, false
		}
	}
	if m.ClientInfo != nil {
		if rm.ClientInfo, ok = cachedObject(metaInfos, m.ClientInfo); !ok {
			return nil, false
		}
	}
	return rm, true
}

// metaCaps and metaInfos keep the client capabilities and client info of
// _meta objects decoded by their bytes: a 2026-07-28 client sends the
// same ones with every request.
var (
	metaCaps  = decodecache.New[ClientCapabilities]()
	metaInfos = decodecache.New[Implementation]()
)

// SharedClientCapabilities returns the client capabilities encoded as raw
// (a JSON object), decoded once per distinct encoding and shared by every
// caller that sends the same bytes: the result must not be modified. ok is
// false (and the result nil) when raw is not an object or does not decode.
func SharedClientCapabilities(raw []byte) (*ClientCapabilities, bool) {
	return cachedObject(metaCaps, raw)
}

// SharedClientInfo is [SharedClientCapabilities] for client info.
func SharedClientInfo(raw []byte) (*Implementation, bool) {
	return cachedObject(metaInfos, raw)
}

// cachedObject returns the object raw decoded into a new T through c; ok
// is false when raw is not an object or does not decode.
func cachedObject[T any](c *decodecache.Cache[T], raw []byte) (v *T, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	v, err := c.GetBytes(raw, func(k string) (*T, error) {
		v := new(T)
		if err := json.Unmarshal([]byte(k), v); err != nil {
			return nil, err
		}
		return v, nil
	})
	return v, err == nil
}
