package frontend

import (
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a frontend's Prometheus metrics. Create them with NewMetrics
// and pass them in Options.Metrics; a nil *Metrics records nothing.
type Metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inflight   prometheus.Gauge
	streams    *prometheus.GaugeVec
	dropped    *prometheus.CounterVec
	busRTT     prometheus.Histogram
	sessions   *prometheus.CounterVec
	sessionsFn prometheus.GaugeFunc
}

// NewMetrics creates the metrics and registers them on reg. sessions, when
// non-nil, reports the number of live sessions (the memory store's Len).
func NewMetrics(reg prometheus.Registerer, sessions func() int) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_frontend_requests_total",
			Help: "MCP messages received, by JSON-RPC method and outcome (ok, error, rejected, cancelled, client_gone, timeout, worker_lost, no_worker, unavailable).",
		}, []string{"method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpfleet_frontend_request_duration_seconds",
			Help:    "Time from receiving a request to its final answer, by method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpfleet_frontend_inflight_requests",
			Help: "HTTP exchanges on the MCP endpoint in progress (streams included).",
		}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcpfleet_frontend_open_streams",
			Help: "Open SSE streams by kind: post (a request's response stream), get (legacy GET), listen (subscriptions/listen), resume (Last-Event-ID).",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_frontend_dropped_streams_total",
			Help: "Streams closed because their reader fell behind (bounded buffer overflow), by kind.",
		}, []string{"kind"}),
		busRTT: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcpfleet_frontend_bus_roundtrip_seconds",
			Help:    "Time from publishing a request on the bus to its first frame from a worker.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_frontend_sessions_total",
			Help: "Legacy sessions created and deleted through this frontend.",
		}, []string{"event"}),
	}
	reg.MustRegister(m.requests, m.duration, m.inflight, m.streams, m.dropped, m.busRTT, m.sessions)
	if sessions != nil {
		m.sessionsFn = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpfleet_sessions",
			Help: "Live legacy sessions in the store.",
		}, func() float64 { return float64(sessions()) })
		reg.MustRegister(m.sessionsFn)
	}
	return m
}

// knownMethods bounds the method label's values.
var knownMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, era := range []protocol.Era{protocol.EraLegacy, protocol.EraModern} {
		for _, k := range protocol.EraMethods(era) {
			m[k] = true
		}
	}
	for _, n := range []string{protocol.NotificationInitialized, protocol.NotificationCancelled, protocol.NotificationRootsListChanged, "response", "GET", "DELETE"} {
		m[n] = true
	}
	return m
}()

func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return "other"
}

// observe records one finished exchange.
func (m *Metrics) observe(method, outcome string, start time.Time) {
	if m == nil {
		return
	}
	method = methodLabel(method)
	m.requests.WithLabelValues(method, outcome).Inc()
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

func (m *Metrics) streamOpened(kind string) func() {
	if m == nil {
		return func() {}
	}
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

func (m *Metrics) droppedStream(kind string) {
	if m != nil {
		m.dropped.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) roundTrip(d time.Duration) {
	if m != nil {
		m.busRTT.Observe(d.Seconds())
	}
}

func (m *Metrics) session(event string) {
	if m != nil {
		m.sessions.WithLabelValues(event).Inc()
	}
}

func (m *Metrics) inflightAdd(d float64) {
	if m != nil {
		m.inflight.Add(d)
	}
}

// recorder wraps the ResponseWriter of one exchange to learn its method,
// status and outcome for the metrics. Unwrap keeps http.ResponseController
// (flush, write deadlines) working through it.
type recorder struct {
	http.ResponseWriter
	method  string
	status  int
	outcome string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) result() string {
	switch {
	case r.outcome != "":
		return r.outcome
	case r.status >= 500:
		return "unavailable"
	case r.status >= 400:
		return "rejected"
	}
	return "ok"
}

// setMethod and setOutcome annotate the exchange behind w (no-ops when w is
// not a recorder).
func setMethod(w http.ResponseWriter, method string) {
	if r, ok := w.(*recorder); ok {
		r.method = method
	}
}

func setOutcome(w http.ResponseWriter, outcome string) {
	if r, ok := w.(*recorder); ok {
		r.outcome = outcome
	}
}
