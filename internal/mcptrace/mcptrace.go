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
	"context"
	"encoding/hex"
	"strconv"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
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

// carrier is a TextMapCarrier over the two W3C trace context strings.
type carrier struct{ tp, ts string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.tp
	case "tracestate":
		return c.ts
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.tp = value
	case "tracestate":
		c.ts = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// SpanContext returns the remote span context traceparent and tracestate
// carry (W3C Trace Context); an invalid one when traceparent is empty or
// malformed.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := carrier{tp: traceparent, ts: tracestate}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), &c))
}

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
