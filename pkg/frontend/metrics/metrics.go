// Package metrics holds a frontend's Prometheus metrics.
package metrics

import (
	"context"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/internal/opmetrics"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a frontend's Prometheus metrics. Create them with New
// and pass them in frontend.Options.Metrics; a nil *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	streams  *prometheus.GaugeVec
	dropped  *prometheus.CounterVec
	busRTT   prometheus.Histogram
	sessions *prometheus.CounterVec
	ops      *opmetrics.Vec
	store    *storeMetrics
	fanout   *prometheus.CounterVec
	dropMsgs *prometheus.CounterVec
}

// New creates the metrics and registers them on reg. sessions, when
// non-nil, is the store whose live sessions mcpfleet_sessions reports
// (read at each scrape, within 2 seconds: no sample when it cannot say).
func New(reg prometheus.Registerer, sessions sessionstore.Counter) *Metrics {
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
	m.ops = opmetrics.New(opmetrics.Opts{
		DurationName: "mcp_server_operation_duration_seconds",
		DurationHelp: "Time from receiving a request to sending its result, per operation (OpenTelemetry mcp.server.operation.duration): by method, tool, prompt and resource (the names of the fleet's union catalog, else other) and error_type (\"\", a JSON-RPC code, tool_error, or the outcome: timeout, worker_lost, no_worker, unavailable, cancelled, client_gone, rejected, dropped).",
		InFlightName: "mcpfleet_frontend_operations_in_flight",
		InFlightHelp: "Requests in progress on this frontend, by method, tool, prompt and resource, from the moment their method and target are known until they are answered.",
	})
	m.store = newStoreMetrics()
	m.fanout = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_frontend_events_fanned_out_total",
		Help: "Events this frontend delivered to streams, by kind: listen (resources/updated, list_changed and task notifications queued on subscriptions/listen streams), session (session events and list_changed appended to legacy GET logs).",
	}, []string{"kind"})
	m.dropMsgs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpfleet_frontend_dropped_messages_total",
		Help: "Messages this frontend could not deliver to a stream, by reason: slow_reader (a stream's queue was full; the stream ends), inbox_overflow (a request's frames arrived faster than its exchange took them; the request is dropped), no_log (a session event for a session with no GET log).",
	}, []string{"reason"})
	for _, k := range []string{"listen", "session"} {
		m.fanout.WithLabelValues(k)
	}
	for _, r := range []string{"slow_reader", "inbox_overflow", "no_log"} {
		m.dropMsgs.WithLabelValues(r)
	}
	for _, k := range []string{"post", "get", "listen"} {
		m.dropped.WithLabelValues(k) // at 0 from the start: increase() sees the first drop
	}
	reg.MustRegister(m.requests, m.duration, m.inflight, m.streams, m.dropped, m.busRTT, m.sessions,
		m.store.rtt, m.store.errs, m.fanout, m.dropMsgs)
	reg.MustRegister(m.ops.Collectors()...)
	if sessions != nil {
		reg.MustRegister(&sessionsGauge{c: sessions, desc: prometheus.NewDesc("mcpfleet_sessions",
			"Live legacy sessions in the store (every frontend's; with Redis a count at most a minute old, see sessionstore.Redis.CountSessions).", nil, nil)})
	}
	return m
}

// sessionsGauge is mcpfleet_sessions, read from the store at each scrape.
type sessionsGauge struct {
	c    sessionstore.Counter
	desc *prometheus.Desc
}

func (g *sessionsGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *sessionsGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := g.c.CountSessions(ctx)
	if err != nil {
		return // not known now: no sample rather than a wrong one
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n))
}

// EventsFannedOut counts n events delivered to streams of kind (listen,
// session).
func (m *Metrics) EventsFannedOut(kind string, n int) {
	if m != nil && n > 0 {
		m.fanout.WithLabelValues(kind).Add(float64(n))
	}
}

// MessageDropped counts a message a stream could not take, for reason
// (slow_reader, inbox_overflow, no_log).
func (m *Metrics) MessageDropped(reason string) {
	if m != nil {
		m.dropMsgs.WithLabelValues(reason).Inc()
	}
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

// BeginOperation counts the operation of rec in flight: a request whose
// method and target (rec.Tool, Prompt or Resource) are known, labelled by
// the names cat (the fleet's union catalog) offers. Observe ends it. A
// second call for the same record does nothing.
func (m *Metrics) BeginOperation(rec *httpx.Record, cat opmetrics.Catalog) {
	if m == nil || rec.Op != nil {
		return
	}
	target := rec.Tool
	switch {
	case rec.Prompt != "":
		target = rec.Prompt
	case rec.Resource != "":
		target = rec.Resource
	}
	rec.Op = m.ops.Begin(opmetrics.Labels(cat, rec.Method, target))
}

// Observe records one finished exchange: its request count and duration
// by method and outcome and, when BeginOperation counted it, the end of
// its operation (mcp_server_operation_duration_seconds by
// rec.ErrorType()).
func (m *Metrics) Observe(rec *httpx.Record) {
	if m == nil {
		return
	}
	if s, ok := rec.Op.(*opmetrics.Series); ok {
		rec.Op = nil
		s.End(rec.Start, rec.ErrorType())
	}
	method := methodLabel(rec.Method)
	m.requests.WithLabelValues(method, rec.Outcome()).Inc()
	m.duration.WithLabelValues(method).Observe(time.Since(rec.Start).Seconds())
}

// StreamOpened counts a stream of kind opened; call the func it returns
// when it closes.
func (m *Metrics) StreamOpened(kind string) func() {
	if m == nil {
		return func() {}
	}
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// DroppedStream counts a stream of kind closed for falling behind.
func (m *Metrics) DroppedStream(kind string) {
	if m != nil {
		m.dropped.WithLabelValues(kind).Inc()
	}
}

// RoundTrip records a bus round trip.
func (m *Metrics) RoundTrip(d time.Duration) {
	if m != nil {
		m.busRTT.Observe(d.Seconds())
	}
}

// Session counts a session event (created, deleted).
func (m *Metrics) Session(event string) {
	if m != nil {
		m.sessions.WithLabelValues(event).Inc()
	}
}

// InflightAdd moves the in-flight gauge by d.
func (m *Metrics) InflightAdd(d float64) {
	if m != nil {
		m.inflight.Add(d)
	}
}
