package e2e

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
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
	for deadline := time.Now().Add(5 * time.Second); victim < 0 && time.Now().Before(deadline); {
		for i, w := range c.Workers {
			if re.MatchString(w.Log()) {
				victim = i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if victim < 0 {
		t.Fatal("no worker logged the sleep")
	}
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
	deadline := time.Now().Add(15 * time.Second)
	for !p.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not exit", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
