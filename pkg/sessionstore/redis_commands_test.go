package sessionstore

import (
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/loadgen"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestRedisCommandsPerCall counts the commands Redis runs, those of the
// scripts included (INFO commandstats), for the calls of a legacy
// request: Begin and End (a tools/call), Get (the others). A busy
// session's reads slide its keys once per slideSlack, not per read (the
// three PEXPIRE), and a claim is one key, not also a member of a set.
func TestRedisCommandsPerCall(t *testing.T) {
	t.Setenv(testutil.RedisURLEnv, "") // a private server: only this test counted
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{TTL: time.Hour})
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	end := func(rid, token string) {
		t.Helper()
		if err := r.End(t.Context(), s.ID, rid, token); err != nil {
			t.Fatal(err)
		}
	}
	// Load the scripts and cache the record (kept from its second read).
	for i := range 3 {
		mustBegin(t, r, s.ID, "warm", strconv.Itoa(i), time.Minute)
		end("warm", strconv.Itoa(i))
	}
	mustBegin(t, r, s.ID, "busy", "b", time.Minute)
	if _, err := r.Get(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}

	const n = 50
	cases := []struct {
		name string
		call func(i int)
		want map[string]int64 // per call, PEXPIRE aside
	}{
		{"Begin and End", func(i int) {
			rid, token := strconv.Itoa(i), "t"+strconv.Itoa(i)
			mustBegin(t, r, s.ID, rid, token, time.Minute)
			end(rid, token)
		}, map[string]int64{"evalsha": 2, "pttl": 1, "hmget": 1, "set": 1, "get": 1, "del": 1}},
		{"Begin in flight", func(int) {
			if _, err := r.Begin(t.Context(), s.ID, "busy", "other", time.Minute); err == nil {
				t.Fatal("Begin of a claimed id succeeded")
			}
		}, map[string]int64{"evalsha": 1, "pttl": 1, "hmget": 1, "set": 1, "get": 1}},
		{"Get", func(int) {
			if _, err := r.Get(t.Context(), s.ID); err != nil {
				t.Fatal(err)
			}
		}, map[string]int64{"evalsha": 1, "pttl": 1, "hmget": 1}},
	}
	for _, tc := range cases {
		before, err := loadgen.ReadRedisCounters(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range n {
			tc.call(i)
		}
		elapsed := time.Since(start)
		after, err := loadgen.ReadRedisCounters(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		got := after.Sub(before).Calls
		for _, c := range []string{"hello", "client", "ping", "auth", "info"} {
			delete(got, c) // a connection's set-up, the samples
		}
		pexpire := got["pexpire"]
		delete(got, "pexpire")
		want := map[string]int64{}
		for c, k := range tc.want {
			want[c] = k * n
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s, %d times: commands %v, want %v", tc.name, n, got, want)
		}
		// Three keys per slide, at most one slide per slack.
		if most := 3 * (1 + int64(elapsed/slideSlack(time.Hour))); pexpire%3 != 0 || pexpire > most {
			t.Errorf("%s, %d times in %v: %d PEXPIRE, want a multiple of 3, at most %d", tc.name, n, elapsed, pexpire, most)
		}
	}
}

// TestRedisClaimsOfOlderVersions checks the claims of a frontend of the
// previous layout on the same Redis (a rolling upgrade): the token alone
// in the claim key, listed in rq. Begin takes one as live whatever the
// record, End releases it only for its token, and Delete deletes it with
// the set.
func TestRedisClaimsOfOlderVersions(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{TTL: time.Hour})
	c := rawClient(t, url)
	ctx := t.Context()
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	old := func(rid, token string) string {
		t.Helper()
		k := r.claimKey(s.ID, rid)
		if err := c.Set(ctx, k, token, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(ctx, r.claimsKey(s.ID), redis.Z{Score: 1, Member: digest(rid)}).Err(); err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := old("1", "old-token")
	if _, err := r.Begin(ctx, s.ID, "1", "new-token", time.Minute); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Begin over an older version's claim: %v, want ErrInFlight", err)
	}
	if err := r.End(ctx, s.ID, "1", "new-token"); err != nil {
		t.Fatal(err)
	}
	if got := c.Get(ctx, k).Val(); got != "old-token" {
		t.Fatalf("End of another token changed an older version's claim: %q", got)
	}
	if err := r.End(ctx, s.ID, "1", "old-token"); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, k).Val(); n != 0 {
		t.Fatalf("End of its token left an older version's claim")
	}
	mustBegin(t, r, s.ID, "1", "new-token", time.Minute)

	k = old("2", "old-token")
	if err := r.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, k, r.claimsKey(s.ID)).Val(); n != 0 {
		t.Errorf("Delete left an older version's claim or its rq set")
	}
}
