package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The AppendOnce part of the EventLog suite.

// oa is an OnceAppend of data under key to (id, stream).
func oa(id, stream, key, data string) OnceAppend {
	return OnceAppend{Session: id, Stream: stream, Key: key, Data: []byte(data)}
}

// res is the result (status, index).
func res(status AppendStatus, idx uint64) OnceResult {
	return OnceResult{Index: idx, Status: status}
}

// checkOnce runs AppendOnce on batch and checks its results.
func checkOnce(t *testing.T, st Store, step string, batch []OnceAppend, want ...OnceResult) {
	t.Helper()
	got, err := st.AppendOnce(t.Context(), batch)
	if err != nil {
		t.Fatalf("%s: AppendOnce: %v", step, err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("%s: results:\n%s", step, d)
	}
}

// checkLog checks that the log of (id, stream) is exactly want, from 1.
func checkLog(t *testing.T, st Store, id, stream string, want ...string) {
	t.Helper()
	got, err := st.EventsAfter(t.Context(), id, stream, 0)
	if err != nil {
		t.Fatalf("EventsAfter(%s): %v", stream, err)
	}
	wantEvs := []Event{}
	for i, d := range want {
		wantEvs = append(wantEvs, Event{Index: uint64(i + 1), Data: []byte(d)})
	}
	if d := diff(wantEvs, got); d != "" {
		t.Errorf("the log of %s:\n%s", stream, d)
	}
}

// testAppendOnce: appends continue the log, mixed with AppendEvent; a
// key is logged once per stream; nothing is logged to a stream without a
// log or for a session that is not live.
func testAppendOnce(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustAppend(t, st, s.ID, "gs", "start") // 1
	checkOnce(t, st, "first", []OnceAppend{oa(s.ID, "gs", "k1", "one")}, res(Appended, 2))
	if idx := mustAppend(t, st, s.ID, "gs", "own"); idx != 3 {
		t.Fatalf("AppendEvent after AppendOnce: index %d, want 3", idx)
	}
	// Keys of any bytes and length.
	odd := "a}b{c:\x00☃" + strings.Repeat("k", 10000)
	checkOnce(t, st, "a new key and a known one",
		[]OnceAppend{oa(s.ID, "gs", odd, "two"), oa(s.ID, "gs", "k1", "one again")},
		res(Appended, 4), res(Duplicate, 2))
	checkOnce(t, st, "the same batch again",
		[]OnceAppend{oa(s.ID, "gs", odd, "two"), oa(s.ID, "gs", "k1", "one again")},
		res(Duplicate, 4), res(Duplicate, 2))
	// In batch order: the second of two messages with one key is the
	// duplicate.
	checkOnce(t, st, "one key twice in a batch",
		[]OnceAppend{oa(s.ID, "gs", "k3", "three"), oa(s.ID, "gs", "k3", "three bis")},
		res(Appended, 5), res(Duplicate, 5))
	checkLog(t, st, s.ID, "gs", "start", "one", "own", "two", "three")
	// A key is per stream.
	mustAppend(t, st, s.ID, "other", "start")
	checkOnce(t, st, "a key of gs on another stream",
		[]OnceAppend{oa(s.ID, "other", "k1", "one")}, res(Appended, 2))

	// A stream never started is not created.
	checkOnce(t, st, "a stream without a log",
		[]OnceAppend{oa(s.ID, "never", "k1", "x")}, res(NoLog, 0))
	checkLog(t, st, s.ID, "never")
	if n := streamCount(t, st, s.ID); n != 2 {
		t.Errorf("%d streams after a refused append, want 2", n)
	}

	// Sessions that are not live.
	for _, id := range []string{NewID(), "", "bad id", "a{b}c", strings.Repeat("a", MaxIDLen+1)} {
		checkOnce(t, st, fmt.Sprintf("unknown session %q", shortID(id)),
			[]OnceAppend{oa(id, "gs", "k9", "x")}, res(NoSession, 0))
	}
	if err := st.Delete(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, st, "a deleted session",
		[]OnceAppend{oa(s.ID, "gs", "k9", "x"), oa(s.ID, "gs", "k1", "x")}, res(NoSession, 0), res(NoSession, 0))
	if _, err := st.EventsAfter(t.Context(), s.ID, "gs", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("EventsAfter of the deleted session: %v, want ErrNotFound", err)
	}
}

// testAppendOnceArgs: an empty batch does nothing; a message without a
// key fails the call before anything is appended; a done context fails
// it.
func testAppendOnceArgs(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustAppend(t, st, s.ID, "gs", "start")
	if got, err := st.AppendOnce(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("an empty batch: %v, %v", got, err)
	}
	batch := []OnceAppend{oa(s.ID, "gs", "k1", "x"), oa(s.ID, "gs", "", "no key")}
	if got, err := st.AppendOnce(t.Context(), batch); err == nil {
		t.Errorf("a message without a key: %v, want an error", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.AppendOnce(ctx, batch[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled context: %v, want context.Canceled", err)
	}
	checkLog(t, st, s.ID, "gs", "start")
	// Nothing was remembered either.
	checkOnce(t, st, "after the failed calls", batch[:1], res(Appended, 2))
}

// testAppendOnceSubscribed: with a URI, a message is logged only while
// the session is subscribed to it; the checks come in the documented
// order.
func testAppendOnceSubscribed(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour})
	ctx := t.Context()
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	const uri = "file:///a"
	upd := func(key string) OnceAppend {
		a := oa(s.ID, "gs", key, "updated "+key)
		a.URI = uri
		return a
	}
	noLog := upd("k0")
	noLog.Stream = "never"
	checkOnce(t, st, "not subscribed, no log", []OnceAppend{noLog}, res(NotSubscribed, 0))
	mustAppend(t, st, s.ID, "gs", "start")
	checkOnce(t, st, "not subscribed", []OnceAppend{upd("k1")}, res(NotSubscribed, 0))
	if err := st.Subscribe(ctx, s.ID, "file:///other"); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, st, "subscribed to another URI", []OnceAppend{upd("k1")}, res(NotSubscribed, 0))
	if err := st.Subscribe(ctx, s.ID, uri); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, st, "subscribed", []OnceAppend{upd("k1"), upd("k1"), noLog}, res(Appended, 2), res(Duplicate, 2), res(NoLog, 0))
	if err := st.Unsubscribe(ctx, s.ID, uri); err != nil {
		t.Fatal(err)
	}
	// The subscription is checked before the key.
	checkOnce(t, st, "unsubscribed", []OnceAppend{upd("k2"), upd("k1")}, res(NotSubscribed, 0), res(NotSubscribed, 0))
	checkLog(t, st, s.ID, "gs", "start", "updated k1")
	unknown := upd("k3")
	unknown.Session = NewID()
	checkOnce(t, st, "unknown session", []OnceAppend{unknown}, res(NoSession, 0))
}

// testAppendOnceBatch: one batch may mix sessions and streams; each
// message is handled in order, on its own.
func testAppendOnceBatch(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour})
	a, b := &Session{ID: NewID()}, &Session{ID: NewID()}
	mustCreate(t, st, a)
	mustCreate(t, st, b)
	mustAppend(t, st, a.ID, "gs", "a start")
	mustAppend(t, st, b.ID, "gs", "b start")
	mustAppend(t, st, b.ID, "p", "p start")
	batch := []OnceAppend{
		oa(a.ID, "gs", "k1", "a1"),
		oa(b.ID, "gs", "k1", "b1"), // keys are per session
		oa(NewID(), "gs", "k1", "lost"),
		oa(a.ID, "gs", "k2", "a2"),
		oa(b.ID, "p", "k1", "p1"),
		oa(a.ID, "nolog", "k1", "lost"),
		oa(b.ID, "gs", "k1", "b1 again"),
		oa(a.ID, "gs", "k3", "a3"),
	}
	want := []OnceResult{
		res(Appended, 2), res(Appended, 2), res(NoSession, 0), res(Appended, 3),
		res(Appended, 2), res(NoLog, 0), res(Duplicate, 2), res(Appended, 4),
	}
	checkOnce(t, st, "mixed", batch, want...)
	checkLog(t, st, a.ID, "gs", "a start", "a1", "a2", "a3")
	checkLog(t, st, b.ID, "gs", "b start", "b1")
	checkLog(t, st, b.ID, "p", "p start", "p1")
	// Again, as a caller does after an error: nothing more is logged.
	for i := range want {
		if want[i].Status == Appended {
			want[i].Status = Duplicate
		}
	}
	checkOnce(t, st, "the batch again", batch, want...)
	checkLog(t, st, a.ID, "gs", "a start", "a1", "a2", "a3")

	// A long batch, in order.
	long := make([]OnceAppend, 300)
	for i := range long {
		long[i] = oa(a.ID, "gs", fmt.Sprint("n", i), fmt.Sprint(i))
	}
	got, err := st.AppendOnce(t.Context(), long)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r != res(Appended, uint64(5+i)) {
			t.Fatalf("message %d of a long batch: %+v, want appended at %d", i, r, 5+i)
		}
	}
}

// testAppendOnceForgets: a stream remembers the keys of its last
// MaxEvents AppendOnce appends, and they go with its log (Delete and
// Create, EndStream at once, the MaxStreamsPerSession eviction).
func testAppendOnceForgets(t *testing.T, newStore storeFactory) {
	ctx := t.Context()
	st := newStore(t, Options{TTL: time.Hour, MaxEvents: 3, MaxStreamsPerSession: 2, EndedStreamGrace: -1})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustAppend(t, st, s.ID, "gs", "start")
	for i := 1; i <= 4; i++ {
		checkOnce(t, st, fmt.Sprint("k", i), []OnceAppend{oa(s.ID, "gs", fmt.Sprint("k", i), "x")}, res(Appended, uint64(1+i)))
	}
	// Plain appends do not push keys out.
	mustAppend(t, st, s.ID, "gs", "own")
	mustAppend(t, st, s.ID, "gs", "own")
	checkOnce(t, st, "the last three keys",
		[]OnceAppend{oa(s.ID, "gs", "k2", "x"), oa(s.ID, "gs", "k3", "x"), oa(s.ID, "gs", "k4", "x")},
		res(Duplicate, 3), res(Duplicate, 4), res(Duplicate, 5))
	checkOnce(t, st, "the forgotten key", []OnceAppend{oa(s.ID, "gs", "k1", "x")}, res(Appended, 8))

	// Delete, then Create with the same id: a new log, no keys.
	if err := st.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, &Session{ID: s.ID})
	checkOnce(t, st, "the new session's stream before any append", []OnceAppend{oa(s.ID, "gs", "k4", "x")}, res(NoLog, 0))
	mustAppend(t, st, s.ID, "gs", "start")
	checkOnce(t, st, "a key of the deleted session", []OnceAppend{oa(s.ID, "gs", "k4", "again")}, res(Appended, 2))
	checkLog(t, st, s.ID, "gs", "start", "again")

	// EndStream at once: the log and its keys go; a new log starts over.
	if err := st.EndStream(ctx, s.ID, "gs"); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, st, "an ended stream", []OnceAppend{oa(s.ID, "gs", "k4", "x")}, res(NoLog, 0))
	mustAppend(t, st, s.ID, "gs", "restart")
	checkOnce(t, st, "a key of the ended stream", []OnceAppend{oa(s.ID, "gs", "k4", "anew")}, res(Appended, 2))

	// Evicted beyond MaxStreamsPerSession.
	clockTick(t, time.Now()) // Redis evicts by log expiry, to the millisecond
	mustAppend(t, st, s.ID, "b", "{}")
	clockTick(t, time.Now())
	mustAppend(t, st, s.ID, "c", "{}") // evicts gs
	wantPurged(t, st, s.ID, "gs", 1)
	checkOnce(t, st, "an evicted stream", []OnceAppend{oa(s.ID, "gs", "k4", "x")}, res(NoLog, 0))
	mustAppend(t, st, s.ID, "gs", "back")
	checkOnce(t, st, "a key of the evicted stream", []OnceAppend{oa(s.ID, "gs", "k4", "evicted")}, res(Appended, 2))
	checkLog(t, st, s.ID, "gs", "back", "evicted")
}

// testAppendOnceEnded: an ended stream in its grace is reopened by an
// append (not by a duplicate); once its grace has passed it has no log.
func testAppendOnceEnded(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) {
		ctx := t.Context()
		st := newStore(t, Options{TTL: time.Hour, EndedStreamGrace: time.Hour})
		s := &Session{ID: NewID()}
		mustCreate(t, st, s)
		mustAppend(t, st, s.ID, "gs", "start")
		checkOnce(t, st, "k1", []OnceAppend{oa(s.ID, "gs", "k1", "one")}, res(Appended, 2))
		if err := st.EndStream(ctx, s.ID, "gs"); err != nil {
			t.Fatal(err)
		}
		checkOnce(t, st, "a known key in the grace", []OnceAppend{oa(s.ID, "gs", "k1", "x")}, res(Duplicate, 2))
		checkOnce(t, st, "a new key in the grace", []OnceAppend{oa(s.ID, "gs", "k2", "two")}, res(Appended, 3))
		// Reopened, with its keys.
		checkOnce(t, st, "the keys after the reopening", []OnceAppend{oa(s.ID, "gs", "k1", "x")}, res(Duplicate, 2))
		checkLog(t, st, s.ID, "gs", "start", "one", "two")

		const grace = time.Second
		short := newStore(t, Options{TTL: time.Hour, EndedStreamGrace: grace})
		mustCreate(t, short, s)
		mustAppend(t, short, s.ID, "gs", "start")
		checkOnce(t, short, "k1", []OnceAppend{oa(s.ID, "gs", "k1", "one")}, res(Appended, 2))
		if err := short.EndStream(ctx, s.ID, "gs"); err != nil {
			t.Fatal(err)
		}
		if clock == fakeClock {
			pass(grace) // no read in between, which would drop the log at once
		} else {
			eventually(t, "the ended stream's log goes", func() error {
				if _, err := short.EventsAfter(ctx, s.ID, "gs", 1); !errors.Is(err, ErrEventsPurged) {
					return errors.New("still resumable")
				}
				return nil
			})
		}
		checkOnce(t, short, "past the grace",
			[]OnceAppend{oa(s.ID, "gs", "k1", "x"), oa(s.ID, "gs", "k2", "x")}, res(NoLog, 0), res(NoLog, 0))
		// A plain append starts the stream again, without its old keys.
		idx := mustAppend(t, short, s.ID, "gs", "again")
		checkOnce(t, short, "a key from before the grace passed", []OnceAppend{oa(s.ID, "gs", "k1", "anew")}, res(Appended, idx+1))
	})
}
