package clienttest

import (
	"testing"
)

// TestAllInOne runs every client, in every era it supports, against the
// all-in-one binary with the conformance fixture.
func TestAllInOne(t *testing.T) {
	t.Parallel()
	e := requireNode(t)
	runMatrix(t, e, startAllInOne(t))
}

// TestCluster runs every client, in every era it supports, against a
// cluster of separate processes: nats-server, redis-server, one worker and
// two frontends. A Node client run talks to one frontend (the runs take
// turns); the Go SDK client alternates between both on every request.
func TestCluster(t *testing.T) {
	t.Parallel()
	e := requireNode(t)
	runMatrix(t, e, startCluster(t))
}

// nodeClient is one TypeScript client script and the eras it runs in.
type nodeClient struct {
	Name, Script, Pkg string
	Eras              []string
}

var nodeClients = []nodeClient{
	// SDK v1 speaks 2025-11-25 only and always initializes.
	{Name: "ts-sdk-v1", Script: "ts-v1.mjs", Pkg: pkgTSv1, Eras: []string{"legacy"}},
	// SDK v2: versionNegotiation 'legacy', pinned 2026-07-28, 'auto'.
	{Name: "ts-sdk-v2", Script: "ts-v2.mjs", Pkg: pkgTSv2, Eras: []string{"legacy", "modern", "auto"}},
}

// runMatrix runs the whole client matrix against tg.
//
// The runs that watch server-wide notifications (every list_changed and
// resource update reaches every listener) and count the handlers'
// "sleep cancelled" log lines share tg, so they run one after another in
// the "sessions" subtest: a notification or a cancellation is then always
// the current run's own. The Inspector checks only read, so they run in
// parallel with them.
func runMatrix(t *testing.T, e *nodeEnv, tg *target) {
	rep := &report{}
	rep.logMatrix(t, tg.Name)

	t.Run("inspector", func(t *testing.T) {
		t.Parallel()
		for _, era := range inspectorEras {
			t.Run(era.Era, func(t *testing.T) {
				runInspector(t, e, tg.URLs[len(tg.URLs)-1], era.Era, rep)
			})
		}
	})

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		turn := 0
		for _, c := range nodeClients {
			t.Run(c.Name, func(t *testing.T) {
				for _, era := range c.Eras {
					url := tg.URLs[turn%len(tg.URLs)]
					turn++
					t.Run(era, func(t *testing.T) {
						before := tg.cancelCount()
						run := runScript(t, e, c.Script, c.Name, c.Pkg, url, era, scenariosFor(era))
						rep.add(run)
						checkServerCancelled(t, tg, run, before)
					})
				}
			})
		}
		t.Run("go-sdk", func(t *testing.T) {
			for _, era := range []string{"legacy", "modern"} {
				t.Run(era, func(t *testing.T) {
					before := tg.cancelCount()
					run := runGoClient(t, tg.URLs, era)
					rep.add(run)
					checkServerCancelled(t, tg, run, before)
				})
			}
		})
	})
}

// checkServerCancelled checks, after a run whose cancel_sleep passed, that
// the server's sleep handler observed the cancellation: the client's own
// API only shows that the client gave up.
func checkServerCancelled(t *testing.T, tg *target, run *clientRun, before int) {
	t.Helper()
	if res, ok := run.result("cancel_sleep"); ok && res.OK {
		t.Run("cancel_sleep_seen_by_server", func(t *testing.T) { tg.waitCancelled(t, before) })
	}
}
