// Package opmetrics holds the per-operation metrics the frontend and the
// worker share (OpenTelemetry's mcp.server.operation.duration and an
// in-flight gauge), with labels whose values a catalog bounds: the
// method among the protocol's request methods, the tool, prompt or
// resource among those the catalog offers, anything else "other".
package opmetrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// Buckets are the duration histograms' bounds, in seconds: the
// OpenTelemetry MCP semantic conventions' advice for
// mcp.server.operation.duration.
var Buckets = []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Label names, in the order of the label values.
var (
	TargetLabels   = []string{"mcp_method_name", "gen_ai_tool_name", "gen_ai_prompt_name", "mcp_resource_template"}
	DurationLabels = append(TargetLabels[:len(TargetLabels):len(TargetLabels)], "error_type")
)

// Other is the label value of what the bound does not admit: a method
// the protocol does not have, a tool, prompt or resource the catalog does
// not offer, an error type beyond MaxErrorTypes.
const Other = "other"

// MaxErrorTypes bounds the error_type values of one label set (JSON-RPC
// codes come from handlers); beyond, errors are "other".
const MaxErrorTypes = 16

// Catalog bounds the target labels: a fleet.View (the frontend's union of
// the pools) or an mcp.Catalog (a worker's own).
type Catalog interface {
	HasTool(name string) bool
	HasPrompt(name string) bool
	ResourceLabel(uri string) (string, bool)
}

// methods are the request methods of both eras: the method label's values.
var methods = func() map[string]bool {
	m := map[string]bool{}
	for _, era := range []protocol.Era{protocol.EraLegacy, protocol.EraModern} {
		for _, k := range protocol.EraMethods(era) {
			m[k] = true
		}
	}
	return m
}()

// MethodLabel is method when it is a request method of the protocol,
// else Other.
func MethodLabel(method string) string {
	if methods[method] {
		return method
	}
	return Other
}

// Labels returns the label values of an operation: its method, and its
// target (the tool of tools/call, the prompt of prompts/get, the URI of
// resources/read, subscribe and unsubscribe) in the place of its kind,
// named as the catalog names it (a resource's URI, a template's URI
// template) or Other; the places that do not apply are "".
func Labels(cat Catalog, method, target string) [4]string {
	l := [4]string{MethodLabel(method)}
	switch method {
	case protocol.MethodToolsCall:
		l[1] = Other
		if cat != nil && cat.HasTool(target) {
			l[1] = target
		}
	case protocol.MethodPromptsGet:
		l[2] = Other
		if cat != nil && cat.HasPrompt(target) {
			l[2] = target
		}
	case protocol.MethodResourcesRead, protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		l[3] = Other
		if cat != nil {
			if r, ok := cat.ResourceLabel(target); ok {
				l[3] = r
			}
		}
	}
	return l
}

// Opts name a Vec's metrics.
type Opts struct {
	DurationName, DurationHelp string
	InFlightName, InFlightHelp string
}

// Vec is one process's operation metrics: a duration histogram by
// DurationLabels and an in-flight gauge by TargetLabels. Safe for
// concurrent use.
type Vec struct {
	dur      *prometheus.HistogramVec
	inflight *prometheus.GaugeVec

	mu     sync.RWMutex
	series map[[4]string]*Series
}

// New returns the metrics; register Collectors.
func New(o Opts) *Vec {
	return &Vec{
		dur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: o.DurationName, Help: o.DurationHelp, Buckets: Buckets,
		}, DurationLabels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: o.InFlightName, Help: o.InFlightHelp}, TargetLabels),
		series:   map[[4]string]*Series{},
	}
}

// Collectors returns the metrics to register.
func (v *Vec) Collectors() []prometheus.Collector { return []prometheus.Collector{v.dur, v.inflight} }

// Series is the metrics of one label set: what an operation in flight
// holds, so that it leaves the gauge it entered whatever changes
// meanwhile (the catalog included). Series live as long as their Vec.
type Series struct {
	labels   [4]string
	inflight prometheus.Gauge
	dur      *prometheus.HistogramVec
	okOnce   sync.Once
	ok       prometheus.Observer // error_type "", made at the first success

	mu   sync.Mutex
	errs map[string]prometheus.Observer
}

// Begin counts an operation in flight with labels (see Labels) and returns
// its series: call End on it exactly once. A label set seen before costs
// a map lookup and no allocation.
func (v *Vec) Begin(labels [4]string) *Series {
	v.mu.RLock()
	s := v.series[labels]
	v.mu.RUnlock()
	if s == nil {
		v.mu.Lock()
		if s = v.series[labels]; s == nil {
			s = &Series{
				labels:   labels,
				inflight: v.inflight.WithLabelValues(labels[:]...),
				dur:      v.dur,
				errs:     map[string]prometheus.Observer{},
			}
			v.series[labels] = s
		}
		v.mu.Unlock()
	}
	s.inflight.Inc()
	return s
}

// End ends an operation Begin counted: it leaves the gauge and its
// duration since start is observed under errorType ("" for success).
func (s *Series) End(start time.Time, errorType string) {
	s.inflight.Dec()
	d := time.Since(start).Seconds()
	if errorType == "" {
		s.okOnce.Do(func() { s.ok = s.dur.WithLabelValues(s.labels[0], s.labels[1], s.labels[2], s.labels[3], "") })
		s.ok.Observe(d)
		return
	}
	s.mu.Lock()
	o := s.errs[errorType]
	if o == nil {
		if len(s.errs) >= MaxErrorTypes {
			errorType = Other
			o = s.errs[Other]
		}
		if o == nil {
			o = s.dur.WithLabelValues(s.labels[0], s.labels[1], s.labels[2], s.labels[3], errorType)
			s.errs[errorType] = o
		}
	}
	s.mu.Unlock()
	o.Observe(d)
}

// ResponseErrorType is the error_type of a JSON-RPC response (resp, as
// encoding/json or protocol.AppendErrorResponse write it) to a request of
// method: "" for a result; the error's code (as a string) for an error;
// "tool_error" for a tools/call result with isError true.
func ResponseErrorType(method string, resp []byte) string {
	if code, ok := protocol.ResponseErrorCode(resp); ok {
		return strconv.FormatInt(code, 10)
	}
	if method == protocol.MethodToolsCall && protocol.IsToolErrorResult(resp) {
		return "tool_error"
	}
	return ""
}
