package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
)

// Router returns a gin engine serving the MCP endpoint at path (e.g.
// "/mcp") with /healthz (alive), /readyz (NATS and store reachable, not
// draining) and, when metrics is non-nil, /metrics (Prometheus). gin only
// routes: the endpoint is the plain Handler.
func (f *Frontend) Router(path string, metrics http.Handler) *gin.Engine {
	g := f.MCPRouter(path)
	g.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	g.GET("/readyz", func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := f.Ready(ctx); err != nil {
			c.String(http.StatusServiceUnavailable, "not ready: %v\n", err)
			return
		}
		c.String(http.StatusOK, "ready\n")
	})
	if metrics != nil {
		g.GET("/metrics", gin.WrapH(metrics))
	}
	return g
}

// MCPRouter returns a gin engine serving the MCP endpoint at path and,
// with authentication, the protected-resource metadata: what a load
// balancer exposes, without the health and metrics endpoints (served
// apart, on an admin listener).
func (f *Frontend) MCPRouter(path string) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.Use(gin.Recovery())
	g.Any(path, gin.WrapH(f.Handler()))
	if f.opts.Auth != nil {
		meta := gin.WrapF(f.hostCheck.WithCORS(f.opts.Auth.Metadata))
		g.GET(auth.MetadataPath, meta)
		g.GET(auth.MetadataPath+path, meta)
	}
	return g
}
