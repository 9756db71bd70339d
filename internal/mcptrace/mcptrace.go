// Package mcptrace holds what the frontend, the worker and the stdio
// transport share to make OpenTelemetry spans of MCP requests: the
// attribute keys of the semantic conventions for MCP, JSON-RPC, HTTP and
// messaging that they set, the span name rule, and the W3C trace context
// read from and written to strings (an HTTP header, a request's _meta, a
// bus envelope) without a map.
//
// Nothing here records anything: a span is made by its caller, and every
// helper is cheap enough to call only once the span is known to record.
package mcptrace

import (
	"encoding/hex"
	"strconv"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attribute keys (OpenTelemetry semantic conventions: MCP and GenAI, RPC,
// HTTP, network, messaging).
const (
	MethodName      = attribute.Key("mcp.method.name")
	SessionID       = attribute.Key("mcp.session.id")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	ResourceURI     = attribute.Key("mcp.resource.uri")
	ToolName        = attribute.Key("gen_ai.tool.name")
	PromptName      = attribute.Key("gen_ai.prompt.name")
	OperationName   = attribute.Key("gen_ai.operation.name")
	RequestID       = attribute.Key("jsonrpc.request.id")
	ErrorType       = attribute.Key("error.type")
	RPCStatusCode   = attribute.Key("rpc.response.status_code")

	NetworkTransport       = attribute.Key("network.transport")
	NetworkProtocolName    = attribute.Key("network.protocol.name")
	NetworkProtocolVersion = attribute.Key("network.protocol.version")
	NetworkPeerAddress     = attribute.Key("network.peer.address")
	NetworkPeerPort        = attribute.Key("network.peer.port")
	HTTPRequestMethod      = attribute.Key("http.request.method")
	HTTPResponseStatusCode = attribute.Key("http.response.status_code")
	URLPath                = attribute.Key("url.path")
	URLScheme              = attribute.Key("url.scheme")
	ServerAddress          = attribute.Key("server.address")
	ServerPort             = attribute.Key("server.port")
	ClientAddress          = attribute.Key("client.address")
	UserAgent              = attribute.Key("user_agent.original")

	MessagingSystem        = attribute.Key("messaging.system")
	MessagingDestination   = attribute.Key("messaging.destination.name")
	MessagingOperationType = attribute.Key("messaging.operation.type")
	MessagingOperationName = attribute.Key("messaging.operation.name")
	MessagingBodySize      = attribute.Key("messaging.message.body.size")
	MessagingConsumerGroup = attribute.Key("messaging.consumer.group.name")
	MessagingClientID      = attribute.Key("messaging.client.id")
)

// ExecuteTool is gen_ai.operation.name of a tools/call.
const ExecuteTool = "execute_tool"

// Name is the span name of an MCP request: "{method} {target}", the
// target being the tool or prompt it names; just the method when it names
// none. Resource URIs are never part of it (unbounded cardinality).
func Name(method, tool, prompt string) string {
	switch {
	case tool != "":
		return method + " " + tool
	case prompt != "":
		return method + " " + prompt
	}
	return method
}

// Target returns the attributes naming what an MCP request addresses, for
// a span that records: method, tool (with gen_ai.operation.name), prompt,
// resource URI and request id, each when set.
func Target(attrs []attribute.KeyValue, method, tool, prompt, uri string, id protocol.ID) []attribute.KeyValue {
	if method != "" {
		attrs = append(attrs, MethodName.String(method))
	}
	if tool != "" {
		attrs = append(attrs, ToolName.String(tool))
	}
	if method == protocol.MethodToolsCall {
		attrs = append(attrs, OperationName.String(ExecuteTool))
	}
	if prompt != "" {
		attrs = append(attrs, PromptName.String(prompt))
	}
	if uri != "" {
		attrs = append(attrs, ResourceURI.String(uri))
	}
	if id.IsValid() {
		attrs = append(attrs, RequestID.String(IDString(id)))
	}
	return attrs
}

// IDString is jsonrpc.request.id: a string id as it is, a number in
// decimal.
func IDString(id protocol.ID) string {
	if id.IsString() {
		return id.Str()
	}
	return strconv.FormatInt(id.Int(), 10)
}

// Off reports whether tp is the no-op provider (go.opentelemetry.io/otel/
// trace/noop): the caller then makes no span at all and only passes the
// caller's trace context on.
func Off(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return true
	}
	return false
}

// SpanContext returns the remote span context traceparent and tracestate
// carry (W3C Trace Context, as propagation.TraceContext reads them); an
// invalid one when traceparent is empty or malformed. A malformed
// tracestate is dropped. It allocates only for a tracestate.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	sc := parseTraceparent(traceparent)
	if sc.IsValid() && tracestate != "" {
		if ts, err := trace.ParseTraceState(tracestate); err == nil {
			sc = sc.WithTraceState(ts)
		}
	}
	return sc
}

// parseTraceparent reads version-traceid-parentid-flags: lower-case hex,
// version ff refused, version 00 exactly 55 characters, a later version
// at least that with more fields after a dash; trace and span ids not all
// zeros. The flags are kept as they are (Format writes the sampled one).
func parseTraceparent(tp string) trace.SpanContext {
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}
	}
	var ver, flags [1]byte
	var tid trace.TraceID
	var sid trace.SpanID
	if !lowerHex(tp[0:2], ver[:]) || ver[0] == 0xff || !lowerHex(tp[3:35], tid[:]) || !lowerHex(tp[36:52], sid[:]) || !lowerHex(tp[53:55], flags[:]) {
		return trace.SpanContext{}
	}
	if (ver[0] == 0 && len(tp) != 55) || (len(tp) > 55 && tp[55] != '-') {
		return trace.SpanContext{}
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true})
	if !sc.IsValid() {
		return trace.SpanContext{}
	}
	return sc
}

// lowerHex decodes s, lower-case hex digits only, into dst.
func lowerHex(s string, dst []byte) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// CallerSpan is an exchange's span with tracing off: the caller's span
// context, not recording, with the strings it came in (passed on as they
// are, as before tracing existed). Its methods are the no-op span's.
type CallerSpan struct {
	noop.Span
	sc trace.SpanContext
	// Traceparent and Tracestate are the caller's, verbatim.
	Traceparent, Tracestate string
}

// NewCallerSpan returns the CallerSpan of a caller's traceparent and
// tracestate (a span with an invalid span context when traceparent is
// not valid).
func NewCallerSpan(traceparent, tracestate string) *CallerSpan {
	sc := parseTraceparent(traceparent)
	if !sc.IsValid() {
		return noCaller
	}
	return &CallerSpan{sc: sc, Traceparent: traceparent, Tracestate: tracestate}
}

// noCaller is the CallerSpan of a request without a valid traceparent,
// shared (a CallerSpan never changes).
var noCaller = &CallerSpan{}

// SpanContext is the caller's span context (without its tracestate,
// which Tracestate carries).
func (s *CallerSpan) SpanContext() trace.SpanContext { return s.sc }

// Format returns the traceparent and tracestate of sc ("" for an invalid
// span context), as W3C Trace Context writes them.
func Format(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	var b [55]byte
	copy(b[:], "00-")
	tid, sid := sc.TraceID(), sc.SpanID()
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	flags := [1]byte{byte(sc.TraceFlags()) & byte(trace.FlagsSampled)}
	hex.Encode(b[53:55], flags[:])
	return string(b[:]), sc.TraceState().String()
}
