package gosdk

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves srv over Streamable HTTP on addr (at /mcp), or over
// stdin/stdout when addr is "stdio", until ctx ends.
func Serve(ctx context.Context, srv *mcp.Server, addr string) error {
	if addr == "stdio" {
		return srv.Run(ctx, &mcp.StdioTransport{})
	}
	// Sessions live in this process's memory: behind a load balancer, every
	// request of a session must reach it (sticky sessions). Stateful, the
	// handler negotiates a 2026-07-28 client down to 2025-11-25; with
	// StreamableHTTPOptions{Stateless: true} it serves 2026-07-28, and sends
	// no server-to-client requests.
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	context.AfterFunc(ctx, func() { _ = hs.Shutdown(context.Background()) })
	return hs.ListenAndServe() // http.ErrServerClosed once ctx ended
}
