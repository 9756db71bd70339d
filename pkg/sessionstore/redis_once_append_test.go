package sessionstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestRedisAppendOnceRoundTrips checks that AppendOnce sends a whole
// batch in one round trip, and one more when the server lacks the script
// (NOSCRIPT), whose calls then still all run, once.
func TestRedisAppendOnceRoundTrips(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	var calls atomic.Int64
	c.AddHook(countHook{&calls})
	r, err := NewRedis(c, &RedisOptions{KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	a, b := &Session{ID: NewID()}, &Session{ID: NewID()}
	mustCreate(t, r, a)
	mustCreate(t, r, b)
	mustAppend(t, r, a.ID, "gs", "start")
	mustAppend(t, r, b.ID, "gs", "start")

	next := 2 // a's next index
	batch := func(n int) []OnceAppend {
		var out []OnceAppend
		for range n {
			out = append(out, oa(a.ID, "gs", NewID(), "{}"), oa(b.ID, "gs", NewID(), "{}"))
		}
		return out
	}
	steps := []struct {
		name  string
		flush bool // SCRIPT FLUSH first
		batch []OnceAppend
		trips int64 // -1: not checked (the client may dial)
	}{
		{"first batch: the script is loaded", false, batch(2), -1},
		{"a batch", false, batch(5), 1},
		{"a lone message", false, batch(1)[:1], 1},
		{"no valid session", false, []OnceAppend{oa("a{b}", "gs", "k", "{}")}, 0},
		{"after SCRIPT FLUSH", true, batch(3), 2},
	}
	for _, step := range steps {
		if step.flush {
			if err := rawClient(t, url).ScriptFlush(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		calls.Store(0)
		got, err := r.AppendOnce(t.Context(), step.batch)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := calls.Load(); step.trips >= 0 && n != step.trips {
			t.Errorf("%s: %d round trips, want %d", step.name, n, step.trips)
		}
		for i, res := range got {
			if step.batch[i].Session == a.ID {
				if res.Status != Appended || res.Index != uint64(next) {
					t.Errorf("%s: message %d: %+v, want appended at %d", step.name, i, res, next)
				}
				next++
			} else if step.batch[i].Session != b.ID && res.Status != NoSession {
				t.Errorf("%s: message %d: %+v, want NoSession", step.name, i, res)
			}
		}
	}
	wantEvents(t, r, a.ID, "gs", 0, next-1)
}

// TestRedisOnceSetExpiry checks that the once set has the log's expiry:
// the session's TTL (with the slack) on each append, the grace once the
// stream ended.
func TestRedisOnceSetExpiry(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	const ttl, grace = time.Hour, 10 * time.Minute
	r := openRedisForTest(t, url, Options{TTL: ttl, EndedStreamGrace: grace})
	c := rawClient(t, url)
	ctx := t.Context()
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	mustAppend(t, r, s.ID, "gs", "start")
	checkOnce(t, r, "k1", []OnceAppend{oa(s.ID, "gs", "k1", "{}")}, res(Appended, 2))
	once, log := r.onceKey(s.ID, "gs"), r.prefix+":{"+s.ID+"}:ev:gs"
	check := func(step string, min, max time.Duration) {
		t.Helper()
		for _, k := range []string{once, log} {
			if d := c.PTTL(ctx, k).Val(); d < min || d > max {
				t.Errorf("%s: PTTL %s = %v, want in [%v, %v]", step, k, d, min, max)
			}
		}
	}
	most := ttl + slideSlack(ttl) // an append slides to the TTL plus the slack
	check("appended", grace+time.Minute, most)
	if err := r.EndStream(ctx, s.ID, "gs"); err != nil {
		t.Fatal(err)
	}
	check("ended", time.Millisecond, grace)
	mustAppend(t, r, s.ID, "gs", "reopened") // a plain append extends both
	check("reopened", grace+time.Minute, most)
}
