package sessionstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// The Redis store on a real Redis Cluster and a real Sentinel set-up:
// each test starts its set-up once and runs on it, one after the other,
// the whole store suite (as TestRedis on one server), the WaitReplicas
// checks, then the failover tests, which kill masters (see
// redis_failover_test.go).

// openModeForTest opens a store of mode on url under ro.KeyPrefix (a
// prefix of its own when empty) and closes it in t.Cleanup.
func openModeForTest(t testing.TB, mode sessionstore.RedisMode, url string, ro sessionstore.RedisOptions) *sessionstore.Redis {
	t.Helper()
	ro.Mode = mode
	if ro.KeyPrefix == "" {
		ro.KeyPrefix = testutil.UniquePrefix(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testenv.HangGuard(30*time.Second))
	defer cancel()
	r, err := sessionstore.OpenRedis(ctx, url, &ro)
	if err != nil {
		t.Fatalf("OpenRedis(%s): %v", mode, err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func runSuiteOn(t *testing.T, mode sessionstore.RedisMode, url string) {
	sessionstore.RunStoreSuite(t, func(t *testing.T, opts sessionstore.Options) sessionstore.Store {
		return openModeForTest(t, mode, url, sessionstore.RedisOptions{Options: opts})
	})
}

func TestRedisCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t)
	url := c.URL()
	t.Run("Suite", func(t *testing.T) { runSuiteOn(t, sessionstore.RedisCluster, url) })
	t.Run("WaitReplicas", func(t *testing.T) { testWaitReplicas(t, sessionstore.RedisCluster, url, 1) })
	t.Run("CountSessions", func(t *testing.T) {
		testCountSessions(t, func(t *testing.T, ro sessionstore.RedisOptions) *sessionstore.Redis {
			return openModeForTest(t, sessionstore.RedisCluster, url, ro)
		})
	})
	target := failoverTarget{
		name: "cluster", mode: sessionstore.RedisCluster, url: url,
		kill:         func(t *testing.T) int { return c.KillMaster(t, 0) },
		waitFailover: func(t *testing.T, node int) { c.WaitFailover(t, node) },
		restart:      func(t *testing.T, node int) { c.Restart(t, node) },
	}
	t.Run("Failover", func(t *testing.T) { runFailovers(t, target) })
}

func TestRedisSentinel(t *testing.T) {
	s := testenv.StartRedisSentinel(t)
	url := s.URL()
	t.Run("Suite", func(t *testing.T) { runSuiteOn(t, sessionstore.RedisSentinel, url) })
	t.Run("WaitReplicas", func(t *testing.T) { testWaitReplicas(t, sessionstore.RedisSentinel, url, 1) })
	t.Run("CountSessions", func(t *testing.T) {
		testCountSessions(t, func(t *testing.T, ro sessionstore.RedisOptions) *sessionstore.Redis {
			return openModeForTest(t, sessionstore.RedisSentinel, url, ro)
		})
	})
	target := failoverTarget{
		name: "sentinel", mode: sessionstore.RedisSentinel, url: url,
		kill:         func(t *testing.T) int { return s.KillMaster(t) },
		waitFailover: func(t *testing.T, node int) { s.WaitFailover(t, node) },
		restart:      func(t *testing.T, node int) { s.Restart(t, node) },
	}
	t.Run("Failover", func(t *testing.T) { runFailovers(t, target) })
}

// testWaitReplicas checks RedisOptions.WaitReplicas on a set-up whose
// masters have replicas replicas each: waiting for them, every write
// succeeds; waiting for one more, every write fails with
// ErrNotReplicated within WaitTimeout, but is applied (the master has
// it), and reads do not wait.
func testWaitReplicas(t *testing.T, mode sessionstore.RedisMode, url string, replicas int) {
	prefix := testutil.UniquePrefix(t)
	ctx := t.Context()
	ok := openModeForTest(t, mode, url, sessionstore.RedisOptions{KeyPrefix: prefix, WaitReplicas: replicas})
	s := &sessionstore.Session{ID: sessionstore.NewID()}
	if err := ok.Create(ctx, s); err != nil {
		t.Fatalf("Create waiting for %d replicas: %v", replicas, err)
	}
	writes := []struct {
		name string
		call func(st sessionstore.Store) error
	}{
		{"Create", func(st sessionstore.Store) error {
			return st.Create(ctx, &sessionstore.Session{ID: sessionstore.NewID()})
		}},
		{"Get", func(st sessionstore.Store) error { _, err := st.Get(ctx, s.ID); return err }},
		{"Subscribe", func(st sessionstore.Store) error { return st.Subscribe(ctx, s.ID, "file:///a") }},
		{"AppendEvent", func(st sessionstore.Store) error { _, err := st.AppendEvent(ctx, s.ID, "s", []byte(`{}`)); return err }},
		{"AppendOnce", func(st sessionstore.Store) error {
			_, err := st.AppendOnce(ctx, []sessionstore.OnceAppend{
				{Session: s.ID, Stream: "s", Key: sessionstore.NewID(), Data: []byte(`{}`)},
				{Session: s.ID, Stream: "t", Key: sessionstore.NewID(), Data: []byte(`{}`)},
			})
			return err
		}},
		{"UseOnce", func(st sessionstore.Store) error { return st.UseOnce(ctx, sessionstore.NewID(), time.Minute) }},
		{"CreateRecord", func(st sessionstore.Store) error {
			return st.CreateRecord(ctx, sessionstore.NewID(), []byte("x"), time.Minute)
		}},
	}
	for _, w := range writes {
		if err := w.call(ok); err != nil {
			t.Errorf("%s waiting for %d replicas: %v", w.name, replicas, err)
		}
	}
	if err := ok.CreateRecord(ctx, "rec", []byte("x"), time.Minute); err != nil {
		t.Fatal(err)
	}

	const timeout = 200 * time.Millisecond
	short := openModeForTest(t, mode, url, sessionstore.RedisOptions{KeyPrefix: prefix, WaitReplicas: replicas + 1, WaitTimeout: timeout})
	for _, w := range writes {
		start := time.Now()
		err := w.call(short)
		if took := time.Since(start); !errors.Is(err, sessionstore.ErrNotReplicated) || took > testenv.HangGuard(5*timeout) {
			t.Errorf("%s waiting for %d replicas: error %v after %v, want ErrNotReplicated after about %v", w.name, replicas+1, err, took, timeout)
		}
	}
	if got, err := ok.Subscriptions(ctx, s.ID); err != nil || len(got) != 1 {
		t.Errorf("Subscriptions after the unreplicated Subscribe: %q, %v; want it applied", got, err)
	}
	reads := []struct {
		name string
		call func() error
	}{
		{"EventsAfter", func() error { _, err := short.EventsAfter(ctx, s.ID, "s", 0); return err }},
		{"Subscriptions", func() error { _, err := short.Subscriptions(ctx, s.ID); return err }},
		{"Subscribers", func() error { _, err := short.Subscribers(ctx, "file:///a"); return err }},
		{"GetRecord", func() error { _, _, err := short.GetRecord(ctx, "rec"); return err }},
		{"Ping", func() error { return short.Ping(ctx) }},
	}
	for _, r := range reads {
		if err := r.call(); err != nil {
			t.Errorf("%s waiting for %d replicas: %v; reads do not wait", r.name, replicas+1, err)
		}
	}
}
