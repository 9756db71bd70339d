package frontend

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/internal/mcptrace"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the frontend's tracer.
const instrumentation = "github.com/mcpfleet/mcpfleet/pkg/frontend"

// spans makes the SERVER span of each exchange on the MCP endpoint.
type spans struct {
	tracer trace.Tracer
	// off: the provider is the no-op one; an exchange's span is then the
	// caller's span context alone (non-recording), passed on to the
	// worker, and nothing is started or ended.
	off bool
}

func newSpans(tp trace.TracerProvider) spans {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return spans{tracer: tp.Tracer(instrumentation), off: mcptrace.Off(tp)}
}

// streamTracer is the tracer the client streams make the bus hop's
// PRODUCER spans with; nil when tracing is off.
func (s *spans) streamTracer() trace.Tracer {
	if s.off {
		return nil
	}
	return s.tracer
}

var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// startSpan starts the exchange's span once its body is decoded (and
// noteTarget ran): its parent is the request's _meta.traceparent (the MCP
// convention), else the transport's context, and the transport's context
// is linked when both are there and differ.
func (f *Frontend) startSpan(r *http.Request, rec *httpx.Record, head *protocol.ParamsHead) {
	if rec.Span != nil {
		return
	}
	var tp, ts string
	if head.Meta != nil {
		tp, ts = head.Meta.Traceparent, head.Meta.Tracestate
	}
	f.beginSpan(r, rec, tp, ts)
}

// beginSpan gives rec its span, started at rec.Start, parented on the
// request's _meta trace context (metaTP, metaTS) when valid, else on the
// transport's: a span already in the request's context (an embedder's
// HTTP middleware), else the traceparent and tracestate headers. With
// tracing off the span is the parent's context alone (a
// mcptrace.CallerSpan, or the embedder's span), nothing is started.
func (f *Frontend) beginSpan(r *http.Request, rec *httpx.Record, metaTP, metaTS string) {
	if f.spans.off {
		switch {
		case metaTP != "":
			if s := mcptrace.NewCallerSpan(metaTP, metaTS); s.SpanContext().IsValid() {
				rec.Span = s
				return
			}
		case trace.SpanContextFromContext(r.Context()).IsValid():
			rec.Span = trace.SpanFromContext(r.Context())
			return
		}
		rec.Span = mcptrace.NewCallerSpan(r.Header.Get("Traceparent"), r.Header.Get("Tracestate"))
		return
	}
	meta := mcptrace.SpanContext(metaTP, metaTS)
	transport := trace.SpanContextFromContext(r.Context())
	if !transport.IsValid() {
		transport = mcptrace.SpanContext(r.Header.Get("Traceparent"), r.Header.Get("Tracestate"))
	}
	parent, link := transport, trace.SpanContext{}
	if meta.IsValid() {
		parent = meta
		if transport.IsValid() && !transport.Equal(meta) {
			link = transport
		}
	}
	opts := []trace.SpanStartOption{serverKind, trace.WithTimestamp(rec.Start)}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	_, rec.Span = f.spans.tracer.Start(trace.ContextWithSpanContext(context.Background(), parent), f.spanName(rec), opts...)
}

// mcpMethod is the exchange's MCP method, "" when it has none (a GET, a
// DELETE, a client's response, a POST refused before its body was read).
func mcpMethod(rec *httpx.Record) string {
	if rec.Method == rec.HTTPMethod || rec.Method == "response" {
		return ""
	}
	return rec.Method
}

// spanName is "{mcp.method.name} {target}", the target being a tool or
// prompt the workers serve (a name the client made up is left out: span
// names stay as few as the catalog's), or the HTTP method for an exchange
// without an MCP method.
func (f *Frontend) spanName(rec *httpx.Record) string {
	m := mcpMethod(rec)
	if m == "" {
		return rec.HTTPMethod
	}
	tool, prompt := rec.Tool, rec.Prompt
	if tool != "" && !f.fleet.Serves("tool", tool) {
		tool = ""
	}
	if prompt != "" && !f.fleet.Serves("prompt", prompt) {
		prompt = ""
	}
	return mcptrace.Name(m, tool, prompt)
}

// endSpan ends the exchange's span once its handler is done, with what
// the record says (an exchange that never got its span gets it now, from
// its start). Never message contents nor the Authorization header; nor the
// principal (enduser.id), which is left out of spans.
func (f *Frontend) endSpan(r *http.Request, rec *httpx.Record) {
	if rec.Span == nil {
		f.beginSpan(r, rec, "", "")
	}
	span := rec.Span
	if f.spans.off || !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = mcptrace.Target(attrs, mcpMethod(rec), rec.Tool, rec.Prompt, rec.Resource, rec.ID)
	if rec.Session != "" {
		attrs = append(attrs, mcptrace.SessionID.String(rec.Session))
	}
	if rec.ProtocolVersion != "" {
		attrs = append(attrs, mcptrace.ProtocolVersion.String(rec.ProtocolVersion))
	}
	if rec.ErrCode != 0 {
		attrs = append(attrs, mcptrace.RPCStatusCode.String(strconv.FormatInt(rec.ErrCode, 10)))
	}
	attrs = appendHTTP(attrs, r, rec)
	errType := rec.ErrorType()
	if errType != "" {
		attrs = append(attrs, mcptrace.ErrorType.String(errType))
	}
	span.SetAttributes(attrs...)
	if errType != "" {
		span.SetStatus(codes.Error, errorDescription(rec, errType))
	}
	span.End()
}

// appendHTTP appends the HTTP server span attributes of the exchange.
func appendHTTP(attrs []attribute.KeyValue, r *http.Request, rec *httpx.Record) []attribute.KeyValue {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs,
		mcptrace.NetworkTransport.String("tcp"),
		mcptrace.NetworkProtocolName.String("http"),
		mcptrace.NetworkProtocolVersion.String(protoVersion(r)),
		mcptrace.HTTPRequestMethod.String(rec.HTTPMethod),
		mcptrace.URLPath.String(r.URL.Path),
		mcptrace.URLScheme.String(scheme),
	)
	if rec.Status != 0 {
		attrs = append(attrs, mcptrace.HTTPResponseStatusCode.Int(rec.Status))
	}
	if host, port := splitHostPort(r.Host); host != "" {
		attrs = append(attrs, mcptrace.ServerAddress.String(host))
		if port > 0 {
			attrs = append(attrs, mcptrace.ServerPort.Int(port))
		}
	}
	peer, peerPort := splitHostPort(r.RemoteAddr)
	client := peer
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		// The client behind the proxies, as the first proxy saw it.
		first, _, _ := strings.Cut(xff, ",")
		if first = strings.TrimSpace(first); first != "" {
			client = first
		}
	}
	if client != "" {
		attrs = append(attrs, mcptrace.ClientAddress.String(client))
	}
	if peer != "" {
		attrs = append(attrs, mcptrace.NetworkPeerAddress.String(peer))
		if peerPort > 0 {
			attrs = append(attrs, mcptrace.NetworkPeerPort.Int(peerPort))
		}
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, mcptrace.UserAgent.String(ua))
	}
	return attrs
}

// errorDescription is the span status's short description: what failed,
// never a message's text.
func errorDescription(rec *httpx.Record, errType string) string {
	switch {
	case rec.ErrCode != 0:
		return "JSON-RPC error " + errType
	case rec.ToolError:
		return "the tool's result is an error (isError)"
	}
	return errType
}

func protoVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 3:
		return "3"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	}
	return "1.1"
}

// splitHostPort splits host[:port]; port is 0 when absent or not a number.
func splitHostPort(hp string) (string, int) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return strings.Trim(hp, "[]"), 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}
