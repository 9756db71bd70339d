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
}
