package e2e

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestDrain sends SIGTERM to a worker and then a frontend while each holds
// a request: the request finishes with its result, the worker stops taking
// work (the other worker serves new requests), and the process exits.
func TestDrain(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)

	s := cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": 1}}), nil)
	s.NextMessage(t, 10*time.Second)
	re := regexp.MustCompile(`"msg":"sleep started","request":"1"|msg="sleep started" request=1 `)
	victim := -1
	testutil.Poll(t, "a worker to log the sleep", func() bool {
		for i, w := range c.Workers {
			if re.MatchString(w.Log()) {
				victim = i
			}
		}
		return victim >= 0
	})
	_ = c.Workers[victim].Signal(syscall.SIGTERM)
	// New work goes to the other worker at once.
	for i := 0; i < 4; i++ {
		cl.Call(10+i, "tools/call", callParams("echo", map[string]any{"text": "during the drain"}))
	}
	if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("the draining worker's request: %+v", resp)
	}
	waitExit(t, c.Workers[victim], "the drained worker")

	// The frontend holding a request drains too.
	s = cl.PostStream(testenv.Request(2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1200}, "_meta": map[string]any{"progressToken": 2}}), nil)
	s.NextMessage(t, 10*time.Second)
	// Which frontend holds it: the client alternates; the POST went to the
	// URL before the current one.
	fe := (cl.Next() + len(c.URLs) - 1) % len(c.URLs)
	_ = c.Frontends[fe].Signal(syscall.SIGTERM)
	if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("the draining frontend's request: %+v", resp)
	}
	waitExit(t, c.Frontends[fe], "the drained frontend")
	other := testenv.NewClient(t, c.URLs[1-fe])
	other.SessionID, other.ProtocolVersion = cl.SessionID, cl.ProtocolVersion
	other.Call(3, "tools/call", callParams("echo", map[string]any{"text": "after the drain"}))
}

func waitExit(t *testing.T, p *testenv.Proc, what string) {
	t.Helper()
	guard := testenv.HangGuard(15 * time.Second)
	select {
	case <-p.Done():
	case <-time.After(guard):
		t.Fatalf("%s did not exit within %s", what, guard)
	}
}

// TestDrainThroughProxy drains a frontend behind nginx while a client
// keeps calling through the proxy: no call fails (the draining frontend
// stops accepting at once, so nginx sends new requests to the other one),
// and a request the draining frontend holds finishes with its result.
func TestDrainThroughProxy(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true})
	cl := testenv.NewClient(t, c.ProxyURL)
	cl.Initialize(nil)
	// Hold a request on each frontend (round robin: two in a row land on
	// both), so the drained one has work in flight.
	var held []*testenv.Stream
	for i := range 2 {
		s := cl.PostStream(testenv.Request(1+i, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": 1 + i}}), nil)
		s.NextMessage(t, 10*time.Second)
		held = append(held, s)
	}
	_ = c.Frontends[0].Signal(syscall.SIGTERM)
	// Calls through the whole drain: at least 40, and until the drained
	// frontend has exited (its held request answered).
	failed, calls := 0, 0
	deadline := time.Now().Add(testenv.HangGuard(15 * time.Second))
	for ; calls < 40 || !c.Frontends[0].Exited(); calls++ {
		if time.Now().After(deadline) {
			t.Fatalf("the drained frontend did not exit within %s", testenv.HangGuard(15*time.Second))
		}
		r := cl.Post(testenv.Request(100+calls, "tools/call", callParams("echo", map[string]any{"text": "during the drain"})), nil)
		if r.Status != 200 || r.ErrorCode() != 0 {
			failed++
			t.Errorf("call %d during the drain: %s", calls, r)
		}
	}
	for i, s := range held {
		if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
			t.Fatalf("held request %d: %+v", i, resp)
		}
	}
	waitExit(t, c.Frontends[0], "the drained frontend")
	t.Logf("drain through nginx: %d of %d calls failed", failed, calls)
}
