package sessionstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The EventLog part of the conformance suite.

func testEventIndices(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)

	payloads := []string{`{"n":1}`, "", "\x00\xff binary \r\n", `{"n":4}`, strings.Repeat("x", 64<<10)}
	var want1, want2 []Event
	for i, p := range payloads {
		if idx := mustAppend(t, st, s.ID, "one", p); idx != uint64(i+1) {
			t.Errorf("append %d to stream one: index %d, want %d", i, idx, i+1)
		}
		want1 = append(want1, Event{Index: uint64(i + 1), Data: []byte(p)})
		if i%2 == 0 {
			idx := mustAppend(t, st, s.ID, "two", p)
			want2 = append(want2, Event{Index: uint64(len(want2) + 1), Data: []byte(p)})
			if idx != uint64(len(want2)) {
				t.Errorf("stream two: index %d, want %d", idx, len(want2))
			}
		}
	}
	for stream, want := range map[string][]Event{"one": want1, "two": want2} {
		got, err := st.EventsAfter(t.Context(), s.ID, stream, 0)
		if err != nil {
			t.Fatalf("EventsAfter(%s, 0): %v", stream, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("EventsAfter(%s, 0):\n%s", stream, d)
		}
	}
}

// events returns the events from..to with data as appended by appendN.
func events(from, to uint64) []Event {
	evs := []Event{}
	for i := from; i <= to; i++ {
		evs = append(evs, Event{Index: i, Data: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	return evs
}

// appendN appends n events whose data names their expected index.
func appendN(t *testing.T, st Store, id, stream string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if idx := mustAppend(t, st, id, stream, fmt.Sprintf(`{"n":%d}`, i)); idx != uint64(i) {
			t.Fatalf("AppendEvent index = %d, want %d", idx, i)
		}
	}
}

// eventsCase is one EventsAfter query and its expected answer.
type eventsCase struct {
	stream     string
	after      uint64
	want       []Event // nil when wantPurged
	wantPurged bool
}

func checkEventsAfter(t *testing.T, st Store, id string, tests []eventsCase) {
	t.Helper()
	for _, tt := range tests {
		got, err := st.EventsAfter(t.Context(), id, tt.stream, tt.after)
		switch {
		case tt.wantPurged:
			if !errors.Is(err, ErrEventsPurged) || got != nil {
				t.Errorf("EventsAfter(%s, %d) = %v, %v; want ErrEventsPurged", tt.stream, tt.after, got, err)
			}
		case err != nil:
			t.Errorf("EventsAfter(%s, %d) error: %v", tt.stream, tt.after, err)
		case got == nil:
			t.Errorf("EventsAfter(%s, %d) = nil, want a non-nil slice", tt.stream, tt.after)
		default:
			if d := diff(tt.want, got); d != "" {
				t.Errorf("EventsAfter(%s, %d):\n%s", tt.stream, tt.after, d)
			}
		}
	}
}

func testEventsAfter(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{MaxEvents: 10})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	appendN(t, st, s.ID, "s", 1, 5)
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 0, want: events(1, 5)},
		{stream: "s", after: 2, want: events(3, 5)},
		{stream: "s", after: 4, want: events(5, 5)},
		{stream: "s", after: 5, want: []Event{}},
		// A client ahead of the store has nothing newer to see.
		{stream: "s", after: 6, want: []Event{}},
		{stream: "s", after: math.MaxUint64, want: []Event{}},
		// A stream without events: nothing to replay from 0, but a client
		// that saw events the store does not know cannot be served.
		{stream: "none", after: 0, want: []Event{}},
		{stream: "none", after: 1, wantPurged: true},
		{stream: "none", after: math.MaxUint64, wantPurged: true},
	})
}

func testTrimming(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{MaxEvents: 3})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	appendN(t, st, s.ID, "s", 1, 5) // keeps 3..5
	appendN(t, st, s.ID, "short", 1, 2)
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 0, wantPurged: true},
		{stream: "s", after: 1, wantPurged: true},
		{stream: "s", after: 2, want: events(3, 5)},
		{stream: "s", after: 3, want: events(4, 5)},
		{stream: "s", after: 5, want: []Event{}},
		{stream: "s", after: 9, want: []Event{}},
		{stream: "short", after: 0, want: events(1, 2)},
	})
	appendN(t, st, s.ID, "s", 6, 1) // keeps 4..6
	checkEventsAfter(t, st, s.ID, []eventsCase{
		{stream: "s", after: 2, wantPurged: true},
		{stream: "s", after: 3, want: events(4, 6)},
	})
}

func testEventsAreCopies(t *testing.T, newStore storeFactory) {
	st := newStore(t, Options{})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)
	buf := []byte(`{"n":1}`)
	if _, err := st.AppendEvent(t.Context(), s.ID, "s", buf); err != nil {
		t.Fatal(err)
	}
	buf[2] = 'X'
	got, err := st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	got[0].Data[2] = 'Y'
	got, err = st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(events(1, 1), got); d != "" {
		t.Errorf("stored event changed through a caller's buffer:\n%s", d)
	}
}

func testConcurrentAppends(t *testing.T, newStore storeFactory) {
	const writers, perWriter = 8, 40
	st := newStore(t, Options{MaxEvents: writers * perWriter})
	s := &Session{ID: NewID()}
	mustCreate(t, st, s)

	type appended struct {
		idx  uint64
		data string
	}
	results := make(chan appended, writers*perWriter)
	errs := make(chan error, 4*writers*perWriter)
	var wg sync.WaitGroup
	ctx := t.Context()
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				data := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				idx, err := st.AppendEvent(ctx, s.ID, "s", []byte(data))
				if err != nil {
					errs <- err
					return
				}
				results <- appended{idx, data}
			}
		})
		// Other traffic on the same session, for the race detector.
		wg.Go(func() {
			lvl := protocol.LevelInfo
			for i := range perWriter {
				uri := fmt.Sprintf("file:///%d/%d", w, i%3)
				for _, err := range []error{
					st.Subscribe(ctx, s.ID, uri),
					st.Update(ctx, s.ID, Patch{LogLevel: &lvl}),
					func() error { _, err := st.Get(ctx, s.ID); return err }(),
					func() error { _, err := st.EventsAfter(ctx, s.ID, "s", 0); return err }(),
					func() error { _, err := st.Subscriptions(ctx, s.ID); return err }(),
				} {
					if err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}

	byIndex := map[uint64]string{}
	for r := range results {
		if prev, dup := byIndex[r.idx]; dup {
			t.Errorf("index %d given to both %s and %s", r.idx, prev, r.data)
		}
		byIndex[r.idx] = r.data
	}
	got, err := st.EventsAfter(t.Context(), s.ID, "s", 0)
	if err != nil {
		t.Fatalf("EventsAfter: %v", err)
	}
	if len(got) != writers*perWriter || len(byIndex) != writers*perWriter {
		t.Fatalf("got %d events and %d distinct indices, want %d", len(got), len(byIndex), writers*perWriter)
	}
	for i, ev := range got {
		if ev.Index != uint64(i+1) {
			t.Fatalf("event %d has index %d: indices are not gapless from 1", i, ev.Index)
		}
		if string(ev.Data) != byIndex[ev.Index] {
			t.Errorf("event %d data = %s, want %s as returned by its AppendEvent", ev.Index, ev.Data, byIndex[ev.Index])
		}
	}
}
