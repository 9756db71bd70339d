package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

func TestSessionCount(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, Options{MaxSessionsPerPrincipal: 2, SessionTTL: time.Minute})
	now := time.Now()
	for _, s := range []string{"a", "b"} {
		if l.SessionCapReached(ctx, "p", now) {
			t.Fatalf("cap reached before session %s", s)
		}
		if err := l.CountSession(ctx, "p", s, now); err != nil {
			t.Fatal(err)
		}
	}
	if !l.SessionCapReached(ctx, "p", now) {
		t.Fatal("cap not reached at 2 of 2")
	}
	if err := l.CountSession(ctx, "p", "c", now); !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("a third session: %v", err)
	}
	if l.SessionCapReached(ctx, "q", now) || l.CountSession(ctx, "q", "x", now) != nil {
		t.Fatal("another principal shares the count")
	}
	l.UncountSession(ctx, "p", "a", now)
	if l.SessionCapReached(ctx, "p", now) {
		t.Fatal("an uncounted session still counts")
	}
	if err := l.CountSession(ctx, "p", "c", now); err != nil {
		t.Fatal(err)
	}
	// A session is forgotten SessionTTL after its creation.
	later := now.Add(time.Minute + time.Millisecond)
	if l.SessionCapReached(ctx, "p", later) {
		t.Fatal("expired sessions still count")
	}
	if err := l.CountSession(ctx, "p", "d", later); err != nil {
		t.Fatal(err)
	}
}

func TestSessionCountOff(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	l := newLimiter(t, Options{Store: st, MaxSessionsPerPrincipal: -1})
	for i := range 5 {
		if err := l.CountSession(ctx, "p", fmt.Sprint(i), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if l.SessionCapReached(ctx, "p", time.Now()) {
		t.Fatal("the cap is off")
	}
	if _, _, err := st.GetRecord(ctx, SessionsKey("p")); err == nil {
		t.Fatal("a count was kept with the cap off")
	}
	on := newLimiter(t, Options{Store: st, MaxSessionsPerPrincipal: 1})
	for i := range 3 {
		if err := on.CountSession(ctx, "", fmt.Sprint(i), time.Now()); err != nil {
			t.Fatal("sessions without a principal are not counted:", err)
		}
	}
}

func TestSessionCountConcurrent(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, Options{MaxSessionsPerPrincipal: 5})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() { errs <- l.CountSession(ctx, "p", fmt.Sprint(i), time.Now()) })
	}
	wg.Wait()
	close(errs)
	ok, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrTooManySessions):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if ok != 5 || refused != 15 {
		t.Fatalf("%d counted, %d refused; want 5 and 15", ok, refused)
	}
}

func TestCheckSizes(t *testing.T) {
	l := newLimiter(t, Options{MaxStringBytes: 10, MaxArrayLen: 3})
	long := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"xxxxxxxxxxxxxxxx"}}`
	many := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":[1,2,3,4]}}`
	answer := `{"jsonrpc":"2.0","id":1,"result":{"data":"xxxxxxxxxxxxxxxxxxxxxxx"}}`
	for _, c := range []struct {
		body string
		fail bool
	}{{long, true}, {many, true}, {answer, false}, {`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false}} {
		msg, err := protocol.Decode([]byte(c.body), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.CheckSizes(msg, []byte(c.body)); (err != nil) != c.fail {
			t.Errorf("%s: err = %v, want failure %v", c.body, err, c.fail)
		}
	}
}

func TestSubscriptionRoom(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	l := newLimiter(t, Options{Store: st, MaxSubscriptionsPerSession: 2})
	sess := newSession(t, st)
	uri := func(u string) *string { return &u }
	if e := l.SubscriptionRoom(ctx, sess, nil); e != nil {
		t.Fatal("a missing uri is the worker's to answer:", e)
	}
	long := make([]byte, MaxURILen+1)
	for i := range long {
		long[i] = 'a'
	}
	if e := l.SubscriptionRoom(ctx, sess, uri(string(long))); e == nil || e.Code != protocol.CodeInvalidParams {
		t.Fatalf("a uri over MaxURILen: %v", e)
	}
	for _, u := range []string{"file:///a", "file:///b"} {
		if e := l.SubscriptionRoom(ctx, sess, uri(u)); e != nil {
			t.Fatal(e)
		}
		if err := st.Subscribe(ctx, sess, u); err != nil {
			t.Fatal(err)
		}
	}
	if e := l.SubscriptionRoom(ctx, sess, uri("file:///c")); e == nil || e.Code != protocol.CodeInvalidParams {
		t.Fatalf("a third subscription of 2: %v", e)
	}
	if e := l.SubscriptionRoom(ctx, sess, uri("file:///a")); e != nil {
		t.Fatal("an existing subscription needs no room:", e)
	}
	if e := l.SubscriptionRoom(ctx, "unknown-session", uri("file:///c")); e != nil {
		t.Fatal("a store error passes:", e)
	}
	off := newLimiter(t, Options{Store: st, MaxSubscriptionsPerSession: -1})
	if e := off.SubscriptionRoom(ctx, sess, uri("file:///c")); e != nil {
		t.Fatal("the cap is off:", e)
	}
}

// newSession stores a session and returns its id.
func newSession(t *testing.T, st *sessionstore.Memory) string {
	t.Helper()
	s := &sessionstore.Session{ID: sessionstore.NewID(), ProtocolVersion: "2025-11-25", Initialized: true}
	if err := st.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s.ID
}
