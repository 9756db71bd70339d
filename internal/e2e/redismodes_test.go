package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// TestFrontendsOnRedisModes runs frontend processes on a real Redis
// Cluster and on a real master behind Sentinel (--redis-mode cluster,
// sentinel): a legacy session made through one frontend is served by the
// other, a POST stream run through one is resumed from its log on the
// other, and a DELETE through either ends the session for both. (The
// store's own suite and failovers on both: pkg/sessionstore.)
func TestFrontendsOnRedisModes(t *testing.T) {
	for _, mode := range []string{"cluster", "sentinel"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var url string
			if mode == "cluster" {
				url = testenv.StartRedisCluster(t).URL()
			} else {
				url = testenv.StartRedisSentinel(t).URL()
			}
			c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 1, RedisURL: url, RedisMode: mode})
			a := testenv.NewClient(t, c.URLs[0])
			a.Initialize(nil)
			b := testenv.NewClient(t, c.URLs[1])
			b.SessionID, b.ProtocolVersion = a.SessionID, a.ProtocolVersion
			b.Call(2, "tools/list", nil)

			s := a.PostStream(testenv.Request(3, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}, "_meta": map[string]any{"progressToken": 3}}), nil)
			if !strings.HasPrefix(s.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatal("the sleep did not answer with a stream")
			}
			msgs, ids, ended := s.Rest(10 * time.Second)
			if !ended || responseOf(msgs) == nil || len(ids) < 3 {
				t.Fatalf("POST stream: ended %v, ids %v, %d messages", ended, ids, len(msgs))
			}
			rs := b.OpenGet(map[string]string{"Last-Event-ID": ids[1]})
			if rs.Status != 200 {
				t.Fatalf("resume on the other frontend: HTTP %d %s", rs.Status, rs.Body)
			}
			replay, got, ended := rs.Rest(10 * time.Second)
			if resp := responseOf(replay); !ended || resp == nil || !strings.Contains(string(resp.Result), "slept") || got[0] != ids[2] {
				t.Fatalf("replay on the other frontend: ended %v, ids %v (want from %s), %+v", ended, got, ids[2], replay)
			}

			if r := b.Do("DELETE", c.URLs[1], nil, nil); r.Status != 200 && r.Status != 204 {
				t.Fatalf("DELETE: %s", r.Body)
			}
			if r := a.Post(testenv.Request(4, "ping", nil), nil); r.Status != 404 {
				t.Fatalf("ping after the DELETE through the other frontend: HTTP %d, want 404", r.Status)
			}
		})
	}
}
