package mcpfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of ServeOptions.
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultPath         = "/mcp"
	DefaultDrainTimeout = 30 * time.Second
	// DefaultDrainDelay is the frontend role's --drain-delay: time for a
	// load balancer (Kubernetes endpoints) to see the readiness change.
	DefaultDrainDelay = 5 * time.Second
	// DefaultServeAdminListen is the serve role's --admin-listen: on
	// loopback, on the port the admin listeners of the shipped deployments
	// use (compose, Helm), which clashes with neither the MCP port (8080)
	// nor the ports the cluster scripts and the compose file publish.
	DefaultServeAdminListen = "127.0.0.1:9090"
)

// ServeOptions configure [RunServe] and [RunFrontend]: the endpoint (see
// HandlerOptions) and its HTTP server. Invalid values make the Run
// function fail with an error wrapping [ErrInvalidOptions] before it
// listens.
type ServeOptions struct {
	// HandlerOptions configure the endpoint (see [NewHandler]).
	// default: the zero HandlerOptions (the all-in-one with a server)
	HandlerOptions
	// Listen is the HTTP address (host:port).
	// default: DefaultListen (127.0.0.1:8080, loopback)
	Listen string
	// Path is the MCP endpoint's path; it must start with "/".
	// default: DefaultPath (/mcp)
	Path string
	// AdminListen, when set, serves /healthz (liveness), /readyz
	// (readiness: NATS and the store reachable, not draining) and
	// /metrics on this address, kept off the load balancer. The MCP
	// listener never serves them: empty means none at all. (The serve
	// role's --admin-listen is DefaultServeAdminListen.)
	// default: none (no admin endpoints)
	AdminListen string
	// DrainDelay is the lame-duck period of a drain: once ctx ends, the
	// server reports not ready and goes on serving (each connection closed
	// after its answer) for this long, so a load balancer (Kubernetes
	// endpoints) stops sending it requests; then it stops accepting.
	// Zero means a short grace (a tenth of DrainTimeout, at most a
	// second) that ends as soon as no connection is open. Negative is
	// invalid. (The frontend role's --drain-delay is DefaultDrainDelay.)
	// default: the short grace
	DrainDelay time.Duration
	// DrainTimeout bounds the drain once ctx ends (after DrainDelay).
	// Negative is invalid.
	// default: DefaultDrainTimeout (30 s)
	DrainTimeout time.Duration
	// Ready, when set, is called with the listening address once the
	// server accepts connections.
	// default: none
	Ready func(addr string)
}

// validate checks the options of the HTTP server itself (NewHandler
// checks the embedded HandlerOptions).
func (o *ServeOptions) validate() error {
	var errs []error
	if o.Path != "" && !strings.HasPrefix(o.Path, "/") {
		errs = append(errs, fmt.Errorf("%w: Path %q must start with /", ErrInvalidOptions, o.Path))
	}
	if o.DrainDelay < 0 {
		errs = append(errs, fmt.Errorf("%w: DrainDelay %v is negative", ErrInvalidOptions, o.DrainDelay))
	}
	if o.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: DrainTimeout %v is negative", ErrInvalidOptions, o.DrainTimeout))
	}
	return errors.Join(errs...)
}

// RunServe runs the all-in-one until ctx ends, then drains: srv's
// handlers in an in-process worker behind the HTTP endpoint, on an
// in-process bus (an embedded NATS server with NATSListen) and an
// in-memory session store unless opts name external ones. opts may be nil.
func RunServe(ctx context.Context, srv *mcp.Server, opts *ServeOptions) error {
	if srv == nil {
		return ErrNoServer
	}
	return runHTTP(ctx, srv, opts)
}

// RunFrontend runs an HTTP frontend until ctx ends, then drains: it holds
// the client connections and streams and forwards every request over
// NATS to the workers. Run any number behind a load balancer with no
// affinity, sharing one Redis (opts.RedisURL; empty means an in-memory
// store, which only a single frontend can use). opts may be nil.
func RunFrontend(ctx context.Context, opts *ServeOptions) error {
	return runHTTP(ctx, nil, opts)
}

// resolveServe returns a copy of opts (nil: the zero options) with the
// defaults of its zero fields, or the error wrapping ErrInvalidOptions.
func resolveServe(opts *ServeOptions) (ServeOptions, error) {
	o := ServeOptions{}
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return ServeOptions{}, err
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	return o, nil
}

func runHTTP(ctx context.Context, srv *mcp.Server, opts *ServeOptions) error {
	o, err := resolveServe(opts)
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if srv == nil && o.RedisURL == "" && o.Store == nil && o.Frontend.Store == nil {
		log.Warn("this frontend keeps sessions in its own memory: other frontends cannot serve them; set a Redis URL for a cluster")
	}
	// Listen first: a taken address fails before anything joins the bus.
	adm, err := listenAdmin(o.AdminListen)
	if err != nil {
		return err
	}
	defer adm.stop() // last: probes see the whole drain
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	// The admin endpoints answer at once, while the first connections
	// are retried: alive, not ready.
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	var started atomic.Pointer[Handler]
	adm.serve(func(ctx context.Context) error {
		if h := started.Load(); h != nil {
			return h.Ready(ctx)
		}
		return errors.New("starting")
	}, promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}), log)
	h, err := NewHandler(ctx, srv, &o.HandlerOptions)
	if err != nil {
		_ = ln.Close()
		return err
	}
	started.Store(h)
	router := h.Router(o.Path) // the MCP endpoint only: health and metrics are the admin listener's
	var conns openConns
	hs := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: conns.track}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	h.log.Info("mcpfleet serving", "url", "http://"+ln.Addr().String()+o.Path)
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	h.log.Info("draining frontend", "drain_delay", o.DrainDelay, "drain_timeout", o.DrainTimeout)
	if serveErr == nil {
		// For a moment, go on serving but close each connection after its
		// answer (and report not ready): closing a kept-alive connection,
		// or the listener, while a proxy sends a request on it would lose
		// that request (nginx does not retry a POST). Then stop accepting.
		h.Leave()
		if o.DrainDelay > 0 {
			lameDuck(o.DrainDelay)
		} else {
			gctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
			conns.waitNone(gctx, drainGrace(o.DrainTimeout))
			cancel()
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	// Stop accepting at once (a proxy sends new requests to the other
	// frontends; idle keep-alive connections close) while the requests in
	// flight finish and listen streams get their final result.
	herrc := make(chan error, 1)
	go func() { herrc <- hs.Shutdown(dctx) }()
	ferr := h.Shutdown(dctx)
	herr := <-herrc
	if herr != nil {
		_ = hs.Close() // the drain's time is up: no handler outlives RunServe
	}
	if errors.Is(herr, http.ErrServerClosed) || errors.Is(herr, net.ErrClosed) {
		herr = nil
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, ferr, herr)
}

// lameDuck waits out the drain delay: new connections are still taken
// (a load balancer may send them until it sees the readiness change), so
// it does not end when none is open.
func lameDuck(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}

// drainGrace is how long a draining frontend keeps answering on its open
// connections (each closed after its answer) before it closes the idle
// ones: a tenth of the drain timeout, at most a second.
func drainGrace(timeout time.Duration) time.Duration {
	return min(timeout/10, time.Second)
}

// openConns counts an http.Server's connections that are open and not
// taken over (hijacked listen streams belong to the hub).
type openConns struct{ n atomic.Int64 }

func (o *openConns) track(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		o.n.Add(1)
	case http.StateClosed, http.StateHijacked:
		o.n.Add(-1)
	}
}

// waitNone returns once no connection is open, after at most grace, or
// when ctx ends: a drain with nothing to close after each answer does not
// wait.
func (o *openConns) waitNone(ctx context.Context, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for o.n.Load() > 0 {
		select {
		case <-t.C:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
