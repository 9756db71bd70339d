package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/loadgen"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// endOp is a batched End of requestID's claim in session id, as Redis.End
// queues it.
func endOp(ctx context.Context, r *Redis, id, requestID, token string) *batchOp {
	return &batchOp{ctx: ctx, script: scriptEnd, keys: r.endKeys(id, requestID), args: []any{token}, done: make(chan struct{}, 1)}
}

// claimedSession is a store on a shared Redis and a session of it with
// each of requestIDs claimed, with the token "t" + the request id.
func claimedSession(t *testing.T, requestIDs ...string) (*Redis, *Session) {
	t.Helper()
	r := openRedisForTest(t, testutil.StartRedis(t), Options{TTL: time.Hour})
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	for _, rid := range requestIDs {
		mustBegin(t, r, s.ID, rid, "t"+rid, time.Minute)
	}
	return r, s
}

// The Ends of one pipeline go to Redis as one script call (one EVALSHA
// for all of them, beside the pipeline's other calls), and each End still
// gets its own outcome: a claim is released for its own token only. Run
// on a pipeline with the scripts loaded, then on one whose scripts Redis
// lost (SCRIPT FLUSH: a restarted Redis).
func TestRedisBatchMergesEnds(t *testing.T) {
	t.Setenv(testutil.RedisURLEnv, "") // a private server: only this test counted
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{TTL: time.Hour})
	if r.batch == nil || !r.batch.mergeEnds {
		t.Fatal("the store on one Redis does not merge its Ends")
	}
	ctx := t.Context()
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	raw := rawClient(t, url)
	// Load End's and Get's scripts.
	if err := r.End(ctx, s.ID, "warm", "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for round, flush := range []bool{false, true} {
		rids := make([]string, 4)
		for i := range rids {
			rids[i] = fmt.Sprintf("r%d-%d", round, i)
			mustBegin(t, r, s.ID, rids[i], "tok"+rids[i], time.Minute)
		}
		if flush {
			if err := raw.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		op := func(rid, token string) *batchOp { return endOp(ctx, r, s.ID, rid, token) }
		get := &batchOp{ctx: ctx, script: scriptGet, keys: r.beginKeys(s.ID, "")[:3], args: []any{r.ttlArg, r.slidArg, ""}, done: make(chan struct{}, 1)}
		ends := []*batchOp{op(rids[0], "tok"+rids[0]), op(rids[1], "tok"+rids[1]), op(rids[2], "another token"), op(rids[3], "tok"+rids[3])}
		before, err := loadgen.ReadRedisCounters(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		r.batch.exec(append([]*batchOp{ends[0], get}, ends[1:]...))
		after, err := loadgen.ReadRedisCounters(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		calls := after.Sub(before).Calls
		// The Get and the merged Ends; after a flush, both fail with
		// NOSCRIPT and are sent again on their own (EVALSHA, then EVAL,
		// which loads the script).
		want := map[string]int64{"evalsha": 2, "eval": 0}
		if flush {
			want = map[string]int64{"evalsha": 4, "eval": 2}
		}
		for c, n := range want {
			if calls[c] != n {
				t.Errorf("round %d: %d %s, want %d (commands %v)", round, calls[c], c, n, calls)
			}
		}
		if calls["get"] != 4 || calls["del"] != 3 {
			t.Errorf("round %d: %d GET and %d DEL, want 4 and 3 (commands %v)", round, calls["get"], calls["del"], calls)
		}
		if err := get.cmd.Err(); err != nil {
			t.Errorf("round %d: the Get of the pipeline: %v", round, err)
		}
		for i, e := range ends {
			v, err := e.cmd.Slice()
			wantV := int64(1)
			if i == 2 {
				wantV = 0
			}
			if err != nil || len(v) != 1 || v[0] != wantV {
				t.Errorf("round %d: End %d replied %v, %v; want [%d]", round, i, v, err, wantV)
			}
		}
		// Released: the id is free again. Held: the claim of the End with
		// another token.
		for i, rid := range rids {
			_, err := r.Begin(ctx, s.ID, rid, "again", time.Minute)
			if i == 2 {
				if !errors.Is(err, ErrInFlight) {
					t.Errorf("round %d: Begin of %s after an End with another token: %v, want ErrInFlight", round, rid, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("round %d: Begin of %s after its End: %v", round, rid, err)
			}
		}
	}
}

// An End whose caller gave up before its pipeline was sent is not part
// of the merged call, and changes nothing.
func TestRedisBatchMergedEndsSkipsDoneCalls(t *testing.T) {
	r, s := claimedSession(t, "a", "b", "c")
	ctx := t.Context()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	ops := []*batchOp{endOp(ctx, r, s.ID, "a", "ta"), endOp(gone, r, s.ID, "b", "tb"), endOp(ctx, r, s.ID, "c", "tc")}
	r.batch.exec(ops)
	if err := ops[1].cmd.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the End of a cancelled call: %v, want context.Canceled", err)
	}
	for _, i := range []int{0, 2} {
		if err := ops[i].cmd.Err(); err != nil {
			t.Errorf("End %d: %v", i, err)
		}
	}
	checkInFlight(t, r, s.ID, "b")
	for _, rid := range []string{"a", "c"} {
		if _, err := r.Begin(ctx, s.ID, rid, "again", time.Minute); err != nil {
			t.Errorf("Begin of %s after its End: %v", rid, err)
		}
	}
}

// A merged call that fails fails each of its Ends: a claim key of the
// wrong type (WRONGTYPE inside the script) is an error for every End of
// the call, none is reported released.
func TestRedisBatchMergedEndsShareAnError(t *testing.T) {
	r, s := claimedSession(t, "a")
	ctx := t.Context()
	ops := []*batchOp{endOp(ctx, r, s.ID, "bad", "tb"), endOp(ctx, r, s.ID, "a", "ta")}
	if err := r.client.HSet(ctx, ops[0].keys[0], "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	r.batch.exec(ops)
	for i, op := range ops {
		if err := op.cmd.Err(); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("End %d of the failed call: %v, want the WRONGTYPE error", i, err)
		}
	}
}
