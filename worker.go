package mcpfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// WorkerOptions configure [RunWorker]. The zero value connects to
// DefaultNATSURL and needs a state key (StateKey, or
// mcp.ServerOptions.StateKey). Invalid values make RunWorker fail with an
// error wrapping [ErrInvalidOptions] before it connects.
type WorkerOptions struct {
	// NATS is an open connection to use; RunWorker drains its own
	// subscriptions but does not close it. Nil: connect to NATSURL.
	// default: none (connect to NATSURL)
	NATS *nats.Conn
	// NATSURL is the NATS server (a comma-separated list for a cluster).
	// default: DefaultNATSURL (nats://127.0.0.1:4222)
	NATSURL string
	// NATSAuth holds the credentials and TLS files of the connection to
	// NATSURL (see bus.Auth; unused with NATS).
	// default: none (anonymous, or the credentials in NATSURL)
	NATSAuth bus.Auth
	// NATSPingInterval is how often the connection to NATSURL is checked
	// (see bus.ConnectOptions.PingInterval: a connection gone silent is
	// dropped and made again within 2 to 3 intervals); negative means
	// nats.go's own settings (minutes). Unused with NATS.
	// default: bus.DefaultPingInterval (5 s)
	NATSPingInterval time.Duration
	// SubjectPrefix is the first token of every bus subject (see
	// bus.ValidatePrefix): the frontends' prefix. It sets
	// Worker.Subjects, which must then be unset or the same.
	// default: bus.DefaultPrefix ("mcp")
	SubjectPrefix string
	// StateKey (mcp.StateKeySize bytes) seals 2026-07-28 requestState and
	// must be the same on every worker. Nil: the server's configured key,
	// and without one RunWorker fails with ErrNoStateKey. A key of
	// another size is invalid.
	// default: none (required unless the server has one)
	StateKey []byte
	// OldStateKeys still open states sealed before a rotation (they never
	// seal); each is mcp.StateKeySize bytes.
	// default: none
	OldStateKeys [][]byte
	// Worker configures the worker: its id, the tools, prompts and
	// resources it serves (Filter), caps and timeouts (see
	// worker.Options, which worker.New validates). Its Logger and Metrics
	// are filled in when nil.
	// default: the zero worker.Options, with this Logger and Registry
	Worker worker.Options
	// AdminListen, when set, serves /healthz, /readyz (NATS connected,
	// not draining) and /metrics on this address.
	// default: none (off)
	AdminListen string
	// ConnectTimeout is how long the first NATS connection is retried;
	// negative means off: one attempt.
	// default: DefaultConnectTimeout (1 minute)
	ConnectTimeout time.Duration
	// Registry receives the worker's metrics.
	// default: a new registry (NewRegistry)
	Registry *prometheus.Registry
	// DrainTimeout bounds the drain once ctx ends. Negative is invalid.
	// default: DefaultDrainTimeout (30 s)
	DrainTimeout time.Duration
	// Logger receives the worker's messages.
	// default: slog.Default()
	Logger *slog.Logger
	// Ready, when set, is called once the worker takes requests.
	// default: none
	Ready func()
}

// resolveWorker returns a copy of opts (nil: the zero options) with the
// defaults of its zero fields, or the error wrapping ErrInvalidOptions.
func resolveWorker(opts *WorkerOptions) (WorkerOptions, error) {
	o := WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return WorkerOptions{}, err
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	return o, nil
}

// validate checks o; the state keys are checked as they are installed,
// the embedded worker.Options by worker.New.
func (o *WorkerOptions) validate() error {
	if o.DrainTimeout < 0 {
		return fmt.Errorf("%w: DrainTimeout %v is negative", ErrInvalidOptions, o.DrainTimeout)
	}
	return applyPrefix(o.SubjectPrefix, &o.Worker.Subjects)
}

// RunWorker serves srv's tools, prompts and resources to the frontends
// over NATS until ctx ends, then drains: it leaves the queue groups
// (requests already routed to it are still served) and waits for its
// requests, within DrainTimeout. opts may be nil.
func RunWorker(ctx context.Context, srv *mcp.Server, opts *WorkerOptions) error {
	if srv == nil {
		return ErrNoServer
	}
	o, err := resolveWorker(opts)
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := installStateKey(srv, o.StateKey, o.OldStateKeys, true); err != nil {
		return err
	}
	// The admin listener first: a taken address fails before the worker
	// joins the queue groups; it answers at once (alive, not ready) while
	// the first NATS connection is retried.
	adm, err := listenAdmin(o.AdminListen)
	if err != nil {
		return err
	}
	defer adm.stop()
	reg := o.Registry
	if reg == nil {
		reg = NewRegistry()
	}
	var ready atomic.Pointer[nats.Conn]
	var draining atomic.Bool
	adm.serve(func(context.Context) error {
		nc := ready.Load()
		switch {
		case nc == nil:
			return errors.New("starting")
		case draining.Load():
			return errors.New("draining")
		case !nc.IsConnected():
			return errors.New("NATS is not connected")
		}
		return nil
	}, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), log)
	nc := o.NATS
	if nc == nil {
		url := o.NATSURL
		if url == "" {
			url = DefaultNATSURL
		}
		err := retryConnect(ctx, log, "NATS", o.ConnectTimeout, func(context.Context) error {
			var err error
			nc, err = bus.Connect(url, &bus.ConnectOptions{Name: "mcpfleet-worker", Logger: log, Auth: o.NATSAuth,
				InboxPrefix: o.Worker.Subjects.InboxPrefix("w"), PingInterval: o.NATSPingInterval})
			if errors.Is(err, bus.ErrInvalidOptions) {
				return permanent{invalidOptions(err)}
			}
			return natsRetryable(err)
		})
		if err != nil {
			return err
		}
		defer nc.Close()
	}
	if err := reg.Register(newNATSCollector(nc)); err != nil {
		log.Warn("metrics: not registered", "err", err)
	}
	wo := o.Worker
	if wo.Logger == nil {
		wo.Logger = log
	}
	if wo.Metrics == nil {
		wo.Metrics = worker.NewMetrics(reg)
	}
	w, err := worker.New(bus.NATS(nc), srv, &wo)
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	ready.Store(nc)
	if o.Ready != nil {
		o.Ready()
	}
	<-ctx.Done()
	draining.Store(true)
	log.Info("draining worker")
	dctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	err = w.Shutdown(dctx)
	if o.NATS == nil {
		// What the last handlers published leaves before the close.
		_ = nc.FlushTimeout(time.Second)
	}
	return err
}
