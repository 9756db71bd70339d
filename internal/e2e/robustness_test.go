package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestRobustness covers attacks and edge cases across deployments.
func TestRobustness(t *testing.T) {
	rules := []rule{
		{"another session cannot resume a stream", ruleResumeHijack},
		{"huge names do not break the bus", ruleHugeNames},
		{"a newer GET stream replaces the older", ruleGetSuperseded},
		{"a requestState is single-use", ruleStateSingleUse},
		{"a session request without a GET stream fails fast", ruleNoGetStream},
	}
	for _, tg := range startTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) { r.run(t, tg) })
			}
		})
	}
}

func ruleResumeHijack(t *testing.T, tg *target) {
	victim, attacker := tg.client(t), tg.client(t)
	victim.Initialize(nil)
	attacker.Initialize(nil)
	s := victim.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 800}, "_meta": map[string]any{"progressToken": 1}}), nil)
	var ids []string
	for len(ids) < 2 {
		if ev := s.Next(t, 10*time.Second); ev.ID != "" {
			ids = append(ids, ev.ID)
		}
	}
	for _, id := range ids {
		if g := attacker.OpenGet(map[string]string{"Last-Event-ID": id}); g.Status != 404 {
			t.Fatalf("another session resumed %s: HTTP %d", id, g.Status)
		}
	}
	// A stream id with index 0 (not an event the server sent) is refused
	// too.
	stream := strings.SplitN(ids[0], ":", 2)[0]
	if g := victim.OpenGet(map[string]string{"Last-Event-ID": stream + ":0"}); g.Status != 404 {
		t.Fatalf("resume from index 0: HTTP %d", g.Status)
	}
	expectEnd(t, s)
}

func ruleHugeNames(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	for _, name := range []string{strings.Repeat(".", 20000), strings.Repeat("é", 5000)} {
		r := c.Post(testenv.Request(1, "tools/call", callParams(name, nil)), nil)
		if r.Status != 200 || r.ErrorCode() != -32602 {
			t.Fatalf("huge tool name: got %s code %d, want -32602 unknown tool", r, r.ErrorCode())
		}
		r = c.Post(testenv.Request(2, "prompts/get", map[string]any{"name": name}), nil)
		if r.Status != 200 || r.ErrorCode() != -32602 {
			t.Fatalf("huge prompt name: got %s", r)
		}
	}
	// The session and the frontends still work.
	for i := 0; i < 2; i++ {
		c.Call(10+i, "tools/call", callParams("echo", map[string]any{"text": "still here"}))
	}
	// A modern listen on a long URI works; one over the cap is refused.
	mc := testenv.NewModernClient(t, tg.urls...)
	uri := "test://" + strings.Repeat("u", 3000)
	s, _ := openListen(t, mc, 1, map[string]any{"resourceSubscriptions": []string{uri}})
	modern(t, mc, 2, "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": uri}}, nil, nil)
	if _, m := s.NextMessage(t, 10*time.Second); m.Method != "notifications/resources/updated" {
		t.Fatalf("long URI: got %s", m.Method)
	}
	s.Close()
	msg, hdr := testenv.ModernRequest(3, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"test://" + strings.Repeat("u", 5000)}}}, nil)
	wantError(t, mc.Post(msg, hdr), 400, -32602)
}

func ruleGetSuperseded(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	old := c.OpenGet(nil)
	newer := c.OpenGet(nil)
	deadline := time.After(5 * time.Second)
	for closed := false; !closed; {
		select {
		case _, ok := <-old.Events:
			closed = !ok
		case <-deadline:
			t.Fatal("the older GET stream stayed open")
		}
	}
	c.Call(1, "tools/call", callParams("test_trigger_tool_change", nil))
	if _, m := newer.NextMessage(t, 10*time.Second); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("newer stream got %s", m.Method)
	}
}

func ruleStateSingleUse(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	caps := map[string]any{"elicitation": map[string]any{}}
	r := modern(t, c, 1, "tools/call", map[string]any{"name": "test_input_required_result_elicitation"}, caps, nil)
	var ir struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(r.Response().Result, &ir); err != nil || ir.RequestState == "" {
		t.Fatalf("round 1: %s", r.Response().Result)
	}
	retry := func(id int) *testenv.Reply {
		return modern(t, c, id, "tools/call", map[string]any{"name": "test_input_required_result_elicitation", "requestState": ir.RequestState,
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}, caps, nil)
	}
	if r := retry(2); !strings.Contains(string(r.Response().Result), "Hello, Ada!") {
		t.Fatalf("round 2: %s", r)
	}
	wantError(t, retry(3), 200, -32602)
}

func ruleNoGetStream(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"roots": map[string]any{"listChanged": true}})
	start := time.Now()
	if r := c.Post(testenv.Notification("notifications/roots/list_changed", nil), nil); r.Status != 202 {
		t.Fatalf("roots/list_changed: %s", r)
	}
	re := regexp.MustCompile(`msg="roots changed, but roots/list failed" session=` + regexp.QuoteMeta(c.SessionID[:8]))
	// Fast: well before a callback's own timeout (a generous hang guard,
	// not a latency target).
	testutil.PollFor(t, testenv.HangGuard(5*time.Second), "the callback's roots/list to fail fast without a GET stream", func() bool { return re.MatchString(tg.logs()) })
	t.Logf("the callback's roots/list failed after %s", time.Since(start).Round(time.Millisecond))
}
