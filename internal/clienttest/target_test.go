package clienttest

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// target is a running deployment the clients talk to.
type target struct {
	Name string
	// URLs are the MCP endpoints: one for the all-in-one, one per frontend
	// for a cluster.
	URLs []string
	// handlerLog returns what the process running the handlers logged (the
	// all-in-one, or the cluster's worker): the demo sleep tool logs
	// "sleep cancelled" there when it observes its cancellation.
	handlerLog func() string
}

// startAllInOne runs the all-in-one binary with the conformance fixture.
func startAllInOne(t *testing.T) *target {
	t.Helper()
	p, u := testenv.StartMCPFleet(t, "--fixture", "conformance")
	return &target{Name: "all-in-one", URLs: []string{u}, handlerLog: p.Log}
}

// startCluster runs make cluster's topology: nats-server, redis-server,
// two workers (conformance fixture) and two frontends, each a separate
// process, behind nginx round robin (every request of a client may land on
// either frontend and either worker).
func startCluster(t *testing.T) *target {
	t.Helper()
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true})
	return &target{Name: "cluster", URLs: []string{c.ProxyURL}, handlerLog: func() string {
		var b strings.Builder
		for _, w := range c.Workers {
			b.WriteString(w.Log())
		}
		return b.String()
	}}
}

const sleepCancelled = `msg="sleep cancelled"`

// cancelCount is how many sleep cancellations the handlers have observed.
func (tg *target) cancelCount() int { return strings.Count(tg.handlerLog(), sleepCancelled) }

// waitCancelled waits until the handlers observed more than before
// cancellations.
func (tg *target) waitCancelled(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for tg.cancelCount() <= before {
		if time.Now().After(deadline) {
			t.Errorf("the sleep the client cancelled never observed its cancellation on the server (%q count still %d)", sleepCancelled, before)
			return
		}
		time.Sleep(20 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}
