package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The shared suite against a store that sends every call on its own (the
// default store, with group commit, runs it in TestRedis).
func TestRedisNoBatching(t *testing.T) {
	url := testutil.StartRedis(t)
	runStoreSuite(t, func(t *testing.T, opts Options) Store {
		t.Helper()
		r, err := OpenRedis(t.Context(), url, &RedisOptions{Options: opts, KeyPrefix: testutil.UniquePrefix(t), NoBatching: true})
		if err != nil {
			t.Fatalf("OpenRedis: %v", err)
		}
		if r.batch != nil {
			t.Fatal("NoBatching store has a batcher")
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		return r
	}, realClock)
}

// Concurrent calls share pipelines, each gets its own outcome, and a
// pipeline that meets scripts missing on the server (a restarted Redis:
// SCRIPT FLUSH) still answers every call.
func TestRedisBatchedConcurrentCalls(t *testing.T) {
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{TTL: time.Hour})
	if r.batch == nil {
		t.Fatal("the default store does not batch")
	}
	raw := rawClient(t, url)
	ctx := t.Context()
	ids := make([]string, 16)
	for i := range ids {
		s := fullSession()
		s.ID = NewID()
		mustCreate(t, r, s)
		ids[i] = s.ID
	}
	for round := range 3 {
		if round > 0 {
			if err := raw.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16*40)
		for i, id := range ids {
			for j := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rid := fmt.Sprintf("r%d-%d-%d", round, i, j)
					s, err := r.Begin(ctx, id, rid, "tok", time.Minute)
					if err != nil || s.ID != id {
						errs <- fmt.Errorf("Begin(%s, %s): %v", id[:8], rid, err)
						return
					}
					// The same id again is in flight: the claim was made.
					if _, err := r.Begin(ctx, id, rid, "tok2", time.Minute); !errors.Is(err, ErrInFlight) {
						errs <- fmt.Errorf("second Begin(%s): %v, want ErrInFlight", rid, err)
					}
					if err := r.End(ctx, id, rid, "tok"); err != nil {
						errs <- fmt.Errorf("End(%s): %v", rid, err)
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	if _, err := r.Get(ctx, "no-such-session-0000000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
}

// Calls after Close fail at once; a call whose context ends while queued
// returns the context's error.
func TestRedisBatcherClose(t *testing.T) {
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	r, err := NewRedis(c, &RedisOptions{KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := fullSession()
	mustCreate(t, r, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Get(ctx, s.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := r.Get(t.Context(), s.ID); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Get after Close: %v, want redis.ErrClosed", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("a call after Close waited")
	}
	// The client was not the store's: it still works.
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
}
