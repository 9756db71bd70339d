package sessionstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// The AppendEventSeq part of the conformance suite.

func mustAppendSeq(t *testing.T, st Store, id, stream string, seq uint64, data string) (uint64, bool) {
	t.Helper()
	idx, ok, err := st.AppendEventSeq(t.Context(), id, stream, seq, []byte(data))
	if err != nil {
		t.Fatalf("AppendEventSeq(%q, %d): %v", stream, seq, err)
	}
	return idx, ok
}

func testAppendSeq(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)

	// A stream that was never started is not created.
	if idx, ok := mustAppendSeq(t, st, s.ID, "p1", 1, `{"n":1}`); ok || idx != 0 {
		t.Fatalf("append to a stream without a log: %d %v, want 0 false", idx, ok)
	}
	if evs, err := st.EventsAfter(t.Context(), s.ID, "p1", 0); err != nil || len(evs) != 0 {
		t.Fatalf("the refused append left %v, %v", evs, err)
	}
	mustAppend(t, st, s.ID, "p1", "start") // index 1
	// In order, each once; duplicates and stale numbers are not logged.
	steps := []struct {
		seq  uint64
		ok   bool
		want uint64
	}{{1, true, 2}, {1, false, 0}, {2, true, 3}, {1, false, 0}, {2, false, 0}, {3, true, 4}}
	for _, st2 := range steps {
		idx, ok := mustAppendSeq(t, st, s.ID, "p1", st2.seq, fmt.Sprintf(`{"seq":%d}`, st2.seq))
		if ok != st2.ok || idx != st2.want {
			t.Errorf("seq %d: (%d, %v), want (%d, %v)", st2.seq, idx, ok, st2.want, st2.ok)
		}
	}
	// Plain appends share the indices and do not touch the seq.
	if idx := mustAppend(t, st, s.ID, "p1", "own"); idx != 5 {
		t.Errorf("a plain append after seqs: index %d, want 5", idx)
	}
	if idx, ok := mustAppendSeq(t, st, s.ID, "p1", 3, "dup"); ok || idx != 0 {
		t.Errorf("seq 3 again after a plain append: (%d, %v)", idx, ok)
	}
	if idx, ok := mustAppendSeq(t, st, s.ID, "p1", 4, `{"seq":4}`); !ok || idx != 6 {
		t.Errorf("seq 4: (%d, %v), want (6, true)", idx, ok)
	}
	got, err := st.EventsAfter(t.Context(), s.ID, "p1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{1, []byte("start")}, {2, []byte(`{"seq":1}`)}, {3, []byte(`{"seq":2}`)}, {4, []byte(`{"seq":3}`)}, {5, []byte("own")}, {6, []byte(`{"seq":4}`)}}
	if d := diff(want, got); d != "" {
		t.Errorf("the log:\n%s", d)
	}
	// Streams keep their own numbers.
	mustAppend(t, st, s.ID, "p2", "start")
	if idx, ok := mustAppendSeq(t, st, s.ID, "p2", 1, "x"); !ok || idx != 2 {
		t.Errorf("seq 1 on another stream: (%d, %v)", idx, ok)
	}
	// A session that is gone: ErrNotFound, never a log.
	if _, _, err := st.AppendEventSeq(t.Context(), NewID(), "p1", 1, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	if err := st.Delete(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AppendEventSeq(t.Context(), s.ID, "p1", 9, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted session: %v, want ErrNotFound", err)
	}
	// A session created again with the id starts over.
	mustCreate(t, st, &Session{ID: s.ID})
	mustAppend(t, st, s.ID, "p1", "start")
	if idx, ok := mustAppendSeq(t, st, s.ID, "p1", 1, "again"); !ok || idx != 2 {
		t.Errorf("seq 1 in a new session with the same id: (%d, %v)", idx, ok)
	}
}

// testConcurrentAppendSeq: several senders deliver the same messages at
// once (a holder and an appender racing): each seq is logged once, in
// order.
func testConcurrentAppendSeq(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	mustAppend(t, st, s.ID, "p", "start")
	const senders, n = 4, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	appended := map[uint64]int{}
	for range senders {
		wg.Go(func() {
			for seq := uint64(1); seq <= n; seq++ {
				_, ok, err := st.AppendEventSeq(t.Context(), s.ID, "p", seq, fmt.Appendf(nil, "%d", seq))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					appended[seq]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	evs, err := st.EventsAfter(t.Context(), s.ID, "p", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) > n {
		t.Fatalf("%d events logged for %d messages", len(evs), n)
	}
	last := uint64(0)
	for _, ev := range evs {
		var seq uint64
		fmt.Sscan(string(ev.Data), &seq)
		if seq <= last {
			t.Fatalf("seq %d logged after %d", seq, last)
		}
		last = seq
	}
	for seq, c := range appended {
		if c != 1 {
			t.Errorf("seq %d appended %d times", seq, c)
		}
	}
	if last != n {
		t.Errorf("the last seq logged is %d, want %d", last, n)
	}
}
