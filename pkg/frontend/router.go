package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
)

// Router returns a gin engine serving the MCP endpoint at path (e.g.
// "/mcp") and, with authentication, the protected-resource metadata:
// what a load balancer exposes, and nothing else (any other path is
// 404). The health and metrics endpoints are never served there: see
// Admin. gin only routes: the endpoint is the plain Handler.
func (f *Frontend) Router(path string) *gin.Engine {
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

// Admin returns the frontend's admin endpoints, for an address of their
// own off the load balancer: /healthz (alive), /readyz (Ready: NATS
// connected, the store reachable, not draining) and, when metrics is
// non-nil, /metrics.
func (f *Frontend) Admin(metrics http.Handler) http.Handler {
	return httpx.AdminMux(f.Ready, metrics)
}
