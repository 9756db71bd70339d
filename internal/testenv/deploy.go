package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// Cluster is a multi-process deployment: a nats-server, a redis-server,
// frontends and workers, each a separate process.
type Cluster struct {
	// ProxyURL is nginx's MCP endpoint (ClusterOptions.Nginx).
	ProxyURL  string
	NATS      *Proc
	NATSURL   string
	Redis     *Proc // set when ClusterOptions.Persistent
	RedisURL  string
	Frontends []*Proc
	URLs      []string
	Workers   []*Proc
}

// ClusterOptions shape StartCluster. Zero values mean 2 frontends, 1
// worker, the conformance fixture.
type ClusterOptions struct {
	Frontends    int
	Workers      int
	NoFixture    bool
	FrontendArgs []string
	WorkerArgs   []string
	// Persistent runs a redis-server with append-only persistence that the
	// test can restart (Cluster.Redis); otherwise a throwaway one.
	Persistent bool
	// RedisURL, when set, is the frontends' Redis instead of a
	// redis-server of the cluster's own (Persistent is then ignored), and
	// RedisMode its --redis-mode: a RedisCluster's or RedisSentinel's URL
	// with "cluster" or "sentinel", say.
	RedisURL, RedisMode string
	// WorkerCommand, when set, runs each worker as this command (a binary
	// and its first arguments, e.g. an example's binary and "worker")
	// instead of the worker binary with the conformance fixture.
	WorkerCommand []string
	// Nginx puts nginx (round robin, no stickiness, SSE-safe: the settings
	// of scripts/cluster.sh) in front of the frontends; its URL is
	// Cluster.ProxyURL.
	Nginx bool
	// FrontendEnv and WorkerEnv ("KEY=value" entries) are added to the
	// frontends' and the workers' environment (the OTEL_* variables of a
	// tracing test, say).
	FrontendEnv, WorkerEnv []string
}

// StartCluster starts a real multi-process cluster.
func StartCluster(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	if opts.Frontends == 0 {
		opts.Frontends = 2
	}
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	c := &Cluster{}
	c.NATS, c.NATSURL = StartNATSServer(tb)
	switch {
	case opts.RedisURL != "":
		c.RedisURL = opts.RedisURL
	case opts.Persistent:
		c.Redis, c.RedisURL = StartRedisServer(tb)
	default:
		c.RedisURL = testutil.StartRedis(tb)
	}
	wargs := opts.WorkerArgs
	command := opts.WorkerCommand
	if command == nil {
		command = []string{filepath.Join(Binaries(tb), "worker")}
		if !opts.NoFixture {
			wargs = append([]string{"--fixture", "conformance"}, wargs...)
		}
	}
	for i := 0; i < opts.Workers; i++ {
		c.Workers = append(c.Workers, StartWorkerCommandEnv(tb, command, opts.WorkerEnv, c.NATSURL, wargs...))
	}
	fargs := opts.FrontendArgs
	if opts.RedisMode != "" {
		fargs = append([]string{"--redis-mode", opts.RedisMode}, fargs...)
	}
	var proxyPort int
	if opts.Nginx {
		proxyPort = FreePort(tb)
		fargs = append([]string{"--allowed-hosts", fmt.Sprintf("127.0.0.1:%d,localhost:%d", proxyPort, proxyPort)}, fargs...)
	}
	for i := 0; i < opts.Frontends; i++ {
		p, u := StartFrontendEnv(tb, opts.FrontendEnv, c.NATSURL, c.RedisURL, fargs...)
		c.Frontends = append(c.Frontends, p)
		c.URLs = append(c.URLs, u)
	}
	if opts.Nginx {
		c.ProxyURL = startNginx(tb, proxyPort, c.URLs)
	}
	return c
}

// startNginx runs nginx on port, round robin over the frontends' URLs.
func startNginx(tb testing.TB, port int, urls []string) string {
	tb.Helper()
	bin := FindBinary(tb, "nginx", "apt-get install nginx-light")
	dir := tb.TempDir()
	var servers strings.Builder
	for _, u := range urls {
		host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		fmt.Fprintf(&servers, "    server %s max_fails=0;\n", host)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	conf := fmt.Sprintf(`%s
daemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  client_max_body_size 8m;
  upstream frontends {
%[3]s    keepalive 32;
  }
  server {
    listen 127.0.0.1:%[4]d;
    location / {
      proxy_pass http://frontends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_pass_header X-Accel-Buffering;  # for proxies further out
      proxy_request_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      # A draining frontend answers what reaches it after its lame-duck
      # delay with 503 (not processed), then closes its listener. Both are
      # retried on the next frontend, POSTs too (non_idempotent), so a
      # drain loses nothing. A frontend killed mid-request may have
      # forwarded it: the retry is then what a client's own retry would
      # be (a legacy request id still claimed is refused with -32600). A
      # worker lost mid-request is 502, never retried here.
      proxy_next_upstream error timeout http_503 non_idempotent;
      proxy_next_upstream_tries 2;
    }
  }
}
`, user, dir, servers.String(), port)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	Start(tb, "nginx", bin, "-c", path, "-p", dir)
	WaitTCP(tb, fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// InProc is an all-in-one deployment inside the test process: embedded
// NATS (or the in-process bus), the in-memory store (or a Redis store),
// one worker and one frontend behind httptest.
type InProc struct {
	// Logs holds what the worker and frontend logged.
	Logs *logBuffer
	URL  string
	// Store is the in-memory store (nil with InProcOptions.RedisURL).
	Store *sessionstore.Memory
	// Sessions is the frontend's store: Store, or the Redis store.
	Sessions sessionstore.Store
	// NC is the embedded NATS server's connection (nil with LocalBus).
	NC *nats.Conn
	// Bus is what the worker and the frontend share: NC's, or the
	// in-process bus.
	Bus      bus.Conn
	Server   *mcp.Server
	Worker   *worker.Worker
	Frontend *frontend.Frontend
}

// InProcOptions shape StartInProc; the zero value serves the conformance
// fixture with default frontend options.
type InProcOptions struct {
	Frontend  frontend.Options // Store and Logger are filled in
	Store     sessionstore.Options
	NoFixture bool
	// LocalBus runs the deployment on the in-process bus (bus.Local, as
	// the all-in-one without --nats-listen) instead of an embedded NATS.
	LocalBus bool
	// RedisURL, when set, keeps the sessions in a Redis store on this
	// URL (with the Store options and a key prefix of the test's own, the
	// rest default, as a cluster's frontend) instead of the in-memory
	// store.
	RedisURL string
	// Server, when set, is served instead of the example server.
	Server *mcp.Server
	// TracerProvider makes the worker's and the frontend's spans (it is
	// Frontend.TracerProvider unless that is set).
	// default: the global provider
	TracerProvider trace.TracerProvider
}

// logBuffer is an io.Writer that keeps what was written.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// StartInProc starts an in-process all-in-one.
func StartInProc(tb testing.TB, opts InProcOptions) *InProc {
	tb.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var nc *nats.Conn
	var bc bus.Conn
	if opts.LocalBus {
		l := bus.NewLocal(log)
		tb.Cleanup(l.Close)
		bc = l
	} else {
		e, err := bus.StartEmbedded(nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.Shutdown(ctx)
		})
		if nc, err = e.Connect("test"); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(nc.Close)
		bc = bus.NATS(nc)
	}
	var (
		mem      *sessionstore.Memory
		sessions sessionstore.Store
		err      error
	)
	if opts.RedisURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs, oerr := sessionstore.OpenRedis(ctx, opts.RedisURL, &sessionstore.RedisOptions{
			Options: opts.Store, KeyPrefix: testutil.UniquePrefix(tb),
		})
		cancel()
		if oerr != nil {
			tb.Fatal(oerr)
		}
		sessions = rs
	} else {
		if mem, err = sessionstore.NewMemory(&opts.Store); err != nil {
			tb.Fatal(err)
		}
		sessions = mem
	}
	tb.Cleanup(func() { _ = sessions.Close(context.Background()) })
	srv := opts.Server
	if srv == nil {
		fix := "conformance"
		if opts.NoFixture {
			fix = ""
		}
		if srv, err = fixture.NewExampleServer(fix, "test", log); err != nil {
			tb.Fatal(err)
		}
	}
	w, err := worker.New(bc, srv, &worker.Options{Logger: log, TracerProvider: opts.TracerProvider})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
	fo := opts.Frontend
	fo.Store = sessions
	if fo.TracerProvider == nil {
		fo.TracerProvider = opts.TracerProvider
	}
	if fo.Logger == nil {
		fo.Logger = log
	}
	fe, err := frontend.New(bc, fo)
	if err != nil {
		tb.Fatal(err)
	}
	if err := fe.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(fe.Router("/mcp"))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fe.Shutdown(ctx)
		hs.CloseClientConnections()
		hs.Close()
	})
	return &InProc{Logs: logs, URL: hs.URL + "/mcp", Store: mem, Sessions: sessions, NC: nc, Bus: bc, Server: srv, Worker: w, Frontend: fe}
}
