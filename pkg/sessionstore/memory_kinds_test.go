package sessionstore

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// kindsOf returns the number of kinds in m's table and the kind of each
// session of ids, under m's lock.
func kindsOf(m *Memory, ids ...string) (int, []*memKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ks []*memKind
	for _, id := range ids {
		ks = append(ks, m.sessions[id].kind)
	}
	return len(m.kinds), ks
}

// TestMemoryKindsShared checks that the sessions declaring the same share
// one kind, that others have their own, and that a kind goes with its
// last session (Delete or expiry).
func TestMemoryKindsShared(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newMemoryForTest(t, Options{TTL: time.Hour})
		a, b := fullSession(), fullSession()
		other := fullSession()
		other.Principal = "someone else"
		for _, s := range []*Session{a, b, other} {
			mustCreate(t, m, s)
		}
		n, ks := kindsOf(m, a.ID, b.ID, other.ID)
		if n != 2 || ks[0] != ks[1] || ks[0] == ks[2] || ks[0].refs != 2 {
			t.Fatalf("%d kinds; a's %p, b's %p, other's %p (%d refs to a's); want 2, a's and b's shared", n, ks[0], ks[1], ks[2], ks[0].refs)
		}
		for _, s := range []*Session{a, other} {
			got, err := m.Get(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Principal != s.Principal || got.ClientInfo.Name != s.ClientInfo.Name || got.ClientCapabilities.Roots == nil {
				t.Errorf("Get(%s) = %+v, want what %+v declared", shortID(s.ID), got, s)
			}
		}
		if err := m.Delete(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := kindsOf(m); n != 2 {
			t.Errorf("%d kinds after one of two sharing sessions went, want 2", n)
		}
		if err := m.Delete(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := kindsOf(m); n != 1 {
			t.Errorf("%d kinds after both sharing sessions went, want 1", n)
		}
		time.Sleep(time.Hour) // fake time: the janitor expires other
		synctest.Wait()
		if n, _ := kindsOf(m); n != 0 || m.Len() != 0 {
			t.Errorf("%d kinds, %d sessions after all expired, want none", n, m.Len())
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.bytes != 0 {
			t.Errorf("%d declared bytes counted with no session, want 0", m.bytes)
		}
	})
}

// TestMemoryKindsCollide checks that two declarations whose hashes
// collide keep their own values, and that releasing the one outside the
// table leaves the table's alone.
func TestMemoryKindsCollide(t *testing.T) {
	t.Parallel()
	m := newMemoryForTest(t, Options{})
	a, b := &Session{ProtocolVersion: "a"}, &Session{ProtocolVersion: "b"}
	info, caps := []byte(`{}`), []byte(`{}`)
	m.mu.Lock()
	defer m.mu.Unlock()
	ka := m.acquire(a, info, caps, 1)
	kb := m.acquire(b, info, caps, 1) // the same hash, by force
	if ka == kb || ka.proto != "a" || kb.proto != "b" || m.kinds[1] != ka {
		t.Fatalf("colliding kinds: %+v and %+v, table %v", ka, kb, m.kinds)
	}
	if again := m.acquire(a, info, caps, 1); again != ka || ka.refs != 2 {
		t.Errorf("a's declaration again: %p (refs %d), want %p", again, ka.refs, ka)
	}
	m.release(kb)
	if m.kinds[1] != ka {
		t.Errorf("releasing the colliding kind dropped the table's")
	}
}

// TestMemoryIdleSessionShrinks checks that a session that subscribed and
// made requests, then went idle, keeps nothing of it once the janitor
// has passed.
func TestMemoryIdleSessionShrinks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newMemoryForTest(t, Options{TTL: time.Minute}) // sweeps every 30s
		s := &Session{ID: NewID(), ProtocolVersion: protocol.LatestLegacyVersion}
		mustCreate(t, m, s)
		if err := m.Subscribe(ctx, s.ID, "file:///a"); err != nil {
			t.Fatal(err)
		}
		mustBegin(t, m, s.ID, "1", "t", time.Second)
		if err := m.End(ctx, s.ID, "1", "t"); err != nil {
			t.Fatal(err)
		}
		if err := m.Unsubscribe(ctx, s.ID, "file:///a"); err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		if x := m.sessions[s.ID].more; x == nil || x.claims == nil {
			t.Error("the claims map went at End; want it kept for the next request")
		}
		m.mu.Unlock()
		time.Sleep(40 * time.Second)
		synctest.Wait()
		m.mu.Lock()
		defer m.mu.Unlock()
		ms := m.sessions[s.ID]
		if ms == nil {
			t.Fatal("the session expired before its TTL")
		}
		if ms.more != nil {
			t.Errorf("an idle session still holds %+v after a sweep, want nothing", ms.more)
		}
	})
}
