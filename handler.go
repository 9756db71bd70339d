package mcpfleet

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

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
)

// DefaultNATSURL is the NATS server of a frontend or worker when none is
// given.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// HandlerOptions configure [NewHandler]. With Server set, the zero value
// of every other field is the all-in-one: an embedded NATS server, an
// in-process worker and an in-memory session store.
type HandlerOptions struct {
	// Server, when set, is served by a worker inside this process, beside
	// the frontend (the all-in-one). Nil: a frontend only, forwarding to
	// the workers on NATS.
	Server *mcp.Server
	// NATS is an open connection to use; the handler does not close it.
	// Nil: connect to NATSURL.
	NATS *nats.Conn
	// NATSURL is the NATS server (a comma-separated list for a cluster).
	// Empty: an embedded NATS server inside this process when Server is
	// set, else DefaultNATSURL.
	NATSURL string
	// NATSListen, with the embedded NATS server, also opens it to other
	// processes on this address (host:port). Empty: in-process only.
	NATSListen string
	// Store holds legacy sessions; the handler does not close it. Nil:
	// RedisURL.
	Store sessionstore.Store
	// RedisURL is the Redis server holding legacy sessions, subscriptions
	// and stream logs, shared by every frontend of a cluster. Empty: an
	// in-memory store, which only one frontend can use.
	RedisURL string
	// Memory sizes the in-memory store (see sessionstore.Options; zero
	// fields are its defaults). Its TTL defaults to Frontend.SessionTTL.
	Memory sessionstore.Options
	// StateKey (mcp.StateKeySize bytes) seals 2026-07-28 requestState;
	// OldStateKeys still open states sealed before a rotation. Nil: the
	// Server's own configured key; else, on the embedded NATS server, a
	// random key; else NewHandler fails with ErrNoStateKey (the other
	// workers of the cluster could not open this worker's states).
	StateKey     []byte
	OldStateKeys [][]byte
	// Frontend configures the HTTP transport: limits, timeouts,
	// allow-lists (see frontend.Options; zero fields are its defaults).
	// Its Store, Logger, Auth and Metrics are filled in when nil.
	Frontend frontend.Options
	// Auth, when set, makes the endpoint an OAuth 2.1 resource server:
	// every request needs a bearer token (see auth.Options). Nil: no
	// authentication.
	Auth *auth.Options
	// Worker configures the in-process worker (with Server; see
	// worker.Options). Its Logger and Metrics are filled in when nil, and
	// its ID defaults to Frontend.ID.
	Worker worker.Options
	// Registry receives the metrics of the frontend and worker. Nil: a
	// new registry with the Go runtime and process collectors.
	Registry *prometheus.Registry
	// Logger; nil means slog.Default().
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
// embedded ones), starts the in-process worker when opts.Server is set,
// and returns the endpoint. ctx bounds the start only. On error nothing
// is left running.
func NewHandler(ctx context.Context, opts *HandlerOptions) (h *Handler, err error) {
	if opts == nil {
		opts = &HandlerOptions{}
	}
	o := *opts
	h = &Handler{log: o.Logger, reg: o.Registry}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.reg == nil {
		h.reg = NewRegistry()
	}
	defer func() {
		if err != nil {
			h.closeAll(context.Background())
		}
	}()
	nc, embedded, err := h.connect(&o)
	if err != nil {
		return nil, err
	}
	if o.Server != nil {
		if err := installStateKey(o.Server, o.StateKey, o.OldStateKeys, !embedded); err != nil {
			return nil, err
		}
		if embedded && o.NATSListen != "" && o.StateKey == nil && !o.Server.StateKeyConfigured() {
			h.log.Warn("the embedded NATS server is open to other processes but no requestState key is set: workers joining it cannot open this one's multi-round states; set " + StateKeyEnv)
		}
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
		w, err := worker.New(nc, o.Server, &wo)
		if err != nil {
			return nil, err
		}
		if err := w.Start(ctx); err != nil {
			return nil, err
		}
		h.w = w
		h.closers = append(h.closers, func(ctx context.Context) { _ = w.Shutdown(ctx) })
	}
	store := o.Store
	if store == nil {
		if store, err = openStore(ctx, &o); err != nil {
			return nil, err
		}
		h.closers = append(h.closers, func(ctx context.Context) { _ = store.Close(ctx) })
	}
	fo := o.Frontend
	fo.Store = store
	if fo.Logger == nil {
		fo.Logger = h.log
	}
	if fo.Metrics == nil {
		var sessions func() int
		if m, ok := store.(interface{ Len() int }); ok {
			sessions = m.Len
		}
		fo.Metrics = frontend.NewMetrics(h.reg, sessions)
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
			return nil, err
		}
		fo.Auth = v
		h.log.Info("authentication on", "issuer", ao.Issuer, "audience", ao.Audience)
	}
	h.verifier = fo.Auth
	fe, err := frontend.New(nc, fo)
	if err != nil {
		return nil, err
	}
	if err := fe.Start(ctx); err != nil {
		return nil, err
	}
	h.fe = fe
	return h, nil
}

// connect returns the NATS connection to use, and whether it goes to an
// embedded server started here.
func (h *Handler) connect(o *HandlerOptions) (*nats.Conn, bool, error) {
	switch {
	case o.NATS != nil:
		return o.NATS, false, nil
	case o.NATSURL == "" && o.Server != nil:
		e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: o.NATSListen, Logger: h.log})
		if err != nil {
			return nil, false, err
		}
		h.closers = append(h.closers, func(ctx context.Context) { _ = e.Shutdown(ctx) })
		nc, err := e.Connect("mcpfleet")
		if err != nil {
			return nil, false, err
		}
		h.closers = append(h.closers, func(context.Context) { nc.Close() })
		if u := e.ClientURL(); u != "" {
			h.log.Info("embedded NATS listening", "url", u)
		}
		return nc, true, nil
	}
	url := o.NATSURL
	if url == "" {
		url = DefaultNATSURL
	}
	name := "mcpfleet-frontend"
	if o.Server != nil {
		name = "mcpfleet"
	}
	nc, err := bus.Connect(url, &bus.ConnectOptions{Name: name, Logger: h.log})
	if err != nil {
		return nil, false, err
	}
	h.closers = append(h.closers, func(context.Context) { nc.Close() })
	return nc, false, nil
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
	return sessionstore.OpenRedis(octx, o.RedisURL, &sessionstore.RedisOptions{Options: sessionstore.Options{TTL: so.TTL}})
}

// ServeHTTP serves the MCP endpoint (both protocol eras).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.fe.Handler().ServeHTTP(w, r) }

// Router returns a router serving the endpoint at path, /healthz
// (liveness), /readyz (readiness), /metrics, and with authentication the
// protected-resource metadata.
func (h *Handler) Router(path string) http.Handler {
	return h.fe.Router(path, h.Metrics())
}

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

// Shutdown drains: the in-process worker finishes its requests (and
// leaves the queue groups), the frontend refuses new exchanges, closes
// listen streams with their final result and waits for the requests in
// flight; then what NewHandler opened is closed. ctx bounds the drain.
// It is idempotent.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.once.Do(func() {
		if h.w != nil {
			// Before the frontend: what the worker finishes (tasks) still
			// reaches the store through it.
			_ = h.w.Shutdown(ctx)
		}
		h.err = h.fe.Shutdown(ctx)
		h.closeAll(ctx)
	})
	return h.err
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
// process collectors: what the binaries serve on /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

var errNoServer = errors.New("no MCP server: this program runs only the frontend role")
