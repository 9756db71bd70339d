package frontend

import (
	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a frontend's Prometheus metrics (see package metrics).
type Metrics = metrics.Metrics

// NewMetrics creates the metrics and registers them on reg; sessions, when
// non-nil, is the store whose live sessions the sessions gauge reports.
func NewMetrics(reg prometheus.Registerer, sessions sessionstore.Counter) *Metrics {
	return metrics.New(reg, sessions)
}
