package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Outbound is where a request's own messages go: its response stream. A
// transport implements it per request.
type Outbound interface {
	// Notify sends a notification that belongs to this request
	// (progress, log) on the request's stream, in order.
	Notify(ctx context.Context, method string, params any) error
	// Call sends a server-to-client request (legacy era only) on the
	// request's stream and waits for the client's answer; it returns the
	// raw result or a *protocol.Error sent by the client. ctx bounds the
	// wait; cancelling it cancels the request on the client.
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// Events is the server-wide sink of change events, implemented by the
// transport (NATS fan-out on a worker, the local stream registry on
// stdio). Methods must not block for long.
type Events interface {
	// ListChanged announces that the tools, prompts or resources list
	// changed (kind is "tools", "prompts" or "resources").
	ListChanged(ctx context.Context, kind string) error
	// ResourceUpdated announces that the resource at uri changed.
	ResourceUpdated(ctx context.Context, uri string) error
}

// RequestInit is what a transport knows about one incoming request, given
// to [NewRequest]. It is for transports (a mcpfleet worker, stdio, a test
// harness), not for handlers: a handler reads the request through the
// methods of [Request].
type RequestInit struct {
	// Method is the JSON-RPC method and ID the client's request id (zero
	// for a notification).
	Method string
	ID     protocol.ID
	// Era is the protocol era of the request, ProtocolVersion its version
	// (the session's negotiated one on legacy; "" when unknown).
	Era             protocol.Era
	ProtocolVersion string
	// SessionID is the legacy session id ("" on modern requests).
	SessionID string
	// ClientInfo is nil when the client sent none. ClientCapabilities nil
	// means the client declared nothing.
	ClientInfo         *protocol.Implementation
	ClientCapabilities *protocol.ClientCapabilities
	// LogLevel is the threshold for notifications/message: the session's
	// level (legacy) or the request's _meta logLevel (modern). Empty means
	// no log messages are sent.
	LogLevel protocol.LoggingLevel
	// Principal is the authenticated subject ("" when auth is off).
	Principal string
	// Out receives this request's notifications and server-to-client
	// requests. Nil means they are dropped.
	Out Outbound
	// Features says what the transport delivers; capabilities advertised
	// in initialize and server/discover are derived from it.
	Features Features
	// TaskHost runs tasks (the tasks extension) for this request; nil when
	// the transport cannot.
	TaskHost TaskHost
	// ParamHeaders are the Mcp-Param-* headers of a modern HTTP request
	// (name after the prefix, lower-cased). Nil means the transport has no
	// headers (stdio) and nothing is checked; non-nil (even empty) makes
	// tools/call check them against the tool's x-mcp-header arguments.
	ParamHeaders map[string]string
	// Traceparent and Tracestate are the W3C trace context the transport
	// received outside the message (HTTP headers, a bus envelope); ""
	// means none. The request's _meta.traceparent wins over them. Unless
	// the context given to Handle already carries a span context (the
	// worker's span, a transport's or an embedder's, which wins), Handle
	// puts this trace context into the handler's context (OpenTelemetry
	// propagation), so trace.SpanContextFromContext(ctx) gives the
	// caller's span.
	Traceparent, Tracestate string
}

// Request is the handle a handler gets for one incoming request: what the
// transport said about it (read-only, through its methods) and the means
// to talk back to the client (progress, logging, server-to-client
// requests, MRTR inputs). A transport builds one per message with
// [NewRequest] and passes it to [Server.Handle].
type Request struct {
	in       RequestInit
	params   json.RawMessage // set by Handle: where Name finds the target
	head     *paramsHead     // decoded by NewRequestParams from headOf
	headOf   json.RawMessage
	nameOnce sync.Once
	name     string // the target (see Name), set once

	progressToken json.RawMessage
	progressMu    sync.Mutex
	lastProgress  float64
	sentProgress  bool

	srv *Server

	mrtrMu sync.Mutex
	mrtr   *mrtr // modern requests that may return input_required

	task *taskRun // a tools/call running as a task (or about to)
}

// NewRequest returns the request a transport hands to [Server.Handle] (or
// [Server.HandleNotification]). The fields of init are copied, so the
// caller may reuse the struct; what they point to (ParamHeaders, the
// capabilities, ClientInfo) is shared and must not change while the
// request is handled. init nil is the same as an empty RequestInit.
func NewRequest(init *RequestInit) *Request {
	r := &Request{}
	if init != nil {
		r.in = *init
	}
	return r
}

// Method returns the JSON-RPC method.
func (r *Request) Method() string { return r.in.Method }

// ID returns the client's request id (zero for a notification).
func (r *Request) ID() protocol.ID { return r.in.ID }

// Era returns the protocol era of the request.
func (r *Request) Era() protocol.Era { return r.in.Era }

// ProtocolVersion returns the request's protocol version: the session's
// negotiated one on legacy, the _meta protocolVersion on modern ("" when
// unknown).
func (r *Request) ProtocolVersion() string { return r.in.ProtocolVersion }

// SessionID returns the legacy session id ("" on modern requests and on
// transports without sessions).
func (r *Request) SessionID() string { return r.in.SessionID }

// ClientInfo returns the client's implementation info (nil when it sent
// none).
func (r *Request) ClientInfo() *protocol.Implementation { return r.in.ClientInfo }

// ClientCapabilities returns what the client declared. It is never nil once
// [Server.Handle] starts (an empty value means "declared nothing").
func (r *Request) ClientCapabilities() *protocol.ClientCapabilities {
	return r.in.ClientCapabilities
}

// LogLevel returns the threshold for notifications/message: the session's
// level (legacy) or the request's _meta logLevel (modern). Empty means
// [Request.Log] sends nothing.
func (r *Request) LogLevel() protocol.LoggingLevel { return r.in.LogLevel }

// Principal returns the authenticated subject ("" when auth is off).
func (r *Request) Principal() string { return r.in.Principal }

// Name returns the request's target: the tool name of tools/call, the
// prompt name of prompts/get, the URI of resources/read,
// resources/subscribe and resources/unsubscribe; "" for other methods (and
// before [Server.Handle] starts). The method's dispatch records it as it
// decodes the params; a middleware that asks before (a request middleware
// runs first) has it decoded then, so a server without middleware never
// decodes it twice.
func (r *Request) Name() string {
	if r.srv == nil {
		return "" // Handle has not started: params are not known yet
	}
	r.nameOnce.Do(func() {
		var p struct {
			Name lenientString `json:"name"`
			URI  lenientString `json:"uri"`
		}
		if len(r.params) == 0 || json.Unmarshal(r.params, &p) != nil {
			return
		}
		switch r.in.Method {
		case protocol.MethodToolsCall, protocol.MethodPromptsGet:
			r.name = string(p.Name)
		case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
			r.name = string(p.URI)
		}
	})
	return r.name
}

// setName records the target the method's dispatch decoded (the first
// record, or Name's own decode, wins).
func (r *Request) setName(name string) { r.nameOnce.Do(func() { r.name = name }) }

// Features says what a transport can deliver.
type Features struct {
	// Listen: modern subscriptions/listen streams (list_changed and
	// resource subscriptions for 2026-07-28 clients).
	Listen bool
	// SessionStream: unsolicited messages to a legacy session (the GET
	// stream on HTTP, stdout on stdio): list_changed, resources/updated.
	SessionStream bool
	// Tasks: the tasks extension (2026-07-28), advertised in
	// capabilities.extensions.
	Tasks bool
}

// ProgressToken returns the request's _meta.progressToken (nil when the
// client did not ask for progress).
func (r *Request) ProgressToken() json.RawMessage { return r.progressToken }

// Progress sends notifications/progress when the client asked for progress
// (otherwise it does nothing). Progress must increase from one call to the
// next; a value that does not is dropped. total <= 0 means unknown.
func (r *Request) Progress(ctx context.Context, progress, total float64, message string) error {
	if r.progressToken == nil || r.in.Out == nil {
		return nil
	}
	r.progressMu.Lock()
	if r.sentProgress && progress <= r.lastProgress {
		r.progressMu.Unlock()
		return nil
	}
	r.sentProgress, r.lastProgress = true, progress
	r.progressMu.Unlock()
	p := &protocol.ProgressParams{ProgressToken: r.progressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return r.in.Out.Notify(ctx, protocol.NotificationProgress, p)
}

// Log sends notifications/message at level when the request's threshold
// lets it through (see [Request.LogLevel]); otherwise it does nothing.
func (r *Request) Log(ctx context.Context, level protocol.LoggingLevel, logger string, data any) error {
	if r.in.Out == nil || !r.in.LogLevel.Enabled(level) {
		return nil
	}
	return r.in.Out.Notify(ctx, protocol.NotificationMessage, &protocol.LoggingMessageParams{Level: level, Logger: logger, Data: data})
}

// Server returns the server handling the request.
func (r *Request) Server() *Server { return r.srv }

// ErrCapability is wrapped by errors from Sample, Elicit and ListRoots when
// the client did not declare the capability they need.
var ErrCapability = errors.New("mcp: client lacks the capability")

// ErrNoOutbound is returned by server-to-client calls when the transport
// cannot carry them for this request.
var ErrNoOutbound = errors.New("mcp: this request cannot send server-to-client requests")

// Sample asks the client to sample an LLM (sampling/createMessage).
// includeContext other than "none" needs the client's sampling.context,
// tools/toolChoice need sampling.tools. On a legacy session it is a
// server-to-client request; on a modern request an MRTR input (see Input).
func (r *Request) Sample(ctx context.Context, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
	caps := r.in.ClientCapabilities
	switch {
	case caps == nil || caps.Sampling == nil:
		return nil, r.capabilityError("sampling", map[string]any{"sampling": struct{}{}})
	case p.IncludeContext != "" && p.IncludeContext != "none" && caps.Sampling.Context == nil:
		return nil, r.capabilityError("sampling.context (includeContext "+p.IncludeContext+")", map[string]any{"sampling": map[string]any{"context": struct{}{}}})
	case (len(p.Tools) > 0 || p.ToolChoice != nil) && caps.Sampling.Tools == nil:
		return nil, r.capabilityError("sampling.tools", map[string]any{"sampling": map[string]any{"tools": struct{}{}}})
	}
	var res protocol.CreateMessageResult
	if err := r.ask(ctx, r.autoKey("sampling"), protocol.MethodSamplingCreateMessage, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit asks the user for input (elicitation/create), in form mode
// (p.RequestedSchema) or URL mode (p.Mode "url"); the client must have
// declared that mode. Legacy: a server-to-client request; modern: an MRTR
// input (see Input).
func (r *Request) Elicit(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
	caps := r.in.ClientCapabilities
	if caps == nil || caps.Elicitation == nil {
		return nil, r.capabilityError("elicitation", map[string]any{"elicitation": struct{}{}})
	}
	if p.Mode == protocol.ElicitModeURL {
		if !caps.Elicitation.SupportsURL() {
			return nil, r.capabilityError("elicitation.url", map[string]any{"elicitation": map[string]any{"url": struct{}{}}})
		}
		if r.in.Era == protocol.EraModern {
			q := *p
			q.ElicitationID = "" // 2026-07-28 URL mode has no elicitationId
			p = &q
		}
	} else if !caps.Elicitation.SupportsForm() {
		return nil, r.capabilityError("elicitation.form", map[string]any{"elicitation": map[string]any{"form": struct{}{}}})
	}
	var res protocol.ElicitResult
	if err := r.ask(ctx, r.autoKey("elicitation"), protocol.MethodElicitationCreate, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the client for its roots (roots/list). Legacy: a
// server-to-client request; modern: an MRTR input (see Input).
func (r *Request) ListRoots(ctx context.Context) (*protocol.ListRootsResult, error) {
	if caps := r.in.ClientCapabilities; caps == nil || caps.Roots == nil {
		return nil, r.capabilityError("roots", map[string]any{"roots": struct{}{}})
	}
	var res protocol.ListRootsResult
	if err := r.ask(ctx, r.autoKey("roots"), protocol.MethodRootsList, struct{}{}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ask gets one input and decodes it into result.
func (r *Request) ask(ctx context.Context, key, method string, params, result any) error {
	raw, err := r.Input(ctx, key, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		if r.in.Era == protocol.EraModern {
			return protocol.NewError(protocol.CodeInvalidParams, "invalid params: inputResponses[%q] is not a %s result: %v", key, method, err)
		}
		return fmt.Errorf("mcp: decoding the client's %s result: %w", method, err)
	}
	return nil
}

// NotifyResourceUpdated announces that the resource at uri changed; every
// session subscribed to it (and every listen stream that asked for it) is
// told, on whichever frontend it is connected.
func (r *Request) NotifyResourceUpdated(ctx context.Context, uri string) error {
	return r.srv.ResourceUpdated(ctx, uri)
}
