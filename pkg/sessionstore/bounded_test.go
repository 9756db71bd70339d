package sessionstore_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// A call whose context has no deadline ends within the store's own bound
// (Bounded) when the server stops answering: here a real redis-server
// stopped with SIGSTOP, on a URL that turns go-redis's own read and write
// timeouts off (read_timeout=-1), so that nothing else ends the call. It
// holds for a call sent alone, for calls sharing a pipeline, and without
// batching.
func TestRedisCallsWithoutDeadlineAreBounded(t *testing.T) {
	proc, url := testenv.StartRedisServer(t)
	url += "?read_timeout=-1&write_timeout=-1"
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			r, err := sessionstore.OpenRedis(t.Context(), url, &sessionstore.RedisOptions{Options: sessionstore.Options{TTL: time.Hour}, KeyPrefix: testutil.UniquePrefix(t), NoBatching: !batched})
			if err != nil {
				t.Fatalf("OpenRedis: %v", err)
			}
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			if _, ok := sessionstore.Store(r).(sessionstore.Bounded); !ok {
				t.Fatal("the Redis store is not Bounded")
			}
			bound := sessionstore.CallTimeout
			if batched {
				bound = 300 * time.Millisecond
				r.SetCallTimeout(bound)
			}
			s := &sessionstore.Session{ID: sessionstore.NewID(), ProtocolVersion: "2025-11-25", Initialized: true}
			if err := r.Create(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			if err := proc.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := proc.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			}()
			// Three calls at once (a lone one, then a pipeline when
			// batched), none with a deadline.
			const n = 3
			errs := make(chan error, n)
			for i := range n {
				go func() {
					_, err := r.Begin(context.Background(), s.ID, fmt.Sprintf("bounded-%d", i), "tok", time.Minute)
					errs <- err
				}()
			}
			guard := time.After(bound + 10*time.Second) // a hang guard, not the bound under test
			for range n {
				select {
				case err := <-errs:
					if err == nil {
						t.Error("Begin succeeded against a stopped server")
					}
				case <-guard:
					t.Fatalf("Begin without a deadline still waits %v after the store's bound of %v", bound+10*time.Second, bound)
				}
			}
		})
	}
}
