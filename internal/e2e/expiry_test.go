package e2e

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestSessionExpiry checks the sliding idle TTL: a session in use stays
// alive past its TTL, an idle one expires and then gets 404 (and its record
// is evicted from the store).
func TestSessionExpiry(t *testing.T) {
	const ttl = time.Second
	for _, tg := range startTargets(t, "--session-ttl", ttl.String()) {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			busy, idle := tg.client(t), tg.client(t)
			busy.Initialize(nil)
			idle.Initialize(nil)
			// busy keeps using its session for 3 TTLs.
			for end := time.Now().Add(3 * ttl); time.Now().Before(end); {
				busy.Call(1, "ping", nil)
				time.Sleep(ttl / 4) // the behaviour under test: a session used every quarter TTL stays alive
			}
			r := idle.Post(testenv.Request(2, "ping", nil), nil)
			if r.Status != 404 {
				t.Fatalf("idle session after 3 TTLs: got %s, want 404", r)
			}
			busy.Call(3, "tools/list", nil)
			// Once idle, the busy session expires too, and the record goes.
			time.Sleep(2 * ttl) // the behaviour under test: a session idle for twice its TTL expires
			if tg.sessions != nil {
				testutil.PollFor(t, testenv.HangGuard(10*ttl), "the expired sessions' records to be evicted", func() bool { return tg.sessions(t) == 0 })
			}
			if r := busy.Post(testenv.Request(4, "ping", nil), nil); r.Status != 404 {
				t.Fatalf("expired session: got %s, want 404", r)
			}
		})
	}
}
