package e2e

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// keepaliveStreams opens two legacy GET streams on the all-in-one at url,
// each of its own session (a session has one GET stream): a fresh one, and
// one resumed with the Last-Event-ID of an earlier stream's priming event.
func keepaliveStreams(t *testing.T, url string) map[string]*testenv.Stream {
	t.Helper()
	fresh := testenv.NewClient(t, url)
	fresh.Initialize(nil)
	g := fresh.OpenGet(nil)
	if g.Status != 200 {
		t.Fatalf("GET: HTTP %d %s", g.Status, g.Body)
	}

	resumer := testenv.NewClient(t, url)
	resumer.Initialize(nil)
	first := resumer.OpenGet(nil)
	priming := first.Next(t, 10*time.Second)
	if priming.ID == "" {
		t.Fatalf("the GET stream's first event has no id: %+v", priming)
	}
	first.Close()
	r := resumer.OpenGet(map[string]string{"Last-Event-ID": priming.ID})
	if r.Status != 200 {
		t.Fatalf("resumed GET: HTTP %d %s", r.Status, r.Body)
	}
	return map[string]*testenv.Stream{"fresh GET": g, "resumed GET": r}
}

// watchComments reads s for d and returns how many SSE comments it got;
// it fails if the stream ends. With fresh, what arrived before the call is
// dropped first.
func watchComments(t *testing.T, s *testenv.Stream, d time.Duration, fresh bool) int {
	t.Helper()
drain:
	for fresh {
		select {
		case _, ok := <-s.Events:
			if !ok {
				t.Fatal("the stream ended")
			}
		default:
			break drain
		}
	}
	n := 0
	end := time.After(d)
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				t.Fatalf("the stream ended after %d comments", n)
			}
			if ev.Comment {
				if ev.Data != "keepalive" {
					t.Errorf("comment %q, want \"keepalive\"", ev.Data)
				}
				n++
			}
		case <-end:
			return n
		}
	}
}

// TestKeepAliveDisabled checks that `--keepalive 0` sends no SSE comments
// on legacy GET streams (fresh or resumed), for longer than the 30s default
// interval (so a 0 taken as "the default" is caught), while the streams stay
// open and deliver events.
func TestKeepAliveDisabled(t *testing.T) {
	t.Parallel()
	const watch = 33 * time.Second // > the 30s default
	_, url := testenv.StartMCPFleet(t, "--fixture", "conformance", "--keepalive", "0")
	streams := keepaliveStreams(t, url)
	t.Run("quiet", func(t *testing.T) {
		for name, s := range streams {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if n := watchComments(t, s, watch, false); n != 0 {
					t.Errorf("%d keepalive comments within %s with --keepalive 0", n, watch)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	// The streams were live all along: a list change reaches both.
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	c.Call(1, "tools/call", callParams("test_trigger_tool_change", nil))
	for name, s := range streams {
		if _, m := s.NextMessage(t, 10*time.Second); m.Method != "notifications/tools/list_changed" {
			t.Errorf("%s: got %s, want notifications/tools/list_changed", name, m.Method)
		}
	}
}

// TestKeepAliveInterval checks that a small positive --keepalive sends SSE
// comments on legacy GET streams (fresh or resumed) at about that interval.
func TestKeepAliveInterval(t *testing.T) {
	t.Parallel()
	const (
		every = 200 * time.Millisecond
		watch = 3 * time.Second
	)
	_, url := testenv.StartMCPFleet(t, "--fixture", "conformance", "--keepalive", every.String())
	for name, s := range keepaliveStreams(t, url) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Nominally watch/every (15); a slow machine may lose a few,
			// another interval is caught.
			if n, max := watchComments(t, s, watch, true), int(watch/every)+2; n < 8 || n > max {
				t.Errorf("%d keepalive comments in %s with --keepalive %s, want 8 to %d", n, watch, every, max)
			}
		})
	}
}
