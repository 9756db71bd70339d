package sessionstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stream bookkeeping part of the EventLog suite: MaxStreamsPerSession
// and EndStream.

// streamCount returns how many streams the store keeps bookkeeping for in
// session id: the fields of the streams hash in Redis, the logs in memory.
// It is what must stay bounded.
func streamCount(t *testing.T, st Store, id string) int {
	t.Helper()
	switch s := st.(type) {
	case *Memory:
		s.mu.Lock()
		defer s.mu.Unlock()
		if ms := s.sessions[id]; ms != nil && ms.more != nil {
			return len(ms.more.logs)
		}
		return 0
	case *Redis:
		keys, _ := s.keys(id)
		fields, err := s.client.HKeys(t.Context(), keys[2]).Result()
		if err != nil {
			t.Fatalf("HKEYS streams: %v", err)
		}
		n := 0
		for _, f := range fields {
			if !strings.Contains(f, "#") { // not an AppendEventSeq '<stream>#seq'
				n++
			}
		}
		return n
	}
	t.Fatalf("streamCount: unknown store %T", st)
	return 0
}

func wantPurged(t *testing.T, st Store, id, stream string, after uint64) {
	t.Helper()
	if evs, err := st.EventsAfter(t.Context(), id, stream, after); !errors.Is(err, ErrEventsPurged) {
		t.Fatalf("EventsAfter(%s, %d) = %v, %v; want ErrEventsPurged", stream, after, evs, err)
	}
}

func wantEvents(t *testing.T, st Store, id, stream string, after uint64, n int) {
	t.Helper()
	if evs, err := st.EventsAfter(t.Context(), id, stream, after); err != nil || len(evs) != n {
		t.Fatalf("EventsAfter(%s, %d) = %v, %v; want %d events", stream, after, evs, err, n)
	}
}

// testStreamsBounded: a session keeps bookkeeping for at most
// MaxStreamsPerSession streams; a new stream evicts the least recently
// appended one with its log.
func testStreamsBounded(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour, MaxStreamsPerSession: 3})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	for _, name := range []string{"a", "b", "c"} {
		mustAppend(t, st, s.ID, name, "{}")
		clockTick(t, time.Now()) // Redis orders the logs by expiry, to the millisecond
	}
	mustAppend(t, st, s.ID, "a", "{}") // a is now the most recent: b is the oldest
	clockTick(t, time.Now())
	mustAppend(t, st, s.ID, "d", "{}")
	wantPurged(t, st, s.ID, "b", 1)
	wantEvents(t, st, s.ID, "a", 0, 2)
	wantEvents(t, st, s.ID, "c", 0, 1)
	wantEvents(t, st, s.ID, "d", 0, 1)
	for i := range 50 {
		mustAppend(t, st, s.ID, "x"+strconv.Itoa(i), "{}")
		if n := streamCount(t, st, s.ID); n > 3 {
			t.Fatalf("after %d more streams, %d are kept, want at most 3", i+1, n)
		}
	}
	wantEvents(t, st, s.ID, "x49", 0, 1)

	// Off: no cap.
	st = newStore(t, Options{TTL: time.Hour, MaxStreamsPerSession: -1})
	mustCreate(t, st, s)
	for i := range 80 {
		mustAppend(t, st, s.ID, "y"+strconv.Itoa(i), "{}")
	}
	if n := streamCount(t, st, s.ID); n != 80 {
		t.Fatalf("uncapped: %d streams kept, want 80", n)
	}
}

// testEndStream: an ended stream stays resumable for EndedStreamGrace, then
// its log and its bookkeeping go; an append reopens it.
func testEndStream(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) {
		ctx := t.Context()
		const grace = time.Second
		st := newStore(t, Options{TTL: time.Hour, EndedStreamGrace: grace})
		s := &Session{ID: NewID()}
		mustCreate(t, st, s)
		appendN(t, st, s.ID, "post", 1, 3)
		mustAppend(t, st, s.ID, "get", "{}")
		if err := st.EndStream(ctx, s.ID, "post"); err != nil {
			t.Fatalf("EndStream: %v", err)
		}
		if err := st.EndStream(ctx, s.ID, "post"); err != nil { // twice: harmless
			t.Fatalf("EndStream again: %v", err)
		}
		ended := time.Now()
		// Within the grace, a late resume still works.
		evs, err := st.EventsAfter(ctx, s.ID, "post", 1)
		if time.Since(ended) < grace {
			if err != nil || diff(events(2, 3), evs) != "" {
				t.Fatalf("within the grace: %v, %v; want events 2..3", evs, err)
			}
		}
		eventually(t, "the ended stream's log goes", func() error {
			if _, err := st.EventsAfter(ctx, s.ID, "post", 1); !errors.Is(err, ErrEventsPurged) {
				return errors.New("still resumable")
			}
			return nil
		})
		wantEvents(t, st, s.ID, "get", 0, 1) // the other stream is untouched
		mustAppend(t, st, s.ID, "post2", "{}")
		if n := streamCount(t, st, s.ID); n != 2 {
			t.Fatalf("%d streams kept once the ended one's grace passed and another started, want 2 (get, post2)", n)
		}

		// An append reopens an ended stream: indices go on.
		if err := st.EndStream(ctx, s.ID, "post2"); err != nil {
			t.Fatal(err)
		}
		if idx := mustAppend(t, st, s.ID, "post2", "{}"); idx != 2 {
			t.Fatalf("append to an ended stream: index %d, want 2", idx)
		}

		// Unknown sessions and streams: no-ops.
		if err := st.EndStream(ctx, s.ID, "nosuch"); err != nil {
			t.Errorf("EndStream of an unknown stream: %v", err)
		}
		if err := st.EndStream(ctx, NewID(), "post"); err != nil {
			t.Errorf("EndStream of an unknown session: %v", err)
		}
	})
}

// testEndStreamAtOnce: with a negative grace an ended stream goes at once.
func testEndStreamAtOnce(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour, EndedStreamGrace: -1})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	appendN(t, st, s.ID, "post", 1, 2)
	if err := st.EndStream(t.Context(), s.ID, "post"); err != nil {
		t.Fatal(err)
	}
	wantPurged(t, st, s.ID, "post", 1)
	if n := streamCount(t, st, s.ID); n != 0 {
		t.Fatalf("%d streams kept after the only one ended, want 0", n)
	}
}

// seqOrphans counts the '<stream>#seq' fields of a Redis store whose
// stream is gone (a Memory store keeps the seq in the log itself: 0).
func seqOrphans(t *testing.T, st Store, id string) int {
	t.Helper()
	r, ok := st.(*Redis)
	if !ok {
		return 0
	}
	keys, _ := r.keys(id)
	all, err := r.client.HGetAll(t.Context(), keys[2]).Result()
	if err != nil {
		t.Fatalf("HGETALL streams: %v", err)
	}
	n := 0
	for f := range all {
		if base, ok := strings.CutSuffix(f, "#seq"); ok {
			if _, live := all[base]; !live {
				n++
			}
		}
	}
	return n
}

// The seq of AppendEventSeq lives and goes with its stream: evicted past
// MaxStreamsPerSession, deleted by EndStream, and an ended stream still in
// its grace is reopened by a numbered append.
func testAppendSeqStreams(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{TTL: time.Hour, MaxStreamsPerSession: 2, EndedStreamGrace: -1})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	for _, name := range []string{"a", "b", "c"} {
		mustAppend(t, st, s.ID, name, "start")
		if _, ok := mustAppendSeq(t, st, s.ID, name, 1, `{}`); !ok {
			t.Fatalf("seq 1 on %s not appended", name)
		}
		clockTick(t, time.Now()) // Redis evicts by log expiry, to the millisecond
	}
	if n := streamCount(t, st, s.ID); n != 2 {
		t.Fatalf("%d streams with a cap of 2", n)
	}
	if n := seqOrphans(t, st, s.ID); n != 0 {
		t.Fatalf("%d seq fields outlived their evicted stream", n)
	}
	if err := st.EndStream(t.Context(), s.ID, "c"); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustAppendSeq(t, st, s.ID, "c", 2, `{}`); ok {
		t.Fatal("a numbered append recreated a stream ended at once")
	}
	if n := seqOrphans(t, st, s.ID); n != 0 {
		t.Fatalf("%d seq fields outlived their ended stream", n)
	}

	graced := newStore(t, Options{TTL: time.Hour, EndedStreamGrace: time.Hour})
	g := &Session{ID: NewID()}
	mustCreate(t, graced, g)
	mustAppend(t, graced, g.ID, "p", "start")
	mustAppendSeq(t, graced, g.ID, "p", 1, `{"n":1}`)
	if err := graced.EndStream(t.Context(), g.ID, "p"); err != nil {
		t.Fatal(err)
	}
	if idx, ok := mustAppendSeq(t, graced, g.ID, "p", 2, `{"n":2}`); !ok || idx != 3 {
		t.Fatalf("a numbered append to an ended stream in its grace: (%d, %v), want (3, true)", idx, ok)
	}
	wantEvents(t, graced, g.ID, "p", 0, 3)
}
