package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestLegacyAcrossFrontends checks the legacy features that cross
// processes: each session's POSTs alternate between frontends (on the
// cluster), so answers, cancels and subscriptions arrive at another
// frontend than the stream they concern.
func TestLegacyAcrossFrontends(t *testing.T) {
	rules := []rule{
		{"sampling answered through the other frontend", ruleSampling},
		{"form elicitation answered through the other frontend", ruleElicitationForm},
		{"URL elicitation and its completion", ruleElicitationURL},
		{"URLElicitationRequired error", ruleURLRequired},
		{"cancel through the other frontend stops a sleep", ruleCancel},
		{"nested sampling request cancelled with its parent", ruleNestedCancel},
		{"request id reused while in flight", ruleReusedID},
		{"per-session state", rulePerSession},
		{"resource subscriptions reach the GET stream", ruleSubscriptions},
		{"list_changed reaches every session", ruleListChanged},
		{"server-closed stream resumed on the other frontend", ruleServerClose},
		{"missing capability is a clear error", ruleMissingCapability},
	}
	for _, tg := range startTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) { r.run(t, tg) })
			}
		})
	}
}

func callParams(name string, args map[string]any) map[string]any {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	return p
}

// expectEnd reads a stream to its end and returns its messages.
func expectEnd(t *testing.T, s *testenv.Stream) []testenv.Message {
	t.Helper()
	msgs, _, ended := s.Rest(10 * time.Second)
	if !ended {
		t.Fatal("the stream did not end")
	}
	for _, err := range s.SchemaErrors {
		t.Errorf("schema: %v", err)
	}
	return msgs
}

func responseOf(msgs []testenv.Message) *testenv.Message {
	for i := range msgs {
		if msgs[i].Method == "" && (msgs[i].Result != nil || msgs[i].Error != nil) {
			return &msgs[i]
		}
	}
	return nil
}

func ruleSampling(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"sampling": map[string]any{}})
	s := c.PostStream(testenv.Request(1, "tools/call", callParams("test_sampling", map[string]any{"prompt": "Say hi"})), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	if req.Method != "sampling/createMessage" || req.ID == nil {
		t.Fatalf("first message: %+v, want a sampling/createMessage request", req)
	}
	var p struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"maxTokens"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "Say hi" || p.MaxTokens != 100 {
		t.Fatalf("sampling params: %s", req.Params)
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"role": "assistant", "content": map[string]any{"type": "text", "text": "hello from the client"}, "model": "m", "stopReason": "endTurn"}}
	if r := c.Post(answer, nil); r.Status != 202 {
		t.Fatalf("answer: %s", r)
	}
	resp := responseOf(expectEnd(t, s))
	if resp == nil || !strings.Contains(string(resp.Result), "LLM response: hello from the client") {
		t.Fatalf("result: %+v", resp)
	}
}

func ruleElicitationForm(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"elicitation": map[string]any{}})
	s := c.PostStream(testenv.Request("e1", "tools/call", callParams("test_elicitation", map[string]any{"message": "Who are you?"})), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	if req.Method != "elicitation/create" || !strings.Contains(string(req.Params), "Who are you?") || !strings.Contains(string(req.Params), "requestedSchema") {
		t.Fatalf("first message: %s %s", req.Method, req.Params)
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"username": "ada", "email": "ada@example.com"}}}
	if r := c.Post(answer, nil); r.Status != 202 {
		t.Fatalf("answer: %s", r)
	}
	resp := responseOf(expectEnd(t, s))
	if resp == nil || !strings.Contains(string(resp.Result), "ada@example.com") {
		t.Fatalf("result: %+v", resp)
	}
}

func ruleElicitationURL(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	g := c.OpenGet(nil)
	s := c.PostStream(testenv.Request(1, "tools/call", callParams("confirm_url", map[string]any{"url": "https://example.com/auth"})), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	var p struct {
		Mode, URL, ElicitationID, Message string
	}
	if req.Method != "elicitation/create" || json.Unmarshal(req.Params, &p) != nil || p.Mode != "url" || p.URL != "https://example.com/auth" || p.ElicitationID == "" {
		t.Fatalf("first message: %s %s", req.Method, req.Params)
	}
	if r := c.Post(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"action": "accept"}}, nil); r.Status != 202 {
		t.Fatalf("answer: %s", r)
	}
	resp := responseOf(expectEnd(t, s))
	if resp == nil || !strings.Contains(string(resp.Result), "url elicitation accepted") {
		t.Fatalf("result: %+v", resp)
	}
	// The completion goes to this client's GET stream.
	_, m := g.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/elicitation/complete" || !strings.Contains(string(m.Params), p.ElicitationID) {
		t.Fatalf("GET stream: %s %s", m.Method, m.Params)
	}
	// A client without elicitation.url cannot be asked: a clear error.
	c2 := tg.client(t)
	c2.Initialize(map[string]any{"elicitation": map[string]any{}})
	r := c2.Post(testenv.Request(2, "tools/call", callParams("confirm_url", map[string]any{"url": "https://example.com"})), nil)
	if resp := r.Response(); resp == nil || !strings.Contains(string(resp.Result), "elicitation.url") {
		t.Fatalf("without elicitation.url: %s", r.Body)
	}
}

func ruleURLRequired(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	r := c.Post(testenv.Request(1, "tools/call", callParams("url_required", map[string]any{"url": "https://example.com/authorize"})), nil)
	resp := r.Response()
	if resp == nil || resp.Error == nil || resp.Error.Code != -32042 {
		t.Fatalf("got %s, want error -32042", r)
	}
	var d struct {
		Elicitations []struct{ Mode, URL, ElicitationID string } `json:"elicitations"`
	}
	if err := json.Unmarshal(resp.Error.Data, &d); err != nil || len(d.Elicitations) != 1 || d.Elicitations[0].Mode != "url" || d.Elicitations[0].ElicitationID == "" {
		t.Fatalf("error data: %s", resp.Error.Data)
	}
}

var sleepCancelledRE = regexp.MustCompile(`msg="sleep cancelled" request=(\S+) session=(\S+)`)

// waitLog waits until the workers logged a line matching re with the given
// request id and session.
func waitLog(t *testing.T, tg *target, id, session string) {
	t.Helper()
	guard := testenv.HangGuard(10 * time.Second)
	if !testutil.WaitFor(guard, func() bool {
		for _, m := range sleepCancelledRE.FindAllStringSubmatch(tg.logs(), -1) {
			if m[1] == id && (strings.HasPrefix(session, m[2]) || session == "" && m[2] == `""`) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the worker did not log within %s that sleep %s of session %.8s observed its cancellation", guard, id, session)
	}
}

func ruleCancel(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	s := c.PostStream(testenv.Request(77, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 5000}, "_meta": map[string]any{"progressToken": "c"}}), nil)
	_, m := s.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/progress" {
		t.Fatalf("first message %s", m.Method)
	}
	start := time.Now()
	if r := c.Post(testenv.Notification("notifications/cancelled", map[string]any{"requestId": 77, "reason": "user"}), nil); r.Status != 202 {
		t.Fatalf("cancel: %s", r)
	}
	msgs := expectEnd(t, s)
	if resp := responseOf(msgs); resp != nil {
		t.Fatalf("a cancelled request got a response: %+v", resp)
	}
	if time.Since(start) > testenv.HangGuard(4*time.Second) { // promptly: a hang guard, not a latency target
		t.Fatalf("the stream ended %s after the cancel", time.Since(start))
	}
	waitLog(t, tg, "77", c.SessionID)
	// Cancelling again, or an unknown or finished request, is harmless.
	for _, id := range []any{77, 78, "x"} {
		if r := c.Post(testenv.Notification("notifications/cancelled", map[string]any{"requestId": id}), nil); r.Status != 202 {
			t.Fatalf("second cancel: %s", r)
		}
	}
	// The session goes on; the id can be used again.
	if res := c.Call(77, "tools/call", callParams("echo", map[string]any{"text": "after"})); !strings.Contains(string(res), "after") {
		t.Fatalf("follow-up: %s", res)
	}
	// Another session cannot cancel this session's requests.
	other := tg.client(t)
	other.Initialize(nil)
	s = c.PostStream(testenv.Request(90, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600}, "_meta": map[string]any{"progressToken": 1}}), nil)
	other.Post(testenv.Notification("notifications/cancelled", map[string]any{"requestId": 90}), nil)
	if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("another session's cancel stopped the request: %+v", resp)
	}
}

func ruleNestedCancel(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"sampling": map[string]any{}})
	s := c.PostStream(testenv.Request("parent", "tools/call", callParams("test_sampling", map[string]any{"prompt": "x"})), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	if req.Method != "sampling/createMessage" {
		t.Fatalf("first message %s", req.Method)
	}
	if r := c.Post(testenv.Notification("notifications/cancelled", map[string]any{"requestId": "parent"}), nil); r.Status != 202 {
		t.Fatalf("cancel: %s", r)
	}
	msgs := expectEnd(t, s)
	if resp := responseOf(msgs); resp != nil {
		t.Fatalf("a cancelled request got a response: %+v", resp)
	}
	found := false
	for _, m := range msgs {
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			found = string(p.RequestID) == string(req.ID)
		}
	}
	if !found {
		t.Fatalf("no notifications/cancelled for the sampling request %s on the parent's stream: %+v", req.ID, msgs)
	}
	// A late answer to the cancelled sampling request is accepted and ignored.
	late := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "late"}, "model": "m"}}
	if r := c.Post(late, nil); r.Status != 202 {
		t.Fatalf("late answer: %s", r)
	}
}

func ruleReusedID(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	s := c.PostStream(testenv.Request(5, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 700}, "_meta": map[string]any{"progressToken": 1}}), nil)
	r := c.Post(testenv.Request(5, "tools/call", callParams("echo", map[string]any{"text": "dup"})), nil)
	if r.ErrorCode() != -32600 || !strings.Contains(r.Response().Error.Message, "already in use") {
		t.Fatalf("reused id: got %s, want -32600", r)
	}
	if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("the first request: %+v", resp)
	}
	// Another session may use the same id at the same time.
	other := tg.client(t)
	other.Initialize(nil)
	s = c.PostStream(testenv.Request(6, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}, "_meta": map[string]any{"progressToken": 1}}), nil)
	other.Call(6, "tools/call", callParams("echo", map[string]any{"text": "ok"}))
	expectEnd(t, s)
}

func rulePerSession(t *testing.T, tg *target) {
	loud, quiet := tg.client(t), tg.client(t)
	loud.Initialize(map[string]any{"sampling": map[string]any{}})
	quiet.Initialize(nil)
	loud.Call(1, "logging/setLevel", map[string]any{"level": "debug"})
	r := quiet.Post(testenv.Request(2, "tools/call", callParams("test_tool_with_logging", nil)), nil)
	if n := len(r.Notifications()); n != 0 {
		t.Fatalf("a session that never set a level got %d log messages", n)
	}
	r = loud.Post(testenv.Request(3, "tools/call", callParams("test_tool_with_logging", nil)), nil)
	if n := len(r.Notifications()); n != 3 {
		t.Fatalf("the debug session got %d log messages, want 3", n)
	}
	// Capabilities are the session's own: quiet declared no sampling.
	r = quiet.Post(testenv.Request(4, "tools/call", callParams("test_sampling", map[string]any{"prompt": "x"})), nil)
	if resp := r.Response(); resp == nil || !strings.Contains(string(resp.Result), "sampling") || !strings.Contains(string(resp.Result), `"isError":true`) {
		t.Fatalf("sampling without the capability: %s", r.Body)
	}
}

func ruleMissingCapability(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	r := c.Post(testenv.Request(1, "tools/call", callParams("test_elicitation", map[string]any{"message": "x"})), nil)
	resp := r.Response()
	if resp == nil || !strings.Contains(string(resp.Result), "client lacks the capability: elicitation") {
		t.Fatalf("got %s", r.Body)
	}
}

func ruleSubscriptions(t *testing.T, tg *target) {
	c, other := tg.client(t), tg.client(t)
	c.Initialize(nil)
	other.Initialize(nil)
	g := c.OpenGet(nil)      // on one frontend
	og := other.OpenGet(nil) // the other session's stream
	const uri = "test://watched-resource"
	if res := c.Call(1, "resources/subscribe", map[string]any{"uri": uri}); string(res) != "{}" {
		t.Fatalf("subscribe result %s, want {}", res)
	}
	c.Call(2, "tools/call", callParams("touch_resource", map[string]any{"uri": "test://not-watched"}))
	c.Call(3, "tools/call", callParams("touch_resource", map[string]any{"uri": uri}))
	ev, m := g.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/resources/updated" || !strings.Contains(string(m.Params), uri) {
		t.Fatalf("GET stream got %s %s, want resources/updated for %s", m.Method, m.Params, uri)
	}
	if ev.ID == "" {
		t.Error("the GET stream event has no id")
	}
	if res := c.Call(4, "resources/unsubscribe", map[string]any{"uri": uri}); string(res) != "{}" {
		t.Fatalf("unsubscribe result %s", res)
	}
	c.Call(5, "tools/call", callParams("touch_resource", map[string]any{"uri": uri}))
	assertQuiet(t, g, "after unsubscribe")
	assertQuiet(t, og, "on an unsubscribed session")
	// Subscribing a URI twice, or unsubscribing one never subscribed, is fine.
	c.Call(6, "resources/subscribe", map[string]any{"uri": uri})
	c.Call(7, "resources/subscribe", map[string]any{"uri": uri})
	c.Call(8, "resources/unsubscribe", map[string]any{"uri": "test://never"})
	// A subscription outlives the GET stream: a new stream gets updates.
	g.Close()
	g = c.OpenGet(nil)
	c.Call(9, "tools/call", callParams("touch_resource", map[string]any{"uri": uri}))
	if _, m := g.NextMessage(t, 10*time.Second); m.Method != "notifications/resources/updated" {
		t.Fatalf("new GET stream got %s", m.Method)
	}
}

func assertQuiet(t *testing.T, s *testenv.Stream, what string) {
	t.Helper()
	deadline := time.After(400 * time.Millisecond)
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				t.Fatalf("%s: the stream closed", what)
			}
			if !ev.Comment && ev.Data != "" {
				t.Fatalf("%s: got %s", what, ev.Data)
			}
		case <-deadline:
			return
		}
	}
}

func ruleListChanged(t *testing.T, tg *target) {
	a, b := tg.client(t), tg.client(t)
	a.Initialize(nil)
	b.Initialize(nil)
	ga, gb := a.OpenGet(nil), b.OpenGet(nil)
	a.Call(1, "tools/call", callParams("test_trigger_tool_change", nil))
	for _, g := range []*testenv.Stream{ga, gb} {
		if _, m := g.NextMessage(t, 10*time.Second); m.Method != "notifications/tools/list_changed" {
			t.Fatalf("got %s, want tools/list_changed", m.Method)
		}
	}
	b.Call(2, "tools/call", callParams("test_trigger_prompt_change", nil))
	for _, g := range []*testenv.Stream{ga, gb} {
		if _, m := g.NextMessage(t, 10*time.Second); m.Method != "notifications/prompts/list_changed" {
			t.Fatalf("got %s, want prompts/list_changed", m.Method)
		}
	}
}

func ruleServerClose(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	s := c.PostStream(testenv.Request(1, "tools/call", callParams("test_reconnection", nil)), nil)
	var ids []string
	retry := ""
	for ev := range s.Events {
		if ev.ID != "" {
			ids = append(ids, ev.ID)
		}
		if ev.Retry != "" {
			retry = ev.Retry
		}
		if ev.Data != "" {
			t.Fatalf("the stream carried data before closing: %s", ev.Data)
		}
	}
	if len(ids) == 0 || retry == "" {
		t.Fatalf("no priming event id (%v) or retry (%q) before the close", ids, retry)
	}
	// Resume on the next frontend.
	g := c.OpenGet(map[string]string{"Last-Event-ID": ids[len(ids)-1]})
	if g.Status != 200 {
		t.Fatalf("resume: HTTP %d %s", g.Status, g.Body)
	}
	msgs := expectEnd(t, g)
	if resp := responseOf(msgs); resp == nil || string(resp.ID) != "1" || !strings.Contains(string(resp.Result), "Reconnection test completed") {
		t.Fatalf("resumed stream: %+v", msgs)
	}
	// A Last-Event-ID that is not ours: 400.
	if g := c.OpenGet(map[string]string{"Last-Event-ID": "nonsense"}); g.Status != 400 {
		t.Fatalf("bogus Last-Event-ID: HTTP %d", g.Status)
	}
}

// TestResumeAfterFrontendKilled kills the frontend holding a POST stream
// mid-request; the client resumes with Last-Event-ID on the other
// frontend and gets the missed events of that stream, then the live ones
// and the result.
func TestResumeAfterFrontendKilled(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true})
	cl := testenv.NewClient(t, c.ProxyURL)
	cl.Initialize(nil)
	s := cl.PostStream(testenv.Request(9, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 2500}, "_meta": map[string]any{"progressToken": 9}}), nil)
	var ids []string
	for len(ids) < 4 { // priming + 3 progress events
		ev := s.Next(t, 10*time.Second)
		if ev.ID != "" {
			ids = append(ids, ev.ID)
		}
	}
	if !strings.HasPrefix(s.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("the sleep did not answer with a stream")
	}
	c.Frontends[streamHolder(t, c, "post")].Kill()
	// Resume through the proxy (on the surviving frontend) from the first
	// progress event: the next ones are replayed.
	g := testenv.NewClient(t, c.ProxyURL)
	g.SessionID, g.ProtocolVersion = cl.SessionID, cl.ProtocolVersion
	rs := g.OpenGet(map[string]string{"Last-Event-ID": ids[1]})
	if rs.Status != 200 {
		t.Fatalf("resume: HTTP %d %s", rs.Status, rs.Body)
	}
	msgs, got, ended := rs.Rest(15 * time.Second)
	if !ended {
		t.Fatal("the resumed stream did not end")
	}
	if len(got) < 3 || got[0] != ids[2] || got[1] != ids[3] {
		t.Fatalf("replay ids %v, want %v first", got, ids[2:])
	}
	prefix := strings.SplitN(ids[0], ":", 2)[0]
	last := -1
	for _, id := range got {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(id, prefix+":"), "%d", &n); err != nil || !strings.HasPrefix(id, prefix+":") || n <= last {
			t.Fatalf("event ids %v are not increasing ids of stream %s", got, prefix)
		}
		last = n
	}
	resp := responseOf(msgs)
	if resp == nil || string(resp.ID) != "9" || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("no result after resumption: %+v", msgs)
	}
	// The session lives on in Redis: the surviving frontend serves it.
	if r := g.Post(testenv.Request(10, "ping", nil), nil); r.Status != http.StatusOK {
		t.Fatalf("ping after the kill: %s", r)
	}
}

// TestGetResumedWhileHeld: a GET stream resumed with Last-Event-ID while
// the frontend still holds it supersedes the held one (the same stream id,
// a newer opening), so the next update reaches one stream and is logged
// once. TestNATSBlipAfterResume does the same across frontends of a NATS
// cluster.
func TestGetResumedWhileHeld(t *testing.T) {
	e := testenv.StartInProc(t, testenv.InProcOptions{})
	c := testenv.NewClient(t, e.URL)
	c.Initialize(nil)
	const uri, sentinel = "test://resumed-while-held", "test://resumed-while-held/sentinel"
	c.Call(2, "resources/subscribe", map[string]any{"uri": uri})
	c.Call(3, "resources/subscribe", map[string]any{"uri": sentinel})
	touch := func(id any, u string) {
		t.Helper()
		if r := c.Post(testenv.Request(id, "tools/call", callParams("touch_resource", map[string]any{"uri": u})), nil); r.ErrorCode() != 0 || !strings.Contains(string(r.Body), "touched") {
			t.Fatalf("touch_resource %s: %s", u, r)
		}
	}
	// until reads s up to an update of u and returns its event id and how
	// many updates of uri came before it.
	until := func(s *testenv.Stream, u string) (id string, before int) {
		t.Helper()
		for {
			ev, m := s.NextMessage(t, testenv.HangGuard(10*time.Second))
			switch updatedURI(m) {
			case u:
				return ev.ID, before
			case uri:
				before++
			}
		}
	}
	held := c.OpenGet(nil)
	touch(4, sentinel)
	last, _ := until(held, sentinel)
	resumed := c.OpenGet(map[string]string{"Last-Event-ID": last})
	if resumed.Status != http.StatusOK {
		t.Fatalf("resume: HTTP %d %s", resumed.Status, resumed.Body)
	}
	if msgs, _, ended := held.Rest(testenv.HangGuard(5 * time.Second)); !ended || len(msgs) != 0 {
		t.Fatalf("the held stream after the resumption: ended %v, messages %+v; want ended, none", ended, msgs)
	}
	touch(5, uri)
	until(resumed, uri)
	// The log has the update once: a second resumption replays it once
	// (the replay comes before the live sentinel).
	again := c.OpenGet(map[string]string{"Last-Event-ID": last})
	touch(6, sentinel)
	if _, n := until(again, sentinel); n != 1 {
		t.Fatalf("a second resumption replayed the update %d times, want once", n)
	}
}

// TestKeepAlive checks SSE keepalive comments on GET streams.
func TestKeepAlive(t *testing.T) {
	_, url := testenv.StartMCPFleet(t, "--keepalive", "150ms")
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	g := c.OpenGet(nil)
	deadline := time.After(5 * time.Second)
	for n := 0; n < 2; {
		select {
		case ev := <-g.Events:
			if ev.Comment {
				n++
			}
		case <-deadline:
			t.Fatal("no keepalive comments")
		}
	}
}

// TestRoots checks roots/list from a tool (on the POST stream) and the
// server callback for notifications/roots/list_changed, whose roots/list
// goes on the GET stream because the notification has no stream of its
// own.
func TestRoots(t *testing.T) {
	for _, tg := range startTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c := tg.client(t)
			c.Initialize(map[string]any{"roots": map[string]any{"listChanged": true}})
			roots := map[string]any{"roots": []any{map[string]any{"uri": "file:///a", "name": "a"}, map[string]any{"uri": "file:///b"}}}
			s := c.PostStream(testenv.Request(1, "tools/call", callParams("list_roots", nil)), nil)
			_, req := s.NextMessage(t, 10*time.Second)
			if req.Method != "roots/list" {
				t.Fatalf("got %s, want roots/list", req.Method)
			}
			c.Post(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": roots}, nil)
			if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), `file:///a\nfile:///b`) {
				t.Fatalf("list_roots result: %+v", resp)
			}

			g := c.OpenGet(nil)
			if r := c.Post(testenv.Notification("notifications/roots/list_changed", nil), nil); r.Status != 202 {
				t.Fatalf("roots/list_changed: %s", r)
			}
			_, req = g.NextMessage(t, 10*time.Second)
			if req.Method != "roots/list" || req.ID == nil {
				t.Fatalf("GET stream got %s, want a roots/list request", req.Method)
			}
			c.Post(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": roots}, nil)
			re := regexp.MustCompile(`msg="roots changed" session=` + regexp.QuoteMeta(c.SessionID[:8]) + ` roots=2`)
			testutil.PollFor(t, testenv.HangGuard(10*time.Second), "the server callback to get the roots", func() bool { return re.MatchString(tg.logs()) })

			// A client without roots cannot be asked.
			c2 := tg.client(t)
			c2.Initialize(nil)
			r := c2.Post(testenv.Request(2, "tools/call", callParams("list_roots", nil)), nil)
			if resp := r.Response(); resp == nil || !strings.Contains(string(resp.Result), "client lacks the capability: roots") {
				t.Fatalf("without roots: %s", r.Body)
			}
		})
	}
}

// TestReusedIDAcrossWorkers checks that a request id reused while in
// flight is refused even when the two requests would run on different
// workers: the claim lives in the store.
func TestReusedIDAcrossWorkers(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)
	for i := 0; i < 6; i++ {
		id := 100 + i
		s := cl.PostStream(testenv.Request(id, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 400}, "_meta": map[string]any{"progressToken": id}}), nil)
		r := cl.Post(testenv.Request(id, "tools/call", callParams("echo", map[string]any{"text": "dup"})), nil)
		if r.ErrorCode() != -32600 {
			t.Fatalf("attempt %d: reused id got %s, want -32600", i, r)
		}
		if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "slept") {
			t.Fatalf("attempt %d: first request: %+v", i, resp)
		}
	}
	// Once a request finished, its id is free again (released right after
	// the response).
	testutil.PollFor(t, testenv.HangGuard(5*time.Second), "the id to be free again", func() bool {
		return cl.Post(testenv.Request(100, "tools/call", callParams("echo", map[string]any{"text": "again"})), nil).ErrorCode() == 0
	})
}
