package frontend

import (
	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a frontend's Prometheus metrics (see package metrics).
type Metrics = metrics.Metrics

// NewMetrics creates the metrics and registers them on reg; sessions, when
// non-nil, reports the number of live sessions.
func NewMetrics(reg prometheus.Registerer, sessions func() int) *Metrics {
	return metrics.New(reg, sessions)
}
