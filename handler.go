package mcpfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// DefaultNATSURL is the NATS server of a frontend or worker when none is
// given.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// HandlerOptions configure [NewHandler]. With a server, the zero value is
// the all-in-one: an in-process bus (no NATS server; bus.Local), an
// in-process worker and an in-memory session store. Invalid values make NewHandler fail with an
// error wrapping [ErrInvalidOptions] before anything connects.
type HandlerOptions struct {
	// NATS is an open connection to use; the handler does not close it.
	// Nil: connect to NATSURL.
	// default: none (connect to NATSURL)
	NATS *nats.Conn
	// NATSURL is the NATS server (a comma-separated list for a cluster).
	// Empty, when there is a server to serve: a bus inside this process,
	// the in-process bus (bus.Local) or, with NATSListen, an embedded NATS
	// server; else DefaultNATSURL.
	// default: in-process with a server, else DefaultNATSURL (nats://127.0.0.1:4222)
	NATSURL string
	// NATSListen, with a server and no NATSURL, runs an embedded NATS
	// server instead of the in-process bus and opens it to other
	// processes (workers, frontends) on this address (host:port). Empty:
	// the in-process bus, which no other process can join.
	// default: none (the in-process bus)
	NATSListen string
	// NATSAuth holds the credentials and TLS files of the connection to
	// NATSURL (see bus.Auth; unused with NATS or the embedded server).
	// default: none (anonymous, or the credentials in NATSURL)
	NATSAuth bus.Auth
	// NATSPingInterval is how often the connection to NATSURL is checked
	// (see bus.ConnectOptions.PingInterval: a connection gone silent is
	// dropped and made again within 2 to 3 intervals); negative means
	// nats.go's own settings (minutes). Unused with NATS or the embedded
	// server.
	// default: bus.DefaultPingInterval (5 s)
	NATSPingInterval time.Duration
	// SubjectPrefix is the first token of every bus subject (see
	// bus.ValidatePrefix), so deployments sharing one NATS stay apart;
	// it sets Frontend.Subjects and Worker.Subjects, which must then be
	// unset or the same.
	// default: bus.DefaultPrefix ("mcp")
	SubjectPrefix string
	// Store holds legacy sessions; the handler does not close it. Nil:
	// Frontend.Store, else RedisURL.
	// default: none (Frontend.Store, else RedisURL)
	Store sessionstore.Store
	// RedisURL is the Redis server holding legacy sessions, subscriptions
	// and stream logs, shared by every frontend of a cluster. Empty: an
	// in-memory store, which only one frontend can use.
	// default: none (the in-memory store)
	RedisURL string
	// RedisMode says what RedisURL names: one server, a Redis Cluster's
	// seed nodes or the sentinels of a master (see sessionstore.RedisMode
	// for each form). An invalid mode, or a URL not of its form, makes
	// NewHandler fail at once with an error wrapping
	// sessionstore.ErrInvalidConfig (no retry).
	// default: sessionstore.RedisSingle
	RedisMode sessionstore.RedisMode
	// RedisWaitReplicas, when positive, makes every write to Redis wait
	// until that many replicas have it, for at most RedisWaitTimeout, and
	// fail otherwise (see sessionstore.RedisOptions.WaitReplicas): an
	// acknowledged write then survives a failover.
	// default: 0 (off: replication is asynchronous)
	RedisWaitReplicas int
	// RedisWaitTimeout bounds each write's wait for RedisWaitReplicas.
	// default: sessionstore.DefaultWaitTimeout (1 second)
	RedisWaitTimeout time.Duration
	// ConnectTimeout is how long the first connection to NATS and to
	// Redis is retried (a frontend started beside them comes up once they
	// do); negative means off: one attempt.
	// default: DefaultConnectTimeout (1 minute)
	ConnectTimeout time.Duration
	// Memory sizes the in-memory store (see sessionstore.Options, which
	// sessionstore validates; zero fields are its defaults). Its TTL
	// defaults to Frontend.SessionTTL. Its TTL, MaxStreamsPerSession and
	// EndedStreamGrace apply to the Redis store too.
	// default: the zero sessionstore.Options, TTL Frontend.SessionTTL
	Memory sessionstore.Options
	// StateKey (mcp.StateKeySize bytes) seals 2026-07-28 requestState.
	// Nil: the server's own configured key; else, on a bus inside this
	// process (in-process or embedded NATS), a random key; else NewHandler fails with ErrNoStateKey (the
	// other workers of the cluster could not open this worker's states).
	// A key of another size is invalid.
	// default: the server's key, else random on a bus inside this process, else required
	StateKey []byte
	// OldStateKeys still open states sealed before a rotation (with
	// StateKey only; they never seal).
	// default: none
	OldStateKeys [][]byte
	// Frontend configures the HTTP transport: limits, timeouts,
	// allow-lists (see frontend.Options, which frontend.New validates;
	// zero fields are its defaults). Its Store, Logger, Auth and Metrics
	// are filled in when nil.
	// default: the zero frontend.Options
	Frontend frontend.Options
	// Auth, when set, makes the endpoint an OAuth 2.1 resource server:
	// every request needs a bearer token (see auth.Options, which auth.New
	// validates).
	// default: none (no authentication)
	Auth *auth.Options
	// Worker configures the in-process worker (with a server; see
	// worker.Options). Its Logger and Metrics are filled in when nil, and
	// its ID defaults to Frontend.ID.
	// default: the zero worker.Options
	Worker worker.Options
	// Registry receives the metrics of the frontend and worker, and is
	// what Metrics serves; one registry per Handler (a second would
	// register the same metrics twice).
	// default: a new registry with the Go runtime and process collectors (NewRegistry)
	Registry *prometheus.Registry
	// Logger receives the handler's messages.
	// default: slog.Default()
	Logger *slog.Logger
}

// Handler is a running MCP endpoint: a frontend (and, with a Server, its
// worker) on NATS, serving the MCP protocol as an http.Handler. Mount it
// at any path of any router; it does not look at the path. Stop it with
// [Handler.Shutdown].
type Handler struct {
	fe       *frontend.Frontend
	w        *worker.Worker // nil without a Server
	reg      *prometheus.Registry
	verifier *auth.Verifier
	log      *slog.Logger
	closers  []func(context.Context) // what NewHandler opened, in the order to close
	once     sync.Once
	err      error
}

// NewHandler connects to NATS and the session store (or starts the
// embedded ones), starts an in-process worker serving srv when srv is not
// nil (the all-in-one; nil: a frontend for the workers on NATS), and
// returns the endpoint. ctx bounds the start only: when it ends before
// the endpoint is up, NewHandler returns ctx.Err() (or, while a
// connection is retried, an error joining it). On error nothing is left
// running. opts may be nil.
func NewHandler(ctx context.Context, srv *mcp.Server, opts *HandlerOptions) (*Handler, error) {
	o := HandlerOptions{}
	if opts != nil {
		o = *opts
	}
	h := &Handler{log: o.Logger, reg: o.Registry}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.reg == nil {
		h.reg = NewRegistry()
	}
	if err := h.start(ctx, srv, &o); err != nil {
		h.closeAll(ctx)
		return nil, err
	}
	return h, nil
}

// start does NewHandler's work; what it opened is in h.closers.
func (h *Handler) start(ctx context.Context, srv *mcp.Server, o *HandlerOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := applyPrefix(o.SubjectPrefix, &o.Frontend.Subjects, &o.Worker.Subjects); err != nil {
		return err
	}
	embedded := o.NATS == nil && o.NATSURL == "" && srv != nil
	if srv != nil {
		// Before anything connects: a worker that cannot share its key
		// must not join the queue groups at all.
		if err := installStateKey(srv, o.StateKey, o.OldStateKeys, !embedded); err != nil {
			return err
		}
		if embedded && o.NATSListen != "" && o.StateKey == nil && !srv.StateKeyConfigured() {
			h.log.Warn("the embedded NATS server is open to other processes but no requestState key is set: workers joining it cannot open this one's multi-round states; set " + StateKeyEnv)
		}
	}
	nc, err := h.connect(ctx, o, srv != nil, embedded)
	if err != nil {
		return err
	}
	if n := nc.NATSConn(); n != nil { // the in-process bus has no NATS statistics
		h.register(newNATSCollector(n))
	}
	fo := o.Frontend
	if o.Store != nil {
		fo.Store = o.Store
	}
	if fo.Store == nil {
		err := retryConnect(ctx, h.log, "the session store", o.ConnectTimeout, func(ctx context.Context) error {
			var err error
			fo.Store, err = openStore(ctx, o)
			if errors.Is(err, sessionstore.ErrInvalidConfig) {
				return permanent{err}
			}
			return err
		})
		if err != nil {
			return err
		}
		store := fo.Store
		h.closers = append(h.closers, func(ctx context.Context) { _ = store.Close(ctx) })
	}
	if fo.Logger == nil {
		fo.Logger = h.log
	}
	if p, ok := fo.Store.(interface{ PoolStats() *redis.PoolStats }); ok {
		h.register(newRedisPoolCollector(p.PoolStats))
	}
	if fo.Metrics == nil {
		counter, _ := fo.Store.(sessionstore.Counter)
		fo.Metrics = frontend.NewMetrics(h.reg, counter)
	}
	if fo.Auth == nil && o.Auth != nil {
		ao := *o.Auth
		if ao.Logger == nil {
			ao.Logger = h.log
		}
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		v, err := auth.New(vctx, ao)
		cancel()
		if err != nil {
			return err
		}
		fo.Auth = v
		h.closers = append(h.closers, func(ctx context.Context) { _ = v.Close(ctx) })
		h.log.Info("authentication on", "issuer", ao.Issuer, "audience", ao.Audience)
	}
	h.verifier = fo.Auth
	if err := ctx.Err(); err != nil {
		return err
	}
	fe, err := frontend.New(nc, fo)
	if err != nil {
		return err
	}
	if srv != nil {
		// The worker starts once nothing else can fail but the frontend's
		// subscriptions, and before them: the frontend then finds its pool
		// at once.
		wo := o.Worker
		if wo.ID == "" {
			wo.ID = o.Frontend.ID
		}
		if wo.Logger == nil {
			wo.Logger = h.log
		}
		if wo.Metrics == nil {
			wo.Metrics = worker.NewMetrics(h.reg)
		}
		w, err := worker.New(nc, srv, &wo)
		if err != nil {
			return err
		}
		if err := w.Start(ctx); err != nil {
			return err
		}
		h.w = w
		h.closers = append(h.closers, func(ctx context.Context) { _ = w.Shutdown(ctx) })
	}
	if err := fe.Start(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		// ctx ended while the frontend subscribed: it stops here, what
		// else started is closed by NewHandler.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = fe.Shutdown(sctx)
		return err
	}
	h.fe = fe
	return nil
}

// connect returns the bus to use: o.NATS; for the all-in-one (embedded)
// that no other process can join (no NATSListen), an in-process bus
// (bus.Local: no NATS server at all); with NATSListen, an embedded NATS
// server's connection; else a connection to o.NATSURL.
func (h *Handler) connect(ctx context.Context, o *HandlerOptions, withWorker, embedded bool) (bus.Conn, error) {
	switch {
	case o.NATS != nil:
		return bus.NATS(o.NATS), nil
	case embedded && o.NATSListen == "":
		l := bus.NewLocal(h.log)
		h.closers = append(h.closers, func(context.Context) { l.Close() })
		return l, nil
	case embedded:
		e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: o.NATSListen, Logger: h.log})
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, func(ctx context.Context) { _ = e.Shutdown(ctx) })
		nc, err := e.Connect("mcpfleet")
		if err != nil {
			return nil, err
		}
		h.closers = append(h.closers, func(context.Context) { nc.Close() })
		if u := e.ClientURL(); u != "" {
			h.log.Info("embedded NATS listening", "url", u)
		}
		return bus.NATS(nc), nil
	}
	if o.NATSListen != "" {
		h.log.Warn("--nats-listen applies to the embedded NATS server only; it is ignored with an external one")
	}
	url := o.NATSURL
	if url == "" {
		url = DefaultNATSURL
	}
	name := "mcpfleet-frontend"
	if withWorker {
		name = "mcpfleet"
	}
	var nc *nats.Conn
	err := retryConnect(ctx, h.log, "NATS", o.ConnectTimeout, func(context.Context) error {
		var err error
		nc, err = bus.Connect(url, &bus.ConnectOptions{Name: name, Logger: h.log, Auth: o.NATSAuth,
			InboxPrefix: o.Frontend.Subjects.InboxPrefix("fe"), PingInterval: o.NATSPingInterval})
		if errors.Is(err, bus.ErrInvalidOptions) {
			return permanent{invalidOptions(err)}
		}
		return natsRetryable(err)
	})
	if err != nil {
		return nil, err
	}
	h.closers = append(h.closers, func(context.Context) { nc.Close() })
	return bus.NATS(nc), nil
}

// applyPrefix sets every subjects' prefix to prefix (when set; one
// already set must be the same) and checks them.
func applyPrefix(prefix string, subjects ...*bus.Subjects) error {
	for _, s := range subjects {
		switch {
		case prefix == "":
		case s.Prefix == "":
			s.Prefix = prefix
		case s.Prefix != prefix:
			return fmt.Errorf("%w: SubjectPrefix %q and a Subjects.Prefix %q differ", ErrInvalidOptions, prefix, s.Prefix)
		}
		if err := s.Validate(); err != nil {
			return invalidOptions(err)
		}
	}
	return nil
}

// openStore opens the session store of o: Redis at o.RedisURL, or the
// in-memory store.
func openStore(ctx context.Context, o *HandlerOptions) (sessionstore.Store, error) {
	so := o.Memory
	if so.TTL == 0 {
		so.TTL = o.Frontend.SessionTTL
	}
	if o.RedisURL == "" {
		return sessionstore.NewMemory(&so)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return sessionstore.OpenRedis(octx, o.RedisURL, &sessionstore.RedisOptions{Options: sessionstore.Options{
		TTL: so.TTL, MaxStreamsPerSession: so.MaxStreamsPerSession, EndedStreamGrace: so.EndedStreamGrace},
		Mode: o.RedisMode, WaitReplicas: o.RedisWaitReplicas, WaitTimeout: o.RedisWaitTimeout})
}

// ServeHTTP serves the MCP endpoint (both protocol eras).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.fe.Handler().ServeHTTP(w, r) }

// Router returns a router serving the endpoint at path and, with
// authentication, the protected-resource metadata: what a load balancer
// exposes, and nothing else. Serve Admin apart.
func (h *Handler) Router(path string) http.Handler {
	return h.fe.Router(path)
}

// Admin serves /healthz (liveness), /readyz (readiness: Ready) and
// /metrics (Metrics): mount it on an address of its own, off the load
// balancer, never beside the MCP endpoint.
func (h *Handler) Admin() http.Handler { return httpx.AdminMux(h.Ready, h.Metrics()) }

// Metrics serves the Prometheus metrics of the frontend and worker.
func (h *Handler) Metrics() http.Handler { return promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}) }

// AuthMetadata serves the OAuth protected-resource metadata (RFC 9728)
// that the 401 answers point clients to; mount it at
// auth.MetadataPath (and auth.MetadataPath + the endpoint's path). Nil
// without authentication.
func (h *Handler) AuthMetadata() http.Handler {
	if h.verifier == nil {
		return nil
	}
	return http.HandlerFunc(h.verifier.Metadata)
}

// Ready reports whether the endpoint can serve: not draining, NATS
// connected, the session store reachable.
func (h *Handler) Ready(ctx context.Context) error { return h.fe.Ready(ctx) }

// Leave starts a drain without refusing anything yet: answers close
// their connection and Ready fails, so a load balancer moves away. Call
// it before stopping the HTTP server, then Shutdown.
func (h *Handler) Leave() { h.fe.Leave() }

// Shutdown drains: the in-process worker leaves the queue groups and
// finishes its requests, the frontend refuses new exchanges, closes
// listen streams with their final result and waits for the requests in
// flight; then what NewHandler opened is closed. ctx bounds the drain;
// the error says what did not finish within it. It is idempotent.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.once.Do(func() {
		var werr error
		if h.w != nil {
			// Before the frontend: what the worker finishes (tasks) still
			// reaches the store through it.
			if werr = h.w.Shutdown(ctx); werr != nil {
				werr = fmt.Errorf("draining the worker: %w", werr)
			}
		}
		ferr := h.fe.Shutdown(ctx)
		if ferr != nil {
			ferr = fmt.Errorf("draining the frontend: %w", ferr)
		}
		h.err = errors.Join(werr, ferr)
		h.closeAll(ctx)
	})
	return h.err
}

// register adds c to the handler's registry; a registry that has one
// already (a Registry given to two handlers) keeps its own.
func (h *Handler) register(c prometheus.Collector) {
	if err := h.reg.Register(c); err != nil {
		h.log.Warn("metrics: not registered", "err", err)
	}
}

// closeAll closes what NewHandler opened, last opened first.
func (h *Handler) closeAll(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i](cctx)
	}
	h.closers = nil
}

// NewRegistry returns a Prometheus registry with the Go runtime and
// process collectors and mcpfleet_build_info: what the binaries serve on
// /metrics (NewHandler and RunWorker add the NATS connection's
// statistics, and the Redis store's pool, to the registry they are
// given).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	return reg
}

// ErrNoServer is returned by the functions that run handlers when they
// are given no server.
var ErrNoServer = errors.New("mcpfleet: no MCP server to serve")
