package sessionstore

import (
	"errors"
	"testing"
	"time"
)

// The OnceSet part of the conformance suite.

func testUseOnce(t *testing.T, newStore storeFactory, clock suiteClock) {
	clock.run(t, func(t *testing.T) { checkUseOnce(t, newStore) })
}

func checkUseOnce(t *testing.T, newStore storeFactory) {
	s := newStore(t, Options{})
	ctx := t.Context()
	if err := s.UseOnce(ctx, "state-a", time.Minute); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.UseOnce(ctx, "state-a", time.Minute); !errors.Is(err, ErrUsed) {
		t.Fatalf("second use: %v, want ErrUsed", err)
	}
	if err := s.UseOnce(ctx, "state-b", time.Minute); err != nil {
		t.Fatalf("another key: %v", err)
	}
	if err := s.UseOnce(ctx, "short", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a used key to expire", func() error {
		return s.UseOnce(ctx, "short", 50*time.Millisecond)
	})
	if err := s.UseOnce(ctx, "x", 0); err == nil {
		t.Fatal("a zero ttl was accepted")
	}
}
