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

// Request is the handle a handler gets for one incoming request. The
// exported fields are set by the transport before [Server.Handle] and must
// be treated as read-only by handlers.
type Request struct {
	// Method is the JSON-RPC method and ID the client's request id.
	Method string
	ID     protocol.ID
	// Era is the protocol era of the request, ProtocolVersion its version
	// (the session's negotiated one on legacy).
	Era             protocol.Era
	ProtocolVersion string
	// SessionID is the legacy session id ("" on modern requests).
	SessionID string
	// ClientInfo may be nil; ClientCapabilities is never nil after
	// Handle starts (an empty value means "declared nothing").
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
	// (name after the prefix, lower-cased); nil when the transport has no
	// headers (stdio). When non-nil, tools/call checks them against the
	// tool's x-mcp-header arguments.
	ParamHeaders map[string]string
	// Traceparent and Tracestate are the W3C trace context the transport
	// received outside the message (HTTP headers); the request's
	// _meta.traceparent wins over them. Handle puts the trace context into
	// the handler's context (OpenTelemetry propagation), so
	// trace.SpanContextFromContext(ctx) gives the caller's span.
	Traceparent, Tracestate string

	progressToken json.RawMessage
	progressMu    sync.Mutex
	lastProgress  float64
	sentProgress  bool

	srv *Server

	mrtrMu sync.Mutex
	mrtr   *mrtr // modern requests that may return input_required

	task *taskRun // a tools/call running as a task (or about to)
}

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
	if r.progressToken == nil || r.Out == nil {
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
	return r.Out.Notify(ctx, protocol.NotificationProgress, p)
}

// Log sends notifications/message at level when the request's threshold
// lets it through (see [Request.LogLevel]); otherwise it does nothing.
func (r *Request) Log(ctx context.Context, level protocol.LoggingLevel, logger string, data any) error {
	if r.Out == nil || !r.LogLevel.Enabled(level) {
		return nil
	}
	return r.Out.Notify(ctx, protocol.NotificationMessage, &protocol.LoggingMessageParams{Level: level, Logger: logger, Data: data})
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
	caps := r.ClientCapabilities
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
	caps := r.ClientCapabilities
	if caps == nil || caps.Elicitation == nil {
		return nil, r.capabilityError("elicitation", map[string]any{"elicitation": struct{}{}})
	}
	if p.Mode == protocol.ElicitModeURL {
		if !caps.Elicitation.SupportsURL() {
			return nil, r.capabilityError("elicitation.url", map[string]any{"elicitation": map[string]any{"url": struct{}{}}})
		}
		if r.Era == protocol.EraModern {
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
	if r.ClientCapabilities == nil || r.ClientCapabilities.Roots == nil {
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
		if r.Era == protocol.EraModern {
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
