package stdio

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"go.opentelemetry.io/otel/trace"
)

// ErrInvalidOptions is wrapped by the error Serve returns, before serving
// anything, for Options it cannot honour.
var ErrInvalidOptions = errors.New("stdio: invalid options")

// Defaults for the zero values of Options.
const (
	DefaultMaxLineBytes   = 4 << 20
	DefaultMaxInFlight    = 1024
	DefaultMaxListen      = 64
	DefaultRequestTimeout = 10 * time.Minute
	DefaultDrainTimeout   = 5 * time.Second
	DefaultStateTTL       = 10 * time.Minute
)

// Features is what the stdio transport delivers: unsolicited messages to
// the legacy session (stdout) and modern listen streams. Capabilities
// advertised by initialize and server/discover are derived from it by the
// same code as on HTTP ([mcp.Catalog.Capabilities]).
var Features = mcp.Features{Listen: true, SessionStream: true}

// Options configure Serve. The zero value is valid: a zero field means its
// default; a negative one is invalid (Serve fails with ErrInvalidOptions)
// unless its doc says what it turns off.
type Options struct {
	// Logger receives diagnostics; it must not write to the protocol
	// writer.
	// default: slog.Default()
	Logger *slog.Logger
	// MaxLineBytes caps one incoming message; a longer line is answered
	// with -32600 without being read whole.
	// default: 4 MiB (DefaultMaxLineBytes)
	MaxLineBytes int
	// MaxDepth caps JSON nesting; a deeper message is answered with
	// -32700.
	// default: protocol.DefaultMaxDepth (64)
	MaxDepth int
	// MaxInFlight caps concurrent requests (listen streams included);
	// past it a request is answered with -32603.
	// default: 1024 (DefaultMaxInFlight)
	MaxInFlight int
	// MaxListen caps open subscriptions/listen streams; past it a listen
	// is answered with -32603.
	// default: 64 (DefaultMaxListen)
	MaxListen int
	// RequestTimeout bounds one handler; a handler that runs out of time
	// is answered with -32603 "request timed out".
	// default: 10 min (DefaultRequestTimeout)
	RequestTimeout time.Duration
	// DrainTimeout is how long requests in flight at the end of the input
	// may run on before they are cancelled, and then how long Serve waits
	// for the cancelled ones. Negative means off: no drain, the requests
	// are cancelled at once (and waited for DefaultDrainTimeout).
	// default: 5 s (DefaultDrainTimeout)
	DrainTimeout time.Duration
	// StateTTL is how long a used MRTR requestState is remembered (a
	// replay within it is refused with -32602).
	// default: 10 min (DefaultStateTTL)
	StateTTL time.Duration
	// TracerProvider makes one SERVER span per request, parented on its
	// _meta.traceparent; the handler's context carries it. The no-op
	// provider (go.opentelemetry.io/otel/trace/noop) makes none: the
	// handler's context then carries the _meta trace context itself.
	// default: otel.GetTracerProvider(), the global provider
	TracerProvider trace.TracerProvider
}

// resolve returns the options with the defaults applied (nil means all
// defaults), or an error wrapping ErrInvalidOptions.
func (o *Options) resolve() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	for _, f := range []struct {
		name string
		n    int64
	}{
		{"MaxLineBytes", int64(v.MaxLineBytes)}, {"MaxDepth", int64(v.MaxDepth)}, {"MaxInFlight", int64(v.MaxInFlight)},
		{"MaxListen", int64(v.MaxListen)}, {"RequestTimeout", int64(v.RequestTimeout)}, {"StateTTL", int64(v.StateTTL)},
	} {
		if f.n < 0 {
			return v, fmt.Errorf("%w: negative %s", ErrInvalidOptions, f.name)
		}
	}
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	v.MaxLineBytes = orDefault(v.MaxLineBytes, DefaultMaxLineBytes)
	v.MaxInFlight = orDefault(v.MaxInFlight, DefaultMaxInFlight)
	v.MaxListen = orDefault(v.MaxListen, DefaultMaxListen)
	v.RequestTimeout = orDefault(v.RequestTimeout, DefaultRequestTimeout)
	v.DrainTimeout = orDefault(v.DrainTimeout, DefaultDrainTimeout)
	v.StateTTL = orDefault(v.StateTTL, DefaultStateTTL)
	return v, nil
}

// drain is how long requests in flight at the end of the input may run
// on (0 when DrainTimeout is off).
func (o *Options) drain() time.Duration { return max(o.DrainTimeout, 0) }

// cancelWait is how long Serve waits for cancelled handlers to return.
func (o *Options) cancelWait() time.Duration {
	if o.DrainTimeout < 0 {
		return DefaultDrainTimeout
	}
	return o.DrainTimeout
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
