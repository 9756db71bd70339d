package frontend

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"go.opentelemetry.io/otel/trace"
)

// MaxIDLen caps Options.ID (it goes into SSE event ids and bus subjects).
const MaxIDLen = stream.MaxFrontendIDLen

// ErrInvalidConfig wraps every configuration error from New.
var ErrInvalidConfig = errors.New("frontend: invalid configuration")

// Options configure a Frontend. Store is required. Every other field's zero
// value means the default on its "default:" line; a negative value means
// off where the field says so and is refused (ErrInvalidConfig) where it
// does not.
type Options struct {
	// ID names the frontend on the bus (at most MaxIDLen bytes); unique per
	// cluster.
	// default: 12 random hex digits
	ID string
	// Subjects builds bus subjects.
	// default: the "mcp" prefix
	Subjects bus.Subjects
	// Store holds legacy sessions, event logs, claims and tasks.
	// default: none (required)
	Store sessionstore.Store
	// Logger receives the frontend's logs.
	// default: slog.Default()
	Logger *slog.Logger
	// MaxBodyBytes caps a POST body (413 beyond); negative is refused.
	// default: 4 MiB
	MaxBodyBytes int64
	// MaxDepth caps JSON nesting of a body (-32700 beyond); negative is
	// refused.
	// default: protocol.DefaultMaxDepth
	MaxDepth int
	// RequestTimeout bounds a request from POST to response; negative is
	// refused.
	// default: 10 minutes
	RequestTimeout time.Duration
	// WorkerTimeout is how long a request may go without any frame from its
	// worker (workers send heartbeats every second while a handler runs)
	// before the worker is presumed dead and the client gets an error;
	// negative is refused.
	// default: 4s
	WorkerTimeout time.Duration
	// KeepAlive is the interval of SSE comment frames on GET streams;
	// negative means off.
	// default: 30s
	KeepAlive time.Duration
	// StreamBuffer is the number of frames buffered per open stream; a
	// stream whose reader falls further behind is closed. Negative is
	// refused.
	// default: 256
	StreamBuffer int
	// AllowedHosts lists the Host header values accepted (host or
	// host:port, case-insensitive); "*" accepts any host.
	// default: loopback names only (localhost, 127.0.0.1, [::1]), any port
	AllowedHosts []string
	// AllowedOrigins lists accepted Origin header values
	// (scheme://host[:port]); "*" accepts any origin. Requests without
	// Origin are accepted.
	// default: loopback origins only (http or https, any port)
	AllowedOrigins []string
	// WriteTimeout bounds each write to a client stream; negative is
	// refused.
	// default: 10s
	WriteTimeout time.Duration
	// BodyTimeout bounds the reading of a POST body (408 beyond, and the
	// connection closes); negative is refused.
	// default: 10s
	BodyTimeout time.Duration
	// MaxStringBytes caps a string in a message (400 beyond); negative
	// means off.
	// default: 2 MiB
	MaxStringBytes int
	// MaxArrayLen caps the elements of an array or the members of an
	// object (400 beyond); negative means off.
	// default: 10000
	MaxArrayLen int
	// MaxInFlight caps the requests running through this frontend, with or
	// without authentication: 503 with Retry-After beyond (see
	// limits.Options.MaxInFlight). Negative: off.
	// default: 4096
	MaxInFlight int
	// MaxInFlightPerSession caps the requests a legacy session has
	// running through this frontend (429 beyond); negative means off.
	// default: 64
	MaxInFlightPerSession int
	// MaxInFlightPerPrincipal caps the requests a principal (with Auth)
	// has running through this frontend (429 beyond); negative means off.
	// default: 256
	MaxInFlightPerPrincipal int
	// RatePerPrincipal is the requests per second each principal (with
	// Auth) may make on this frontend (429 with Retry-After beyond);
	// negative means off.
	// default: 50
	RatePerPrincipal float64
	// RateBurst is the burst of RatePerPrincipal; negative means off.
	// default: 100
	RateBurst int
	// MaxSessionsPerPrincipal caps the legacy sessions a principal (with
	// Auth) holds, across the cluster (429 beyond); negative means off.
	// default: 100
	MaxSessionsPerPrincipal int
	// MaxInitializeBytes caps the params of an initialize: a session keeps
	// the client's capabilities and clientInfo for its life. -32602
	// beyond; negative means off.
	// default: 64 KiB
	MaxInitializeBytes int
	// MaxSubscriptionsPerSession caps a legacy session's resource
	// subscriptions (each is a bus subscription wherever its GET stream
	// is): -32602 beyond; negative means off.
	// default: 1000
	MaxSubscriptionsPerSession int
	// SessionTTL is the store's idle lifetime of a session: a principal's
	// session count forgets a session that long after its creation.
	// Negative is refused.
	// default: 30 minutes
	SessionTTL time.Duration
	// MaxListenPerPrincipal caps a principal's open listen streams on this
	// frontend (with Auth; 429 beyond); negative means off.
	// default: 32
	MaxListenPerPrincipal int
	// Auth, when set, requires a bearer token on every MCP request (OAuth
	// 2.1 resource server) and binds sessions, listen streams, tasks and
	// MRTR state to the token's principal.
	// default: nil, no authentication (the loopback default)
	Auth *auth.Verifier
	// SSERetry is the reconnection delay (SSE retry:) announced in the
	// priming event of legacy streams; negative omits it.
	// default: 1s
	SSERetry time.Duration
	// MaxListen caps the subscriptions/listen streams open on this
	// frontend (HTTP 503 beyond); negative means no cap.
	// default: 1000
	MaxListen int
	// StateTTL is how long a used MRTR requestState stays refused; it must
	// be at least the workers' mcp.ServerOptions.StateTTL. Negative is
	// refused.
	// default: 15 minutes
	StateTTL time.Duration
	// Metrics receives the frontend's Prometheus metrics.
	// default: nil, no metrics recorded
	Metrics *Metrics
	// ListenKeepAlive is the interval of SSE comments on listen streams,
	// which also detect a dead peer and free its slot; negative means off.
	// default: 15s
	ListenKeepAlive time.Duration
	// NoAccessLog turns the access log off. The access log is one line
	// per exchange on the MCP endpoint, written on Logger at level Info
	// with the message "access" once the exchange is over (a stream: when
	// it closes, with its whole duration); its fields are identifiers and
	// figures, never message contents nor credentials (see accesslog.go).
	// default: false, the access log is on
	NoAccessLog bool
	// TracerProvider makes the spans: one SERVER span per exchange on the
	// MCP endpoint and a PRODUCER span per request published to the
	// workers. The no-op provider (go.opentelemetry.io/otel/trace/noop)
	// makes none: the caller's trace context (traceparent header or
	// _meta) is still passed on to the worker.
	// default: otel.GetTracerProvider(), the global provider
	TracerProvider trace.TracerProvider
}

// resolve validates o and fills in the defaults of zero fields (fields
// consumed by pkg/limits keep their zero and negative values: it applies
// the same rule).
func (o *Options) resolve() error {
	if o.Store == nil {
		return fmt.Errorf("%w: a session store is required", ErrInvalidConfig)
	}
	if o.MaxBodyBytes < 0 || o.MaxDepth < 0 || o.RequestTimeout < 0 || o.WorkerTimeout < 0 || o.StreamBuffer < 0 || o.WriteTimeout < 0 || o.BodyTimeout < 0 {
		return fmt.Errorf("%w: negative limits are not allowed", ErrInvalidConfig)
	}
	if o.SessionTTL < 0 || o.StateTTL < 0 {
		return fmt.Errorf("%w: a negative SessionTTL or StateTTL is not allowed", ErrInvalidConfig)
	}
	if len(o.ID) > MaxIDLen {
		return fmt.Errorf("%w: the id is %d bytes long, over %d", ErrInvalidConfig, len(o.ID), MaxIDLen)
	}
	if o.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.ID = hex.EncodeToString(b[:])
	}
	setDefault(&o.MaxBodyBytes, 4<<20)
	setDefault(&o.RequestTimeout, 10*time.Minute)
	setDefault(&o.WorkerTimeout, 4*time.Second)
	setDefault(&o.KeepAlive, 30*time.Second)
	setDefault(&o.StreamBuffer, 256)
	setDefault(&o.WriteTimeout, 10*time.Second)
	setDefault(&o.BodyTimeout, 10*time.Second)
	setDefault(&o.SSERetry, time.Second)
	setDefault(&o.StateTTL, 15*time.Minute)
	setDefault(&o.ListenKeepAlive, 15*time.Second)
	setDefault(&o.SessionTTL, 30*time.Minute)
	setDefault(&o.MaxListen, 1000)
	setDefault(&o.MaxListenPerPrincipal, 32)
	setDefault(&o.MaxInitializeBytes, 64<<10)
	return nil
}

// setDefault sets *v to def when it is zero; a negative value (off) stays.
func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}
