package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/redis/go-redis/v9"
)

// target is one deployment under test.
type target struct {
	name string
	urls []string
	// sessions counts stored sessions; nil when the store is not visible.
	sessions func(t *testing.T) int
	// clientInfo returns the stored clientInfo name and protocol version of
	// a session; nil when the store is not visible.
	record func(t *testing.T, id string) (clientName, version string)
	// logs returns what the workers logged so far.
	logs func() string
	// cluster is set for the multi-process target.
	cluster *testenv.Cluster
}

func (tg *target) client(t *testing.T) *testenv.Client {
	return testenv.NewClient(t, tg.urls...)
}

// startTargets starts the three deployments. extra frontend/all-in-one
// args apply to all of them.
func startTargets(t *testing.T, args ...string) []*target {
	t.Helper()
	var out []*target

	aio, url := testenv.StartMCPFleet(t, append([]string{"--fixture", "conformance"}, args...)...)
	out = append(out, &target{name: "all-in-one", urls: []string{url}, logs: aio.Log})

	ip := testenv.StartInProc(t, testenv.InProcOptions{Store: storeOptions(t, args)})
	out = append(out, &target{
		name: "in-process",
		urls: []string{ip.URL},
		logs: ip.Logs.String,
		sessions: func(t *testing.T) int {
			return ip.Store.Len()
		},
		record: func(t *testing.T, id string) (string, string) {
			s, err := ip.Store.Get(context.Background(), id)
			if err != nil {
				t.Fatalf("store: %v", err)
			}
			return s.ClientInfo.Name, s.ProtocolVersion
		},
	})

	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 1, FrontendArgs: args})
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	store, err := sessionstore.NewRedis(rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	out = append(out, &target{
		name:    "cluster",
		urls:    c.URLs,
		cluster: c,
		logs: func() string {
			var b strings.Builder
			for _, w := range c.Workers {
				b.WriteString(w.Log())
			}
			return b.String()
		},
		sessions: func(t *testing.T) int {
			keys, err := rdb.Keys(context.Background(), "mcp:{*}:rec").Result()
			if err != nil {
				t.Fatalf("redis: %v", err)
			}
			return len(keys)
		},
		record: func(t *testing.T, id string) (string, string) {
			s, err := store.Get(context.Background(), id)
			if err != nil {
				t.Fatalf("store: %v", err)
			}
			return s.ClientInfo.Name, s.ProtocolVersion
		},
	})
	return out
}

func storeOptions(t *testing.T, args []string) sessionstore.Options {
	var o sessionstore.Options
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--session-ttl" {
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			o.TTL = d
		}
	}
	return o
}
