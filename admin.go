package mcpfleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
)

// admin is the admin listener (--admin-listen): /healthz (liveness),
// /readyz (readiness) and /metrics, for probes and Prometheus, on an
// address the load balancer does not expose. The MCP listener never
// serves them.
type admin struct {
	ln net.Listener
	hs *http.Server
}

// listenAdmin opens the admin listener on addr; nil (and no error) when
// addr is empty (off). Opening it before anything joins the bus makes a
// taken address fail at once.
func listenAdmin(addr string) (*admin, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener: listening on %s: %w (set another address with --admin-listen, %s, or turn it off with off)", addr, err, EnvName("admin-listen"))
	}
	return &admin{ln: ln}, nil
}

// serve serves the admin endpoints until stop: ready reports readiness
// (nil: ready), metrics serves /metrics. Nil-safe.
func (a *admin) serve(ready func(context.Context) error, metrics http.Handler, log *slog.Logger) {
	if a == nil {
		return
	}
	a.hs = &http.Server{Handler: httpx.AdminMux(ready, metrics), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.hs.Serve(a.ln) }()
	log.Info("admin http serving", "url", "http://"+a.ln.Addr().String())
}

// stop ends the admin listener (last: probes see the drain). Nil-safe.
func (a *admin) stop() {
	if a == nil {
		return
	}
	if a.hs == nil {
		_ = a.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.hs.Shutdown(ctx); err != nil {
		_ = a.hs.Close()
	}
}
