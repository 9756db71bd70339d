package sessionstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// count is CountSessions within a few seconds, failing the test on error.
func count(t *testing.T, c sessionstore.Counter) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	n, err := c.CountSessions(ctx)
	if err != nil {
		t.Fatalf("CountSessions: %v", err)
	}
	return n
}

// createSessions creates n sessions in st and returns their ids.
func createSessions(t *testing.T, st sessionstore.Store, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		s := &sessionstore.Session{ID: sessionstore.NewID(), ProtocolVersion: "2025-11-25", Initialized: true}
		if err := st.Create(t.Context(), s); err != nil {
			t.Fatalf("Create: %v", err)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

func TestMemoryCountSessions(t *testing.T) {
	m, err := sessionstore.NewMemory(&sessionstore.Options{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	ids := createSessions(t, m, 3)
	if n := count(t, m); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
	if err := m.Delete(t.Context(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := count(t, m); n != 2 {
		t.Fatalf("count after a delete %d, want 2", n)
	}
	testutil.Poll(t, "the sessions to expire", func() bool { return count(t, m) == 0 })
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.CountSessions(done); err == nil {
		t.Error("CountSessions with a done context succeeded")
	}
}

func TestRedisCountSessions(t *testing.T) {
	url := testutil.StartRedis(t)
	testCountSessions(t, func(t *testing.T, ro sessionstore.RedisOptions) *sessionstore.Redis {
		return openModeForTest(t, sessionstore.RedisSingle, url, ro)
	})
}

// testCountSessions checks Redis.CountSessions on a deployment: exact when
// counted, only the records of the store's own prefix (not its logs,
// subscriptions and claims, nor another prefix's sessions), cached for
// CountInterval and shared with the other stores of the prefix, then
// following creations, deletions and expiry.
func testCountSessions(t *testing.T, open func(t *testing.T, ro sessionstore.RedisOptions) *sessionstore.Redis) {
	ctx := t.Context()
	prefix := testutil.UniquePrefix(t)
	a := open(t, sessionstore.RedisOptions{KeyPrefix: prefix, CountInterval: time.Hour})
	ids := createSessions(t, a, 50)
	if _, err := a.AppendEvent(ctx, ids[0], "s1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe(ctx, ids[1], "file:///x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Begin(ctx, ids[2], "1", "token", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRecord(ctx, "task-1", []byte(`{}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	createSessions(t, open(t, sessionstore.RedisOptions{KeyPrefix: prefix + "x"}), 3)
	if n := count(t, a); n != 50 {
		t.Fatalf("count %d, want 50", n)
	}
	// Cached for the interval: a new session is not in it yet, and
	// another store of the prefix (another frontend) gets the same count
	// without counting.
	createSessions(t, a, 1)
	if n := count(t, a); n != 50 {
		t.Errorf("cached count %d, want 50", n)
	}
	if n := count(t, open(t, sessionstore.RedisOptions{KeyPrefix: prefix, CountInterval: time.Hour})); n != 50 {
		t.Errorf("another store's count %d, want the shared 50", n)
	}

	// With a short interval the count follows the store.
	short := testutil.UniquePrefix(t) + "short"
	b := open(t, sessionstore.RedisOptions{KeyPrefix: short, CountInterval: 50 * time.Millisecond, Options: sessionstore.Options{TTL: time.Second}})
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.CountSessions(done); err == nil {
		t.Error("the first CountSessions with a done context succeeded")
	}
	ids = createSessions(t, b, 7)
	testutil.Poll(t, "a count of 7", func() bool { return count(t, b) == 7 })
	for _, id := range ids[:3] {
		if err := b.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Poll(t, "a count of 4 after 3 deletes", func() bool { return count(t, b) == 4 })
	testutil.Poll(t, "a count of 0 once the sessions expired", func() bool { return count(t, b) == 0 })

	off := open(t, sessionstore.RedisOptions{KeyPrefix: short, CountInterval: -1})
	if _, err := off.CountSessions(ctx); err == nil {
		t.Error("CountSessions with CountInterval off succeeded")
	}
}
