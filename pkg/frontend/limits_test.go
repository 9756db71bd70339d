package frontend

import (
	"testing"
	"time"
)

func TestLimiterAllow(t *testing.T) {
	l := newLimiter()
	now := time.Now()
	for i := range 3 {
		if ok, _ := l.allow("p", 1, 3, now); !ok {
			t.Fatalf("request %d of a burst of 3 refused", i+1)
		}
	}
	ok, wait := l.allow("p", 1, 3, now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("the 4th of a burst of 3 at 1/s: ok=%v, retry after %s", ok, wait)
	}
	if ok, _ := l.allow("p", 1, 3, now.Add(time.Second)); !ok {
		t.Fatal("a request a second later was refused")
	}
	if ok, _ := l.allow("other", 1, 3, now); !ok {
		t.Fatal("another principal shares the bucket")
	}
	// A rate or a burst of 0 is no limit (a negative option turns it off).
	for range 100 {
		if ok, _ := l.allow("q", 1, 0, now); !ok {
			t.Fatal("burst 0 refused a request")
		}
		if ok, _ := l.allow("q", 0, 3, now); !ok {
			t.Fatal("rate 0 refused a request")
		}
	}
}

func TestLimiterInFlight(t *testing.T) {
	l := newLimiter()
	if !l.acquire(limitKey{id: "s"}, 2) || !l.acquire(limitKey{id: "s"}, 2) {
		t.Fatal("two slots of 2 refused")
	}
	if l.acquire(limitKey{id: "s"}, 2) {
		t.Fatal("a third slot of 2 granted")
	}
	l.release(limitKey{id: "s"}, 2)
	if !l.acquire(limitKey{id: "s"}, 2) {
		t.Fatal("a released slot was not reusable")
	}
	l.release(limitKey{id: "s"}, 2)
	l.release(limitKey{id: "s"}, 2)
	if len(l.inflight) != 0 {
		t.Fatalf("counters left after every release: %v", l.inflight)
	}
	if !l.acquire(limitKey{}, 1) || !l.acquire(limitKey{id: "x"}, 0) {
		t.Fatal("no key or no cap must not limit")
	}
}
