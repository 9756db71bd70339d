package httpx

import (
	"context"
	"net/http"
	"time"
)

// AdminMux serves the admin endpoints of a process: /healthz (liveness:
// 200 while the process serves at all), /readyz (readiness: 200 when
// ready reports nil within 2 seconds, else 503 with its error) and, when
// metrics is non-nil, /metrics. They belong on an address of their own,
// off the load balancer: never beside the MCP endpoint.
func AdminMux(ready func(context.Context) error, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}
