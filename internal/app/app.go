package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Version is mcpfleet's version string.
const Version = "0.1.0"

// NewExampleServer builds the example worker's server: the demo tools and,
// with fixture "conformance", the conformance suite's fixture.
func NewExampleServer(fixtureName string, log *slog.Logger, stateKey []byte) (*mcp.Server, error) {
	if log == nil {
		log = slog.Default()
	}
	var s *mcp.Server
	if fixtureName == "conformance" {
		opts := fixture.ConformanceOptions()
		opts.Logger = log
		opts.RootsListChanged = fixture.LogRootsChanged(log)
		opts.StateKey = stateKey
		s = mcp.NewServer(fixture.ConformanceInfo, opts)
		if err := fixture.RegisterConformance(s); err != nil {
			return nil, err
		}
	} else {
		s = mcp.NewServer(protocol.Implementation{Name: "mcpfleet", Version: Version}, &mcp.ServerOptions{
			ResourceSubscriptions: true, Logger: log, RootsListChanged: fixture.LogRootsChanged(log), StateKey: stateKey,
		})
	}
	if err := fixture.RegisterDemo(s, fixture.LogObserver{Log: log}); err != nil {
		return nil, err
	}
	return s, nil
}

// Ready is called with the HTTP address once a process serves (nil-safe).
type Ready func(addr string)

// RunAllInOne runs the embedded NATS server (unless c.NATSURL is set), the
// store, one worker and one frontend in this process until ctx ends, then
// drains.
func RunAllInOne(ctx context.Context, c *Config, ready Ready) error {
	log := c.Logger()
	startPprof(c.PprofListen, log)
	var nc *nats.Conn
	var embedded *bus.Embedded
	if c.NATSURL == "" {
		e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: c.NATSListen, Logger: log})
		if err != nil {
			return err
		}
		embedded = e
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.Shutdown(sctx)
		}()
		if nc, err = e.Connect("mcpfleet"); err != nil {
			return err
		}
		if u := e.ClientURL(); u != "" {
			log.Info("embedded NATS listening", "url", u)
		}
	} else {
		var err error
		if nc, err = bus.Connect(c.NATSURL, &bus.ConnectOptions{Name: "mcpfleet", Logger: log}); err != nil {
			return err
		}
	}
	defer nc.Close()
	_ = embedded

	key, keySub, err := sharedStateKey(nc, c.StateKey, log)
	if err != nil {
		return err
	}
	defer keySub.Unsubscribe()
	srv, err := NewExampleServer(c.Fixture, log, key)
	if err != nil {
		return err
	}
	reg := newRegistry()
	w, err := worker.New(nc, srv, &worker.Options{ID: c.ID, Logger: log, Metrics: worker.NewMetrics(reg)})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close(context.Background())
	return serveFrontend(ctx, c, nc, store, log, reg, ready, func(dctx context.Context) { _ = w.Shutdown(dctx) })
}

// RunFrontend runs a frontend process until ctx ends, then drains.
func RunFrontend(ctx context.Context, c *Config, ready Ready) error {
	log := c.Logger()
	startPprof(c.PprofListen, log)
	nc, err := bus.Connect(c.NATSURL, &bus.ConnectOptions{Name: "mcpfleet-frontend", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close(context.Background())
	return serveFrontend(ctx, c, nc, store, log, newRegistry(), ready, nil)
}

// RunWorker runs a worker process until ctx ends, then drains.
func RunWorker(ctx context.Context, c *Config) error {
	log := c.Logger()
	startPprof(c.PprofListen, log)
	nc, err := bus.Connect(c.NATSURL, &bus.ConnectOptions{Name: "mcpfleet-worker", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	key, keySub, err := sharedStateKey(nc, c.StateKey, log)
	if err != nil {
		return err
	}
	defer keySub.Unsubscribe()
	srv, err := NewExampleServer(c.Fixture, log, key)
	if err != nil {
		return err
	}
	reg := newRegistry()
	w, err := worker.New(nc, srv, &worker.Options{ID: c.ID, Logger: log, Metrics: worker.NewMetrics(reg), Filter: c.Filter()})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	stopHTTP, err := serveWorkerHTTP(c, nc, reg, log)
	if err != nil {
		_ = w.Shutdown(context.Background())
		return err
	}
	defer stopHTTP()
	<-ctx.Done()
	log.Info("draining worker")
	dctx, cancel := context.WithTimeout(context.Background(), c.DrainTimeout)
	defer cancel()
	err = w.Shutdown(dctx)
	_ = nc.Drain()
	return err
}

func openStore(ctx context.Context, c *Config) (sessionstore.Store, error) {
	opts := sessionstore.Options{TTL: c.SessionTTL, MaxSessions: int(c.MaxSessions), MaxSessionBytes: c.MaxSessionBytes}
	if c.RedisURL == "" {
		return sessionstore.NewMemory(&opts)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return sessionstore.OpenRedis(octx, c.RedisURL, &sessionstore.RedisOptions{Options: opts})
}

// serveFrontend serves a frontend until ctx ends, then drains it. drainFirst,
// when set (the all-in-one's worker), is drained once the frontend stops
// accepting and before the frontend itself shuts down, so that what the
// worker finishes (tasks) still reaches the store through it.
func serveFrontend(ctx context.Context, c *Config, nc *nats.Conn, store sessionstore.Store, log *slog.Logger, reg *prometheus.Registry, ready Ready, drainFirst func(context.Context)) error {
	var sessions func() int
	if m, ok := store.(interface{ Len() int }); ok {
		sessions = m.Len
	}
	var verifier *auth.Verifier
	if c.AuthIssuer != "" {
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		v, err := auth.New(vctx, auth.Options{
			Issuer: c.AuthIssuer, Audience: c.AuthAudience, JWKSFile: c.AuthJWKSFile, JWKSURL: c.AuthJWKSURL,
			RequiredScopes: c.AuthRequiredScopes, ScopesSupported: c.AuthScopesSupported,
			AuthorizationServers: c.AuthServers, MetadataURL: c.AuthMetadataURL, Logger: log,
		})
		cancel()
		if err != nil {
			return err
		}
		verifier = v
		log.Info("authentication on", "issuer", c.AuthIssuer, "audience", c.AuthAudience)
	}
	fe, err := frontend.New(nc, frontend.Options{
		Auth:           verifier,
		MaxStringBytes: int(c.MaxStringBytes), MaxArrayLen: int(c.MaxArrayLen),
		MaxInFlightPerSession: int(c.MaxInFlightPerSession), MaxInFlightPerPrincipal: int(c.MaxInFlightPerPrincipal),
		RatePerPrincipal: float64(c.RatePerPrincipal), RateBurst: int(c.RateBurst),
		MaxSessionsPerPrincipal: int(c.MaxSessionsPerPrincipal), MaxListenPerPrincipal: int(c.MaxListenPerPrincipal),
		Metrics: frontend.NewMetrics(reg, sessions),
		ID:      c.ID, Store: store, Logger: log,
		MaxBodyBytes: c.MaxBodyBytes, BodyTimeout: c.BodyTimeout, SessionTTL: c.SessionTTL, RequestTimeout: c.RequestTimeout,
		KeepAlive: keepAlive(c.KeepAlive), AllowedHosts: c.AllowedHosts, AllowedOrigins: c.AllowedOrigins,
		MaxListen: maxListen(c.MaxListen), ListenKeepAlive: keepAlive(c.ListenKeepAlive),
	})
	if err != nil {
		return err
	}
	if err := fe.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", c.Listen, err)
	}
	var conns openConns
	hs := &http.Server{Handler: fe.Router(c.Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: conns.track}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("mcpfleet serving", "url", "http://"+ln.Addr().String()+c.Path)
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("draining frontend")
	dctx, cancel := context.WithTimeout(context.Background(), c.DrainTimeout)
	defer cancel()
	// For a moment, go on serving but close each connection after its
	// answer (and report not ready): closing a kept-alive connection, or
	// the listener, while a proxy sends a request on it would lose that
	// request (nginx does not retry a POST). Then stop accepting.
	fe.Leave()
	conns.waitNone(dctx, drainGrace(c.DrainTimeout))
	// Stop accepting at once (a proxy sends new requests to the other
	// frontends; idle keep-alive connections close) while the requests in
	// flight finish and listen streams get their final result.
	herrc := make(chan error, 1)
	go func() { herrc <- hs.Shutdown(dctx) }()
	if drainFirst != nil {
		drainFirst(dctx)
	}
	ferr := fe.Shutdown(dctx)
	herr := <-herrc
	if errors.Is(herr, http.ErrServerClosed) || errors.Is(herr, net.ErrClosed) {
		herr = nil
	}
	return errors.Join(ferr, herr)
}

// keepAlive maps the flag (0 disables) onto frontend.Options (negative
// disables, 0 means default).
func keepAlive(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// maxListen maps the flag (0 = unlimited) onto frontend.Options (negative
// = unlimited, 0 = default).
func maxListen(n int64) int {
	if n == 0 {
		return -1
	}
	return int(n)
}

// newRegistry returns a Prometheus registry with the Go runtime and process
// collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveWorkerHTTP serves a worker's /healthz, /readyz (NATS connected) and
// /metrics on --http-listen, when set. The returned func stops it.
func serveWorkerHTTP(c *Config, nc *nats.Conn, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	if c.HTTPListen == "" {
		return func() {}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !nc.IsConnected() {
			http.Error(w, "not ready: NATS is not connected", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", c.HTTPListen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", c.HTTPListen, err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	log.Info("worker http serving", "url", "http://"+ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
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
