package httpx

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"go.opentelemetry.io/otel/trace"
)

// Record is what is known of one exchange on the MCP endpoint, filled in
// while it is served: the metrics, the access log, the trace span and the
// attributes of log lines made in the request's context all read it. It
// belongs to the exchange's handler goroutine; fields are set before the
// answer is written and read once the handler has returned. The zero value
// of each field means "not known" (no session, no tool, no error code).
type Record struct {
	// Start is when the exchange began.
	Start time.Time
	// HTTPMethod is the HTTP request's method; Method the JSON-RPC method
	// ("response" for a client's answer, "GET"/"DELETE" for the HTTP
	// methods without a message).
	HTTPMethod, Method string
	// ID is the JSON-RPC request id (zero when none).
	ID protocol.ID
	// Tool, Prompt and Resource name what the request addresses:
	// tools/call's tool, prompts/get's prompt, resources/read's (and
	// subscribe's) URI.
	Tool, Prompt, Resource string
	// Session is the legacy session id (the new one for an initialize).
	Session string
	// ProtocolVersion is the request's protocol version (the session's,
	// the _meta's, or the header's).
	ProtocolVersion string
	// Principal is the authenticated caller ("" without authentication).
	Principal string
	// Status is the HTTP status written (0 until written).
	Status int
	// ErrCode is the JSON-RPC error code of the answer (0: none).
	ErrCode int64
	// ToolError is set for a tools/call whose result has isError true.
	ToolError bool
	// Span is the exchange's trace span, once started (nil before). With
	// tracing off it is a non-recording span that still carries the
	// caller's trace context, if any.
	Span trace.Span
	// Remote is the client's address (the request's RemoteAddr: behind a
	// proxy, the proxy's).
	Remote string
	// Op is the metrics' hold on the exchange's operation while it is
	// counted in flight (package frontend/metrics sets it once the
	// request's method and target are known, and clears it at the end);
	// nil for an exchange that is no operation.
	Op any

	outcome string
}

// TraceID is the exchange's trace id in hex, "" when it has none.
func (r *Record) TraceID() string {
	if r.Span == nil {
		return ""
	}
	if sc := r.Span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Outcome is the exchange's outcome label: the one set with SetOutcome,
// else one derived from the status written (ok, rejected, unavailable).
func (r *Record) Outcome() string {
	switch {
	case r.outcome != "":
		return r.outcome
	case r.Status >= 500:
		return "unavailable"
	case r.Status >= 400:
		return "rejected"
	}
	return "ok"
}

// ErrorType is the OpenTelemetry error.type of the exchange: "" when it
// succeeded; the JSON-RPC error code (as a string) of an error answer;
// "tool_error" for a tool result with isError; otherwise the outcome when
// it is not "ok" (timeout, worker_lost, no_worker, unavailable,
// cancelled, client_gone, dropped, rejected).
func (r *Record) ErrorType() string {
	switch {
	case r.ErrCode != 0:
		return strconv.FormatInt(r.ErrCode, 10)
	case r.ToolError:
		return "tool_error"
	}
	if o := r.Outcome(); o != "ok" && o != "error" {
		return o
	}
	return ""
}

// NoteResponse records what a forwarded JSON-RPC response says: its error
// code, or (tools/call) whether its result is a tool error.
func (r *Record) NoteResponse(payload []byte, code int64, isErr bool) {
	if isErr {
		r.ErrCode = code
		return
	}
	if r.Method == protocol.MethodToolsCall && protocol.IsToolErrorResult(payload) {
		r.ToolError = true
	}
}

// Recorder wraps the ResponseWriter of one exchange to learn its status;
// it carries the exchange's Record. Unwrap keeps http.ResponseController
// (flush, write deadlines) working through it.
type Recorder struct {
	http.ResponseWriter
	Rec Record
}

// NewRecorder wraps w for an exchange that started at start.
func NewRecorder(w http.ResponseWriter, r *http.Request, start time.Time) *Recorder {
	return &Recorder{ResponseWriter: w, Rec: Record{Start: start, HTTPMethod: r.Method, Method: r.Method, Remote: r.RemoteAddr}}
}

func (r *Recorder) WriteHeader(code int) {
	if r.Rec.Status == 0 {
		r.Rec.Status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *Recorder) Write(b []byte) (int, error) {
	if r.Rec.Status == 0 {
		r.Rec.Status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Result is the outcome label (Record.Outcome).
func (r *Recorder) Result() string { return r.Rec.Outcome() }

// RecordOf returns the Record of the exchange behind w, nil when w is not
// a *Recorder.
func RecordOf(w http.ResponseWriter) *Record {
	if r, ok := w.(*Recorder); ok {
		return &r.Rec
	}
	return nil
}

// SetMethod and SetOutcome annotate the exchange behind w (no-ops when w is
// not a *Recorder).
func SetMethod(w http.ResponseWriter, method string) {
	if r, ok := w.(*Recorder); ok {
		r.Rec.Method = method
	}
}

func SetOutcome(w http.ResponseWriter, outcome string) {
	if r, ok := w.(*Recorder); ok {
		r.Rec.outcome = outcome
	}
}

type recordKey struct{}

// WithRecord returns ctx carrying rec, for what is made in the request's
// context (log lines, spans) to read.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// RecordFrom returns the Record ctx carries, nil when none.
func RecordFrom(ctx context.Context) *Record {
	rec, _ := ctx.Value(recordKey{}).(*Record)
	return rec
}
