package mcpgo

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Serve serves s over Streamable HTTP on addr (at /mcp), or over
// stdin/stdout when addr is "stdio", until ctx ends.
func Serve(ctx context.Context, s *server.MCPServer, addr string) error {
	if addr == "stdio" {
		return server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
	}
	// Both eras on this endpoint. A 2025-11-25 server-to-client request
	// waits in this process's memory: the client's answer must reach it.
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	context.AfterFunc(ctx, func() { _ = hs.Shutdown(context.Background()) })
	return hs.ListenAndServe() // http.ErrServerClosed once ctx ended
}
