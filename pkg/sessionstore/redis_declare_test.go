package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The calls whose scripts are given keys named by the session's data
// (redis_declare.go): their round trips, and their runs again when the
// data changed between two of them.

// evalHook calls before with the SHA of each EVALSHA a client sends on
// its own (not in a pipeline); an error fails the command unsent.
type evalHook struct{ before func(sha string) error }

func (h evalHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h evalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && strings.EqualFold(fmt.Sprint(a[0]), "evalsha") {
			if err := h.before(fmt.Sprint(a[1])); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (h evalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// newHookedRedis returns a store on a client of its own with hooks, its
// scripts loaded (so that each call is one command).
func newHookedRedis(t *testing.T, url string, opts Options, hooks ...redis.Hook) *Redis {
	t.Helper()
	c := rawClient(t, url)
	for _, s := range []*redis.Script{scriptCreate, scriptDelete, scriptAppend, scriptSweep, scriptEndStream, scriptBegin} {
		if err := s.Load(t.Context(), c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hooks {
		c.AddHook(h)
	}
	r, err := NewRedis(c, &RedisOptions{Options: opts, KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// sessionKeys returns the keys of session id left in Redis.
func sessionKeys(t *testing.T, c *redis.Client, r *Redis, id string) []string {
	t.Helper()
	keys, err := c.Keys(t.Context(), r.prefix+":{"+id+"}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// wantOnlyClaimsLeft checks that, after a Delete, the keys left of
// session id are the claims on requestIDs made by Begin (which go with
// their End or expire on their own; Delete releases them by the record's
// generation, see lua/begin.lua) and that they are no longer live: the
// session, created again, can claim each id.
func wantOnlyClaimsLeft(t *testing.T, c *redis.Client, r *Redis, id string, requestIDs ...string) {
	t.Helper()
	var want []string
	for _, rid := range requestIDs {
		want = append(want, r.claimKey(id, rid))
	}
	keys := sessionKeys(t, c, r, id)
	if !slices.Equal(slices.Sorted(slices.Values(keys)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("keys left after Delete: %q, want only the claims %q", keys, want)
	}
	mustCreate(t, r, &Session{ID: id})
	for _, rid := range requestIDs {
		mustBegin(t, r, id, rid, "again", time.Minute)
	}
}

func TestRedisDeclaredRoundTrips(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	var calls atomic.Int64
	r := newHookedRedis(t, url, Options{TTL: time.Hour}, countHook{&calls})
	c := rawClient(t, url)
	ctx := t.Context()
	s := &Session{ID: NewID()}
	leftover := NewID()
	base := r.prefix + ":{" + leftover + "}:"
	c.HSet(ctx, base+"streams", "s", 3)
	c.RPush(ctx, base+"ev:s", "stale")
	steps := []struct {
		name  string
		trips int64
		call  func() error
	}{
		{"Create of a new id", 1, func() error { return r.Create(ctx, s) }},
		{"first stream", 1, func() error { _, err := r.AppendEvent(ctx, s.ID, "a", nil); return err }},
		{"second stream, none ended", 1, func() error { _, err := r.AppendEvent(ctx, s.ID, "b", nil); return err }},
		{"next append", 1, func() error { _, err := r.AppendEvent(ctx, s.ID, "a", nil); return err }},
		{"EndStream", 1, func() error { return r.EndStream(ctx, s.ID, "a") }},
		{"new stream with an ended one: swept", 2, func() error { _, err := r.AppendEvent(ctx, s.ID, "c", nil); return err }},
		{"Begin", 1, func() error { _, err := r.Begin(ctx, s.ID, "1", "t", time.Hour); return err }},
		{"Delete of a session with streams and a claim", 2, func() error { return r.Delete(ctx, s.ID) }},
		{"Delete of an unknown id", 1, func() error {
			if err := r.Delete(ctx, NewID()); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("got %v, want ErrNotFound", err)
			}
			return nil
		}},
		{"Create over leftovers", 2, func() error { return r.Create(ctx, &Session{ID: leftover}) }},
	}
	for _, step := range steps {
		calls.Store(0)
		if err := step.call(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := calls.Load(); n != step.trips {
			t.Errorf("%s: %d round trips, want %d", step.name, n, step.trips)
		}
	}
	wantOnlyClaimsLeft(t, c, r, s.ID, "1")
	if got := c.LRange(ctx, base+"ev:s", 0, -1).Val(); len(got) != 0 {
		t.Errorf("leftover log kept by Create: %q", got)
	}
}

// TestRedisDeleteRunsAgain: a stream and a claim that appear between
// Delete's two runs are found by the second, which then deletes nothing,
// and deleted by a third, with everything else, in one step.
func TestRedisDeleteRunsAgain(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	var r *Redis
	var runs atomic.Int64
	var id string
	r = newHookedRedis(t, url, Options{TTL: time.Hour}, evalHook{func(sha string) error {
		if sha != scriptDelete.Hash() || runs.Add(1) != 2 {
			return nil
		}
		ctx := context.Background()
		base := r.prefix + ":{" + id + "}:"
		// A claim as older versions made them, listed in rq.
		set, claim, member := r.claimsKey(id), r.claimKey(id, "late"), digest("late")
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, base+"streams", "late", 1)
			p.RPush(ctx, base+"ev:late", "{}")
			p.ZAdd(ctx, r.onceKey(id, "late"), redis.Z{Score: 1, Member: "k"})
			p.Set(ctx, claim, "t", time.Hour)
			p.ZAdd(ctx, set, redis.Z{Score: 1, Member: member})
			return nil
		})
		return err
	}})
	s := &Session{ID: NewID()}
	id = s.ID
	mustCreate(t, r, s)
	mustAppend(t, r, s.ID, "a", "{}")
	mustBegin(t, r, s.ID, "1", "t", time.Hour)
	if err := r.Delete(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("delete.lua ran %d times, want 3", n)
	}
	wantOnlyClaimsLeft(t, c, r, s.ID, "1")
}

// TestRedisSweepRunsAgain: a stream started between the append and its
// sweep is counted, declared in a second run and weighed with the others.
func TestRedisSweepRunsAgain(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	var r *Redis
	var runs atomic.Int64
	var id string
	r = newHookedRedis(t, url, Options{TTL: time.Hour, MaxStreamsPerSession: 2}, evalHook{func(sha string) error {
		if sha != scriptSweep.Hash() || runs.Add(1) != 1 {
			return nil
		}
		ctx := context.Background()
		base := r.prefix + ":{" + id + "}:"
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, base+"streams", "late", 1)
			p.RPush(ctx, base+"ev:late", "{}")
			p.PExpire(ctx, base+"ev:late", 2*time.Hour) // expires last: kept
			return nil
		})
		return err
	}})
	s := &Session{ID: NewID()}
	id = s.ID
	mustCreate(t, r, s)
	mustAppend(t, r, s.ID, "a", "{}")
	mustAppend(t, r, s.ID, "b", "{}")
	mustAppend(t, r, s.ID, "c", "{}") // beyond the cap: a and b named
	if n := runs.Load(); n != 2 {
		t.Errorf("sweep.lua ran %d times, want 2", n)
	}
	wantPurged(t, r, s.ID, "a", 1)
	wantPurged(t, r, s.ID, "b", 1)
	wantEvents(t, r, s.ID, "c", 0, 1)
	wantEvents(t, r, s.ID, "late", 0, 1)
	if n := streamCount(t, r, s.ID); n != 2 {
		t.Errorf("%d streams after the sweep, want 2 (c, late)", n)
	}
}

// TestRedisSweepFails: an append whose sweep fails is made all the same;
// the next stream's sweep takes all the excess.
func TestRedisSweepFails(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	var fail atomic.Bool
	r := newHookedRedis(t, url, Options{TTL: time.Hour, MaxStreamsPerSession: 2}, evalHook{func(sha string) error {
		if sha == scriptSweep.Hash() && fail.Load() {
			return errors.New("injected failure")
		}
		return nil
	}})
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	mustAppend(t, r, s.ID, "a", "{}")
	mustAppend(t, r, s.ID, "b", "{}")
	fail.Store(true)
	for _, name := range []string{"c", "d"} {
		clockTick(t, time.Now()) // the logs' expiries differ
		if idx := mustAppend(t, r, s.ID, name, "{}"); idx != 1 {
			t.Fatalf("append to %s: index %d, want 1", name, idx)
		}
	}
	if n := streamCount(t, r, s.ID); n != 4 {
		t.Fatalf("%d streams after two failed sweeps, want 4", n)
	}
	fail.Store(false)
	clockTick(t, time.Now())
	mustAppend(t, r, s.ID, "e", "{}")
	if n := streamCount(t, r, s.ID); n != 2 {
		t.Errorf("%d streams after a sweep, want 2", n)
	}
	wantEvents(t, r, s.ID, "d", 0, 1)
	wantEvents(t, r, s.ID, "e", 0, 1)
	wantPurged(t, r, s.ID, "c", 1)
}
