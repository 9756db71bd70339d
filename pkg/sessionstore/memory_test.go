package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func newMemoryForTest(t *testing.T, opts Options) *Memory {
	t.Helper()
	m, err := NewMemory(&opts)
	if err != nil {
		t.Fatalf("NewMemory: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func TestMemory(t *testing.T) {
	runStoreSuite(t, func(t *testing.T, opts Options) Store {
		return newMemoryForTest(t, opts)
	}, fakeClock)
}

func TestNewMemoryOptions(t *testing.T) {
	tests := []struct {
		name      string
		opts      *Options
		wantErr   bool
		wantTTL   time.Duration
		wantMaxEv int
	}{
		{name: "nil", opts: nil, wantTTL: DefaultTTL, wantMaxEv: DefaultMaxEvents},
		{name: "zero", opts: &Options{}, wantTTL: DefaultTTL, wantMaxEv: DefaultMaxEvents},
		{name: "set", opts: &Options{TTL: time.Second, MaxEvents: 7}, wantTTL: time.Second, wantMaxEv: 7},
		{name: "negative TTL", opts: &Options{TTL: -1}, wantErr: true},
		{name: "negative MaxEvents", opts: &Options{MaxEvents: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMemory(tt.opts)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("NewMemory error = %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewMemory: %v", err)
			}
			t.Cleanup(func() { _ = m.Close(context.Background()) })
			if m.ttl != tt.wantTTL || m.maxEvents != tt.wantMaxEv {
				t.Errorf("got TTL %v, MaxEvents %d; want %v, %d", m.ttl, m.maxEvents, tt.wantTTL, tt.wantMaxEv)
			}
		})
	}
}

// TestMemoryJanitor checks that expired sessions are evicted without being
// accessed, with their subscriptions and logs.
func TestMemoryJanitor(t *testing.T) {
	t.Parallel()
	// In a synctest bubble the store's clock and janitor run on fake time:
	// the sweeps come at once, exactly every interval.
	synctest.Test(t, func(t *testing.T) {
		m := newMemoryForTest(t, Options{TTL: 20 * time.Millisecond})
		for range 10 {
			s := &Session{ID: NewID()}
			mustCreate(t, m, s)
			if err := m.Subscribe(t.Context(), s.ID, "file:///a"); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, m, s.ID, "s", "{}")
		}
		eventually(t, "janitor empties the store", func() error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if n := len(m.sessions); n > 0 {
				return errors.New("sessions left")
			}
			if n := len(m.subscribers); n > 0 { // the index goes with them
				return errors.New("subscribers index entries left")
			}
			return nil
		})
	})
}

// TestMemorySubscribersExact checks that the subscribers index of a
// memory store holds no stale entry: Unsubscribe and Delete remove theirs.
func TestMemorySubscribersExact(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newMemoryForTest(t, Options{})
	a, b := &Session{ID: NewID()}, &Session{ID: NewID()}
	for _, s := range []*Session{a, b} {
		mustCreate(t, m, s)
		for _, uri := range []string{"file:///x", "file:///y"} {
			if err := m.Subscribe(ctx, s.ID, uri); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.Unsubscribe(ctx, a.ID, "file:///x"); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]map[string]struct{}{"file:///y": {a.ID: {}}}
	if d := diff(want, m.subscribers); d != "" {
		t.Errorf("the index:\n%s", d)
	}
}

// TestMemoryJanitorDropsClaims checks that the janitor drops the expired
// claims of a live session, so that Begins without End (a bug of the
// caller) do not pile up.
func TestMemoryJanitorDropsClaims(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemoryForTest(t, Options{TTL: 200 * time.Millisecond}) // sweeps every 100ms
		s := &Session{ID: NewID()}
		mustCreate(t, m, s)
		for i := range 10 {
			mustBegin(t, m, s.ID, strconv.Itoa(i), "t", 10*time.Millisecond)
		}
		mustBegin(t, m, s.ID, "long", "t", time.Hour)
		eventually(t, "janitor drops the expired claims", func() error {
			if _, err := m.Get(t.Context(), s.ID); err != nil { // keeps s alive
				t.Fatal(err)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if n := len(m.sessions[s.ID].more.claims); n != 1 {
				return fmt.Errorf("%d claims left, want 1", n)
			}
			return nil
		})
		checkInFlight(t, m, s.ID, "long")
	})
}

func TestMemoryCloseStopsJanitor(t *testing.T) {
	t.Parallel()
	m, err := NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-m.janitorDone:
	default:
		t.Fatal("janitor still running after Close returned")
	}
	// Once closed, Close succeeds even with a done context.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 10 {
		if err := m.Close(ctx); err != nil {
			t.Fatalf("Close after Close: %v", err)
		}
	}
}

// TestMemoryCapacity: Create refuses past MaxSessions or MaxSessionBytes
// with ErrFull; a deleted or expired session frees its room.
func TestMemoryCapacity(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newMemoryForTest(t, Options{MaxSessions: 3, TTL: time.Hour})
		var ids []string
		for range 3 {
			s := &Session{ID: NewID()}
			mustCreate(t, m, s)
			ids = append(ids, s.ID)
		}
		if err := m.Create(ctx, &Session{ID: NewID()}); !errors.Is(err, ErrFull) {
			t.Fatalf("a 4th session of 3: %v, want ErrFull", err)
		}
		if err := m.Delete(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, m, &Session{ID: NewID()})

		// Bytes: what clients declare counts, and an expired session's room
		// is taken back at once.
		b := newMemoryForTest(t, Options{MaxSessionBytes: 3000, TTL: 50 * time.Millisecond})
		big := func() *Session {
			s := &Session{ID: NewID()}
			s.ClientInfo.Name = strings.Repeat("n", 1000)
			return s
		}
		mustCreate(t, b, big())
		mustCreate(t, b, big())
		if err := b.Create(ctx, big()); !errors.Is(err, ErrFull) {
			t.Fatalf("a 3rd session declaring 1000 bytes of 3000: %v, want ErrFull", err)
		}
		// Fake time in the bubble, passing at once: past the TTL (50ms) and
		// the janitor sweep that comes with it.
		time.Sleep(60 * time.Millisecond)
		mustCreate(t, b, big())
		b.mu.Lock()
		n, bytes := len(b.sessions), b.bytes
		b.mu.Unlock()
		if n != 1 || bytes <= 1000 || bytes > 1500 {
			t.Fatalf("after the expiry: %d sessions, %d bytes counted; want 1 and its own bytes", n, bytes)
		}

		// No cap.
		u := newMemoryForTest(t, Options{MaxSessions: -1, MaxSessionBytes: -1})
		for range 10 {
			mustCreate(t, u, big())
		}
	})
}

// The single-use registry keeps hashes, not keys, and refuses past its
// bound rather than forget a use.
func TestMemoryOnceBounded(t *testing.T) {
	o := &onceKeys{max: 3}
	now := time.Now()
	big := strings.Repeat("s", 1<<20)
	for i := range 3 {
		if err := o.use(big+strconv.Itoa(i), time.Minute, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.use(big+"0", time.Minute, now); !errors.Is(err, ErrUsed) {
		t.Fatalf("a reused key: %v, want ErrUsed", err)
	}
	if err := o.use("another", time.Minute, now); !errors.Is(err, ErrFull) {
		t.Fatalf("a 4th key of 3: %v, want ErrFull", err)
	}
	// Expired keys make room.
	if err := o.use("another", time.Minute, now.Add(2*time.Minute)); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
	if len(o.keys) != 1 {
		t.Fatalf("%d keys kept, want 1", len(o.keys))
	}
}

// A session's event logs are bounded in number and bytes; the logs
// appended to least recently go first.
func TestMemoryLogsBounded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const maxSessionLogs = 256
	m := newMemoryForTest(t, Options{TTL: time.Hour, MaxStreamsPerSession: maxSessionLogs})
	s := &Session{ID: NewID()}
	mustCreate(t, m, s)
	for i := range maxSessionLogs + 44 {
		mustAppend(t, m, s.ID, "s"+strconv.Itoa(i), "{}")
	}
	if evs, err := m.EventsAfter(ctx, s.ID, "s0", 0); err == nil && len(evs) > 0 {
		t.Fatalf("the oldest of %d logs is still there: %v", maxSessionLogs+44, evs)
	}
	if evs, err := m.EventsAfter(ctx, s.ID, "s299", 0); err != nil || len(evs) != 1 {
		t.Fatalf("the newest log: %v, %v", evs, err)
	}
	// Bytes: 24 events of 1 MiB over 3 logs keep at most 16 MiB.
	big := strings.Repeat("x", 1<<20)
	for i := range 24 {
		mustAppend(t, m, s.ID, "b"+strconv.Itoa(i%3), big)
	}
	m.mu.Lock()
	ms := m.sessions[s.ID]
	total, counted := 0, ms.more.logBytes
	for _, l := range ms.more.logs {
		total += eventBytes(l.events)
		if l.bytes != eventBytes(l.events) {
			t.Errorf("a log counts %d bytes, holds %d", l.bytes, eventBytes(l.events))
		}
	}
	m.mu.Unlock()
	if total > maxSessionLogBytes || counted != total || total < 4<<20 {
		t.Fatalf("event bytes held %d, counted %d; want about %d at most", total, counted, maxSessionLogBytes)
	}
	// The newest event is always kept.
	if evs, err := m.EventsAfter(ctx, s.ID, "b2", 0); err != nil || len(evs) == 0 {
		t.Fatalf("the log appended last: %d events, %v", len(evs), err)
	}
}
