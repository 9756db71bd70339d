package hub

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
)

// Server serves open listen streams: the acknowledgement, then the
// stream's messages and keepalives, and its final result on shutdown or a lost bus.
type Server interface {
	// Adopt serves ls, an open listen stream whose acknowledgement has not
	// been written, on the response w. It returns true when it served the
	// stream (or the stream ended trying): ls is then the server's, and
	// ended, when not nil, is called once the stream is over (before
	// Adopt returns, or later, from the Hub's goroutines, for a stream it
	// took over). It returns false, having touched neither w nor ls and
	// without calling ended, when it cannot serve this connection.
	Adopt(w http.ResponseWriter, r *http.Request, ls *listen.ListenStream, ended func()) bool
	// Stop ends the streams being served; it is idempotent.
	Stop()
}

var (
	_ Server = (*Hub)(nil)
	_ Server = (*Plain)(nil)
)

// ErrInvalidOptions wraps the validation errors of New and NewPlain.
var ErrInvalidOptions = errors.New("hub: invalid options")

// Options configure a Hub or a Plain server.
type Options struct {
	// WriteTimeout bounds a write to a stream: a client that leaves data
	// unread longer is dropped as slow. Negative is an error.
	// default: 10 s
	WriteTimeout time.Duration
	// KeepAlive is the interval of the SSE comments that also detect a
	// dead peer; negative: off.
	// default: 15 s
	KeepAlive time.Duration
	// Logger receives warnings.
	// default: slog.Default()
	Logger *slog.Logger
	// Metrics counts open and dropped streams (kind "listen").
	// default: none (nothing recorded)
	Metrics *metrics.Metrics
	// Active counts the Hub's adopted streams (Add at Adopt, Done at
	// their end), for the owner to wait for their final results. Plain
	// streams are their handlers' and not counted.
	// default: a counter of the hub's own
	Active *sync.WaitGroup
}

func (o *Options) resolve() error {
	if o.WriteTimeout < 0 {
		return fmt.Errorf("%w: negative WriteTimeout", ErrInvalidOptions)
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Active == nil {
		o.Active = &sync.WaitGroup{}
	}
	return nil
}

// Plain serves each listen stream in its handler, the net/http way: a
// goroutine and net/http's buffers per stream for its whole life. It
// serves any connection (HTTP/2, TLS). Safe for concurrent use.
type Plain struct {
	opts Options
	quit chan struct{}
	once sync.Once
}

// NewPlain returns a Plain server.
func NewPlain(opts Options) (*Plain, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	return &Plain{opts: opts, quit: make(chan struct{})}, nil
}

// Adopt serves ls until it ends, the client goes or Stop, then calls
// ended; it always returns true.
func (p *Plain) Adopt(w http.ResponseWriter, r *http.Request, ls *listen.ListenStream, ended func()) bool {
	defer callEnded(ended)
	defer ls.Close()
	defer p.opts.Metrics.StreamOpened("listen")()
	sse := stream.StartSSE(w, p.opts.WriteTimeout, nil)
	if err := sse.Event("", ls.Ack()); err != nil {
		return true
	}
	l := &stream.Loop[[]byte]{
		Events: ls.C(),
		OnEvent: func(m []byte) bool {
			if err := sse.Event("", m); err != nil {
				if stream.SlowWrite(err) || ls.Reason() == listen.ReasonSlow {
					p.opts.Metrics.DroppedStream("listen")
				}
				return false
			}
			return true
		},
		KeepAlive: p.opts.KeepAlive,
		// A dead peer fails this write (within WriteTimeout) and frees
		// the slot.
		OnKeepAlive: func() bool { return sse.Comment("keepalive") == nil },
		Ended:       ls.Done(),
		OnEnded: func() {
			switch ls.Reason() {
			case listen.ReasonShutdown:
				_ = sse.Event("", ls.Final())
			case listen.ReasonBusLost:
				// What arrived before the loss first, then the result:
				// the client listens again (elsewhere).
				for drained := false; !drained; {
					select {
					case m := <-ls.C():
						drained = sse.Event("", m) != nil
					default:
						drained = true
					}
				}
				_ = sse.Event("", ls.Final())
			case listen.ReasonSlow:
				p.opts.Metrics.DroppedStream("listen")
			}
		},
		Stop:   p.quit,
		OnStop: func() { _ = sse.Event("", ls.Final()) },
		Gone:   r.Context().Done(),
	}
	l.Run()
	return true
}

// Stop makes every stream write its final result and end; it does not
// wait for their handlers.
func (p *Plain) Stop() { p.once.Do(func() { close(p.quit) }) }

// callEnded calls ended, when set.
func callEnded(ended func()) {
	if ended != nil {
		ended()
	}
}
