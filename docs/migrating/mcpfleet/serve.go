package mcpfleet

import (
	"context"
	"log"
	"net/http"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// Main is the whole main of the mcpfleet version. The one binary runs as
// the all-in-one (`serve`, the default: HTTP on 127.0.0.1:8080/mcp), as a
// cluster's `worker` (with --nats-url and --state-key) and `frontend`
// (with --nats-url and --redis-url), or over `stdio`.
func Main(projects Projects) {
	srv, err := NewServer(projects)
	if err != nil {
		log.Fatal(err)
	}
	mcpfleet.Main(srv)
}

// Mount serves srv on a router of your own instead: the all-in-one inside
// this process (an in-process bus, an in-process worker, an
// in-memory session store). Stop it with h.Shutdown.
func Mount(ctx context.Context, mux *http.ServeMux, srv *mcp.Server) (*mcpfleet.Handler, error) {
	h, err := mcpfleet.NewHandler(ctx, srv, nil)
	if err != nil {
		return nil, err
	}
	mux.Handle("/mcp", h) // both protocol eras on this one endpoint
	return h, nil
}
