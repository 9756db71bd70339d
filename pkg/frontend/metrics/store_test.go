package metrics_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/prometheus/client_golang/prometheus"
)

// The instrumented store times every call by op, counts failures (a
// call whose context is done) but not the answers of the contract (a
// session not found), and sees through to Ping and CountSessions.
func TestInstrumentStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	mem, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close(context.Background()) })
	m := metrics.New(reg, mem)
	st := m.InstrumentStore(mem)
	if m.InstrumentStore(st) != st {
		t.Error("instrumenting twice wraps twice")
	}
	if _, ok := st.(sessionstore.Immediate); !ok {
		t.Error("the timed Memory store is no longer sessionstore.Immediate")
	}
	if _, ok := m.InstrumentStore(struct{ sessionstore.Store }{mem}).(sessionstore.Immediate); ok {
		t.Error("a store that may wait became sessionstore.Immediate")
	}
	ctx := t.Context()
	s := &sessionstore.Session{ID: sessionstore.NewID(), ProtocolVersion: "2025-11-25", Initialized: true}
	if err := st.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, sessionstore.NewID()); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Get of an unknown session: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Get(done, s.ID); err == nil {
		t.Fatal("Get with a done context succeeded")
	}
	if err := st.(sessionstore.Pinger).Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := st.(sessionstore.Counter).CountSessions(ctx); err != nil || n != 1 {
		t.Fatalf("CountSessions: %d, %v", n, err)
	}

	counts := map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			op := labels(s)["op"]
			switch f.GetName() {
			case "mcpfleet_store_roundtrip_seconds":
				counts["rtt "+op] = float64(s.GetHistogram().GetSampleCount())
			case "mcpfleet_store_errors_total":
				counts["err "+op] = s.GetCounter().GetValue()
			case "mcpfleet_sessions":
				counts["sessions"] = s.GetGauge().GetValue()
			}
		}
	}
	for k, want := range map[string]float64{"rtt create": 1, "rtt get": 3, "err get": 1, "err create": 0, "rtt ping": 1, "rtt begin": 0, "sessions": 1} {
		if counts[k] != want {
			t.Errorf("%s = %v, want %v", k, counts[k], want)
		}
	}
	for _, op := range metrics.StoreOps { // each op's series is there from the start
		if _, ok := counts["rtt "+op]; !ok {
			t.Errorf("no series of op %s", op)
		}
	}
}
