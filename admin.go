package mcpfleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// admin is the admin listener (--admin-listen): /healthz (liveness),
// /readyz (readiness) and /metrics, for probes and Prometheus, on an
// address the load balancer does not expose.
type admin struct {
	ln net.Listener
	hs *http.Server
}

// listenAdmin opens the admin listener on addr; nil (and no error) when
// addr is empty. Opening it before anything joins the bus makes a taken
// address fail at once.
func listenAdmin(addr string) (*admin, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener: listening on %s: %w", addr, err)
	}
	return &admin{ln: ln}, nil
}

// serve serves the admin endpoints until stop: ready reports readiness
// (nil: ready), metrics serves /metrics. Nil-safe.
func (a *admin) serve(ready func(context.Context) error, metrics http.Handler, log *slog.Logger) {
	if a == nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", metrics)
	a.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
