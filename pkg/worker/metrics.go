package worker

import (
	"time"

	"github.com/mcpfleet/mcpfleet/internal/opmetrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a worker's Prometheus metrics. Create them with NewMetrics
// and pass them in Options.Metrics; a nil *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	stuckG   prometheus.Gauge
	ops      *opmetrics.Vec
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_worker_requests_total",
			Help: "Requests handled by this worker, by method and outcome (ok, error, cancelled, timeout, shutdown).",
		}, []string{"method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpfleet_worker_handler_duration_seconds",
			Help:    "Time handlers ran, by method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_worker_inflight_requests",
			Help: "Requests this worker is running: scale workers on it.",
		}),
		stuckG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_worker_stuck_handlers",
			Help: "Handlers still running after their request ended (answered at its deadline, cancellation or shutdown); each holds a MaxInFlight slot until it returns.",
		}),
	}
	m.ops = opmetrics.New(opmetrics.Opts{
		DurationName: "mcpfleet_worker_operation_duration_seconds",
		DurationHelp: "Time this worker handled each request, from its arrival to its answer: by method, tool, prompt and resource (the names of the worker's own catalog, else other) and error_type (\"\", a JSON-RPC code, tool_error, timeout, cancelled, shutdown).",
		InFlightName: "mcpfleet_worker_operations_in_flight",
		InFlightHelp: "Requests this worker is handling, by method, tool, prompt and resource.",
	})
	reg.MustRegister(m.requests, m.duration, m.inflight, m.stuckG)
	reg.MustRegister(m.ops.Collectors()...)
	return m
}

var workerMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "completion/complete": true, "server/discover": true, "logging/setLevel": true,
}

// start counts request f (of method) in flight, its operation labelled
// by what the worker serves, and returns its start.
func (m *Metrics) start(f *inflight, method string) time.Time {
	if m != nil {
		m.inflight.Inc()
		f.op = m.ops.Begin(opmetrics.Labels(f.w.servedCatalog(), method, f.target))
	}
	return time.Now()
}

// done counts the end of request f: its outcome (ok, error, timeout,
// cancelled, shutdown) and, for ok and error, its answer's errType (the
// error code or tool error: answer.errType), the operation's error_type.
func (m *Metrics) done(f *inflight, method, outcome, errType string, start time.Time) {
	if m == nil {
		return
	}
	m.inflight.Dec()
	if f.op != nil {
		switch outcome {
		case "ok", "error":
		default:
			errType = outcome
		}
		f.op.End(start, errType)
		f.op = nil
	}
	if !workerMethods[method] {
		method = "other"
	}
	m.requests.WithLabelValues(method, outcome).Inc()
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// stuck counts a handler that outlived its request; unstuck its return.
func (m *Metrics) stuck() {
	if m != nil {
		m.stuckG.Inc()
	}
}

func (m *Metrics) unstuck() {
	if m != nil {
		m.stuckG.Dec()
	}
}
