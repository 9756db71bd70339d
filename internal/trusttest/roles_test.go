package trusttest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

var violationRE = regexp.MustCompile(`(?i)permissions violation|authorization violation`)

// TestRolesServeThroughShippedPermissions: a real frontend and a real
// worker, each with its role's user in deploy/nats-auth.conf, serve a
// legacy session (initialize, tools/list, tools/call, a resource
// subscription delivered on the GET stream) and a 2026-07-28 tools/call;
// neither process meets a permissions violation on the way.
func TestRolesServeThroughShippedPermissions(t *testing.T) {
	n := startAuthNATS(t)
	_, redisURL := testenv.StartRedisServer(t)
	w := testenv.StartWorker(t, n.URL, n.workerArgs()...)
	fe, url := testenv.StartFrontend(t, n.URL, redisURL, n.frontendArgs()...)

	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	if res := c.Call(1, "tools/list", nil); !strings.Contains(string(res), `"echo"`) {
		t.Fatalf("tools/list: %s", res)
	}
	res := c.Call(2, "tools/call", callParams("echo", map[string]any{"text": "through the roles"}))
	if !strings.Contains(string(res), "through the roles") {
		t.Fatalf("tools/call echo: %s", res)
	}
	// A call with progress: the worker's frames are acked by the
	// frontend holding the stream (NATS requests from the worker role).
	ps := c.PostStream(testenv.Request(7, "tools/call", map[string]any{"name": "progress_steady", "arguments": map[string]any{"count": 3, "interval_ms": 10}, "_meta": map[string]any{"progressToken": 7}}), nil)
	msgs, _, ended := ps.Rest(testenv.HangGuard(10 * time.Second))
	if progress := len(msgs) - 1; !ended || progress != 3 || msgs[len(msgs)-1].Result == nil {
		t.Fatalf("a call with progress through the roles: ended %v, %d messages %+v; want 3 progress and the result", ended, len(msgs), msgs)
	}
	// The fallback when a stream's holder is gone: the worker role may
	// send a frame to the append subject, and a frontend answers it (a
	// malformed one is acked and dropped).
	wr := mustDial(t, n.URL, "worker", n.WorkerPW, subj.InboxPrefix("w"))
	if _, err := wr.Request(subj.Append("gone-frontend", "s1"), []byte("not an append envelope"), testenv.HangGuard(5*time.Second)); err != nil {
		t.Fatalf("the worker role's append request: %v", err)
	}
	g := c.OpenGet(nil)
	defer g.Close()
	const uri = "test://watched"
	c.Call(3, "resources/subscribe", map[string]any{"uri": uri})
	c.Call(4, "tools/call", callParams("touch_resource", map[string]any{"uri": uri}))
	if _, m := g.NextMessage(t, 10*time.Second); m.Method != "notifications/resources/updated" || !strings.Contains(string(m.Params), uri) {
		t.Fatalf("GET stream got %s %s, want resources/updated for %s", m.Method, m.Params, uri)
	}

	mc := testenv.NewModernClient(t, url)
	msg, hdr := testenv.ModernRequest(5, "tools/call", callParams("echo", map[string]any{"text": "modern"}), nil)
	r := mc.Post(msg, hdr)
	if resp := r.Response(); r.Status != 200 || resp == nil || resp.Error != nil || !strings.Contains(string(resp.Result), "modern") {
		t.Fatalf("modern tools/call: %s", r)
	}
	var tools struct {
		Tools []json.RawMessage `json:"tools"`
	}
	msg, hdr = testenv.ModernRequest(6, "tools/list", nil, nil)
	if r := mc.Post(msg, hdr); r.Response() == nil || json.Unmarshal(r.Response().Result, &tools) != nil || len(tools.Tools) == 0 {
		t.Fatalf("modern tools/list: %s", r)
	}

	for _, p := range []*testenv.Proc{fe, w} {
		if m := violationRE.FindString(p.Log()); m != "" {
			t.Errorf("%s met %q with its role's permissions:\n%s", p.Name, m, p.Log())
		}
	}
}
