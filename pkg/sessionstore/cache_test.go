package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// twoFrontends opens two stores on the same keys, as two frontends would.
func twoFrontends(t *testing.T, opts Options) (a, b *Redis) {
	t.Helper()
	url := testutil.StartRedis(t)
	prefix := testutil.UniquePrefix(t)
	open := func() *Redis {
		r, err := OpenRedis(t.Context(), url, &RedisOptions{Options: opts, KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}
	return open(), open()
}

// A cached record is used only while Redis says it is current: an update,
// a DELETE or an expiry made through another frontend is seen by the very
// next call.
func TestRedisCacheCoherence(t *testing.T) {
	a, b := twoFrontends(t, Options{TTL: time.Hour})
	ctx := t.Context()
	s := fullSession()
	mustCreate(t, b, s)
	for range 2 { // the second read caches the record
		if _, err := a.Get(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	hits := a.cache.hits.Load()
	got := mustBegin(t, a, s.ID, "r1", "t", time.Minute)
	if a.cache.hits.Load() != hits+1 {
		t.Fatal("the second read of an unchanged record did not use the cache")
	}
	if got.LogLevel != s.LogLevel || got.ClientInfo.Name != s.ClientInfo.Name {
		t.Fatalf("cached read: %+v", got)
	}

	// An update through b: a's next Get and Begin see it.
	lvl := protocol.LoggingLevel("error")
	yes := true
	if err := b.Update(ctx, s.ID, Patch{LogLevel: &lvl, ClientInitialized: &yes}); err != nil {
		t.Fatal(err)
	}
	g, err := a.Get(ctx, s.ID)
	if err != nil || g.LogLevel != lvl || !g.ClientInitialized {
		t.Fatalf("after b's update, a.Get = %+v, %v", g, err)
	}
	if g := mustBegin(t, a, s.ID, "r2", "t", time.Minute); g.LogLevel != lvl {
		t.Fatalf("after b's update, a.Begin level = %q", g.LogLevel)
	}

	// A DELETE through b: a's next calls report ErrNotFound.
	if err := b.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a.Get after b's delete: %v", err)
	}
	if _, err := a.Begin(ctx, s.ID, "r3", "t", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a.Begin after b's delete: %v", err)
	}
	if a.cache.get(s.ID) != nil {
		t.Fatal("a deleted session stays cached")
	}
}

func TestRedisCacheSeesExpiry(t *testing.T) {
	a, b := twoFrontends(t, Options{TTL: 200 * time.Millisecond})
	ctx := t.Context()
	s := fullSession()
	mustCreate(t, b, s)
	if _, err := a.Get(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if a.cache.get(s.ID) != nil {
		t.Fatal("cached after one read; want a mark only")
	}
	if _, err := a.Get(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if a.cache.get(s.ID) == nil {
		t.Fatal("not cached after two reads")
	}
	// Wait, without touching the session, until Redis has expired its
	// record: the cache must not answer for it.
	rec, _ := a.keys(s.ID)
	testutil.Poll(t, "the record to expire in Redis", func() bool {
		n, err := a.client.Exists(ctx, rec[0]).Result()
		if err != nil {
			t.Fatalf("EXISTS: %v", err)
		}
		return n == 0
	})
	if _, err := a.Get(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a.Get after expiry: %v", err)
	}
}

func TestRecordCacheBound(t *testing.T) {
	c := newRecordCache(3)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		c.put(id, &cachedRecord{ver: "1"})
		if c.get(id) != nil {
			t.Fatalf("%s cached on its first read", id)
		}
		c.put(id, &cachedRecord{ver: "1"})
		if c.get(id) == nil {
			t.Fatalf("%s not cached on its second read", id)
		}
	}
	if c.len() != 3 {
		t.Fatalf("len = %d, want 3", c.len())
	}
	c.put("x", &cachedRecord{}) // no version: never cached
	c.put("x", &cachedRecord{})
	if c.get("x") != nil {
		t.Fatal("a record without a version was cached")
	}
	var nilCache *recordCache
	nilCache.put("a", &cachedRecord{ver: "1"})
	nilCache.put("a", &cachedRecord{ver: "1"})
	if nilCache.get("a") != nil || nilCache.len() != 0 {
		t.Fatal("a nil cache caches")
	}
}
