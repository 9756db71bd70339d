package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/prometheus/client_golang/prometheus"
)

// StoreOps are the values of the op label of the store metrics: one per
// method of sessionstore.Store (and Ping).
var StoreOps = []string{
	"create", "get", "update", "delete", "subscribe", "unsubscribe", "subscriptions", "subscribers",
	"drop_subscriber", "begin", "end", "append", "append_seq", "append_once", "events_after",
	"end_stream", "use_once", "create_record", "get_record", "set_record", "ping",
}

// storeMetrics are mcpfleet_store_roundtrip_seconds and
// mcpfleet_store_errors_total, one series per op made at start.
type storeMetrics struct {
	rtt    *prometheus.HistogramVec
	errs   *prometheus.CounterVec
	byName map[string]storeOp
}

type storeOp struct {
	rtt  prometheus.Observer
	errs prometheus.Counter
}

func newStoreMetrics() *storeMetrics {
	s := &storeMetrics{
		rtt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpfleet_store_roundtrip_seconds",
			Help:    "Duration of the session store's calls (Redis or memory), by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpfleet_store_errors_total",
			Help: "Session store calls that failed (backend unreachable or slow, the call's deadline passed), by operation; the answers the store's contract defines (not found, exists, in flight, used, conflict, purged, full) are not failures.",
		}, []string{"op"}),
		byName: map[string]storeOp{},
	}
	for _, op := range StoreOps {
		s.byName[op] = storeOp{rtt: s.rtt.WithLabelValues(op), errs: s.errs.WithLabelValues(op)}
	}
	return s
}

// answers are the store errors that are answers, not failures.
var answers = []error{
	sessionstore.ErrNotFound, sessionstore.ErrExists, sessionstore.ErrFull, sessionstore.ErrUsed,
	sessionstore.ErrEventsPurged, sessionstore.ErrInFlight, sessionstore.ErrConflict,
}

// observe records one call of op that started at start and returned err.
func (s *storeMetrics) observe(op string, start time.Time, err error) {
	o := s.byName[op]
	o.rtt.Observe(time.Since(start).Seconds())
	if err == nil {
		return
	}
	for _, a := range answers {
		if errors.Is(err, a) {
			return
		}
	}
	o.errs.Inc()
}

// InstrumentStore returns st with each call timed in
// mcpfleet_store_roundtrip_seconds and each failure counted in
// mcpfleet_store_errors_total, by op (StoreOps). The result also has
// Ping (st's, or none: nil) and CountSessions (st's, or an error), so
// the readiness and session checks see through it. A nil *Metrics
// returns st unchanged.
func (m *Metrics) InstrumentStore(st sessionstore.Store) sessionstore.Store {
	if m == nil || st == nil {
		return st
	}
	switch st.(type) {
	case *instrumented, *instrumentedImmediate:
		return st
	}
	in := &instrumented{st: st, m: m.store}
	if _, ok := st.(sessionstore.Immediate); ok {
		return &instrumentedImmediate{in}
	}
	return in
}

// instrumentedImmediate is instrumented for a store whose session calls
// never wait ([sessionstore.Immediate]), which it stays.
type instrumentedImmediate struct{ *instrumented }

// ImmediateSessions implements [sessionstore.Immediate].
func (*instrumentedImmediate) ImmediateSessions() {}

// instrumented is a sessionstore.Store timing its inner store's calls.
type instrumented struct {
	st sessionstore.Store
	m  *storeMetrics
}

var (
	_ sessionstore.Store   = (*instrumented)(nil)
	_ sessionstore.Pinger  = (*instrumented)(nil)
	_ sessionstore.Counter = (*instrumented)(nil)
)

func (s *instrumented) Create(ctx context.Context, sess *sessionstore.Session) error {
	t := time.Now()
	err := s.st.Create(ctx, sess)
	s.m.observe("create", t, err)
	return err
}

func (s *instrumented) Get(ctx context.Context, id string) (*sessionstore.Session, error) {
	t := time.Now()
	a, err := s.st.Get(ctx, id)
	s.m.observe("get", t, err)
	return a, err
}

func (s *instrumented) Update(ctx context.Context, id string, p sessionstore.Patch) error {
	t := time.Now()
	err := s.st.Update(ctx, id, p)
	s.m.observe("update", t, err)
	return err
}

func (s *instrumented) Delete(ctx context.Context, id string) error {
	t := time.Now()
	err := s.st.Delete(ctx, id)
	s.m.observe("delete", t, err)
	return err
}

func (s *instrumented) Subscribe(ctx context.Context, id, uri string) error {
	t := time.Now()
	err := s.st.Subscribe(ctx, id, uri)
	s.m.observe("subscribe", t, err)
	return err
}

func (s *instrumented) Unsubscribe(ctx context.Context, id, uri string) error {
	t := time.Now()
	err := s.st.Unsubscribe(ctx, id, uri)
	s.m.observe("unsubscribe", t, err)
	return err
}

func (s *instrumented) Subscriptions(ctx context.Context, id string) ([]string, error) {
	t := time.Now()
	a, err := s.st.Subscriptions(ctx, id)
	s.m.observe("subscriptions", t, err)
	return a, err
}

func (s *instrumented) Subscribers(ctx context.Context, uri string) ([]string, error) {
	t := time.Now()
	a, err := s.st.Subscribers(ctx, uri)
	s.m.observe("subscribers", t, err)
	return a, err
}

func (s *instrumented) DropSubscriber(ctx context.Context, uri, id string) error {
	t := time.Now()
	err := s.st.DropSubscriber(ctx, uri, id)
	s.m.observe("drop_subscriber", t, err)
	return err
}

func (s *instrumented) Begin(ctx context.Context, id, requestID, token string, ttl time.Duration) (*sessionstore.Session, error) {
	t := time.Now()
	a, err := s.st.Begin(ctx, id, requestID, token, ttl)
	s.m.observe("begin", t, err)
	return a, err
}

func (s *instrumented) End(ctx context.Context, id, requestID, token string) error {
	t := time.Now()
	err := s.st.End(ctx, id, requestID, token)
	s.m.observe("end", t, err)
	return err
}

func (s *instrumented) AppendEvent(ctx context.Context, id, stream string, data []byte) (uint64, error) {
	t := time.Now()
	a, err := s.st.AppendEvent(ctx, id, stream, data)
	s.m.observe("append", t, err)
	return a, err
}

func (s *instrumented) AppendEventSeq(ctx context.Context, id, stream string, seq uint64, data []byte) (uint64, bool, error) {
	t := time.Now()
	a, b, err := s.st.AppendEventSeq(ctx, id, stream, seq, data)
	s.m.observe("append_seq", t, err)
	return a, b, err
}

func (s *instrumented) AppendOnce(ctx context.Context, batch []sessionstore.OnceAppend) ([]sessionstore.OnceResult, error) {
	t := time.Now()
	a, err := s.st.AppendOnce(ctx, batch)
	s.m.observe("append_once", t, err)
	return a, err
}

func (s *instrumented) EventsAfter(ctx context.Context, id, stream string, after uint64) ([]sessionstore.Event, error) {
	t := time.Now()
	a, err := s.st.EventsAfter(ctx, id, stream, after)
	s.m.observe("events_after", t, err)
	return a, err
}

func (s *instrumented) EndStream(ctx context.Context, id, stream string) error {
	t := time.Now()
	err := s.st.EndStream(ctx, id, stream)
	s.m.observe("end_stream", t, err)
	return err
}

func (s *instrumented) UseOnce(ctx context.Context, key string, ttl time.Duration) error {
	t := time.Now()
	err := s.st.UseOnce(ctx, key, ttl)
	s.m.observe("use_once", t, err)
	return err
}

func (s *instrumented) CreateRecord(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	t := time.Now()
	err := s.st.CreateRecord(ctx, key, data, ttl)
	s.m.observe("create_record", t, err)
	return err
}

func (s *instrumented) GetRecord(ctx context.Context, key string) ([]byte, int64, error) {
	t := time.Now()
	a, b, err := s.st.GetRecord(ctx, key)
	s.m.observe("get_record", t, err)
	return a, b, err
}

func (s *instrumented) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	t := time.Now()
	err := s.st.SetRecord(ctx, key, ver, data)
	s.m.observe("set_record", t, err)
	return err
}

// Close closes the inner store (not timed: it is no round trip).
func (s *instrumented) Close(ctx context.Context) error { return s.st.Close(ctx) }

// Ping pings the inner store when it can be pinged (else nil: a store
// without Ping is taken as reachable, as the frontend's readiness does).
func (s *instrumented) Ping(ctx context.Context) error {
	p, ok := s.st.(sessionstore.Pinger)
	if !ok {
		return nil
	}
	t := time.Now()
	err := p.Ping(ctx)
	s.m.observe("ping", t, err)
	return err
}

// CountSessions is the inner store's (see sessionstore.Counter); not
// timed here: it may answer from a cache.
func (s *instrumented) CountSessions(ctx context.Context) (int, error) {
	if c, ok := s.st.(sessionstore.Counter); ok {
		return c.CountSessions(ctx)
	}
	return 0, errors.ErrUnsupported
}

// Unwrap returns the inner store.
func (s *instrumented) Unwrap() sessionstore.Store { return s.st }
