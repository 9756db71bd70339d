package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

func modern(t *testing.T, c *testenv.Client, id any, method string, params map[string]any, caps map[string]any, extra map[string]string) *testenv.Reply {
	t.Helper()
	msg, hdr := testenv.ModernRequest(id, method, params, caps)
	for k, v := range extra {
		hdr[k] = v
	}
	return c.Post(msg, hdr)
}

func wantError(t *testing.T, r *testenv.Reply, status int, code int64) *testenv.Message {
	t.Helper()
	resp := r.Response()
	if r.Status != status || resp == nil || resp.Error == nil || resp.Error.Code != code {
		t.Fatalf("got %s (code %d), want HTTP %d with error %d", r, r.ErrorCode(), status, code)
	}
	return resp
}

// TestModernHTTPRules checks the 2026-07-28 wire rules against every
// deployment.
func TestModernHTTPRules(t *testing.T) {
	rules := []rule{
		{"server/discover", ruleDiscover},
		{"required _meta", ruleModernMeta},
		{"versions", ruleModernVersions},
		{"Mcp-Method and Mcp-Name headers", ruleModernHeaders},
		{"Mcp-Param headers", ruleParamHeaders},
		{"unknown and legacy-only methods", ruleModernMethods},
		{"missing client capability", ruleModernCapability},
		{"results carry resultType, caching hints, serverInfo", ruleModernResults},
		{"logging only on request, progress on the request's stream", ruleModernStreams},
		{"resource not found", ruleModernNotFound},
		{"listen acknowledges, filters and tags", ruleListen},
		{"MRTR answered through the other frontend", ruleMRTR},
		{"closing the stream cancels the request", ruleModernCancel},
	}
	for _, tg := range startTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) { r.run(t, tg) })
			}
		})
	}
}

func ruleDiscover(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	r := modern(t, c, 1, "server/discover", nil, nil, nil)
	if r.Status != 200 {
		t.Fatalf("discover: %s", r)
	}
	var res struct {
		ResultType        string          `json:"resultType"`
		SupportedVersions []string        `json:"supportedVersions"`
		TTLMs             *int64          `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
		Meta              json.RawMessage `json:"_meta"`
		Capabilities      struct {
			Tools     struct{ ListChanged bool } `json:"tools"`
			Resources struct {
				ListChanged bool `json:"listChanged"`
				Subscribe   bool `json:"subscribe"`
			} `json:"resources"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(r.Response().Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ResultType != "complete" || res.TTLMs == nil || res.CacheScope == "" || !strings.Contains(string(res.Meta), "serverInfo") {
		t.Errorf("discover result: %s", r.Response().Result)
	}
	if strings.Join(res.SupportedVersions, ",") != "2026-07-28,2025-11-25,2025-06-18,2025-03-26,2024-11-05" {
		t.Errorf("supportedVersions %v", res.SupportedVersions)
	}
	// The frontend serves listen, so list changes and subscriptions are
	// advertised.
	if !res.Capabilities.Tools.ListChanged || !res.Capabilities.Resources.ListChanged || !res.Capabilities.Resources.Subscribe {
		t.Errorf("capabilities: %s", r.Response().Result)
	}
	// clientInfo is optional.
	msg, hdr := testenv.ModernRequest(2, "server/discover", nil, nil)
	delete(msg["params"].(map[string]any)["_meta"].(map[string]any), "io.modelcontextprotocol/clientInfo")
	if r := c.Post(msg, hdr); r.Status != 200 {
		t.Errorf("discover without clientInfo: %s", r)
	}
}

func ruleModernMeta(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
	for _, tc := range []struct {
		name string
		meta map[string]any
	}{
		{"no protocolVersion", map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{}}},
		{"no clientCapabilities", map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Post(testenv.Request(7, "server/discover", map[string]any{"_meta": tc.meta}), hdr)
			resp := wantError(t, r, 400, -32602)
			if string(resp.ID) != "7" {
				t.Errorf("error id %s, want 7", resp.ID)
			}
		})
	}
	// No _meta at all, with a modern header: modern, and malformed.
	r := c.Post(testenv.Request(8, "server/discover", map[string]any{}), hdr)
	wantError(t, r, 400, -32602)
}

func ruleModernVersions(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	msg, hdr := testenv.ModernRequest(1, "server/discover", nil, nil)
	msg["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/protocolVersion"] = "v999.0.0"
	hdr["Mcp-Protocol-Version"] = "v999.0.0"
	resp := wantError(t, c.Post(msg, hdr), 400, -32022)
	var d struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	if json.Unmarshal(resp.Error.Data, &d) != nil || d.Requested != "v999.0.0" || len(d.Supported) == 0 {
		t.Fatalf("error data %s", resp.Error.Data)
	}
	hdr["Mcp-Protocol-Version"] = "2026-07-28"
	wantError(t, c.Post(msg, hdr), 400, -32020) // header differs from _meta
	msg, hdr = testenv.ModernRequest(2, "tools/list", nil, nil)
	delete(hdr, "Mcp-Protocol-Version")
	wantError(t, c.Post(msg, hdr), 400, -32020) // header missing
}

func ruleModernHeaders(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	call := map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}
	for _, tc := range []struct {
		name   string
		method string
		params map[string]any
		hdr    map[string]string
		status int
		code   int64
	}{
		{"method mismatch", "tools/list", nil, map[string]string{"Mcp-Method": "prompts/list"}, 400, -32020},
		{"method missing", "tools/list", nil, map[string]string{"Mcp-Method": ""}, 400, -32020},
		{"method case differs", "tools/list", nil, map[string]string{"Mcp-Method": "TOOLS/LIST"}, 400, -32020},
		{"name mismatch", "tools/call", call, map[string]string{"Mcp-Name": "other"}, 400, -32020},
		{"name missing", "tools/call", call, map[string]string{"Mcp-Name": ""}, 400, -32020},
		{"name with whitespace", "tools/call", call, map[string]string{"Mcp-Name": "  echo  "}, 200, 0},
		{"name in base64", "tools/call", call, map[string]string{"Mcp-Name": "=?base64?" + base64.StdEncoding.EncodeToString([]byte("echo")) + "?="}, 200, 0},
		{"name in bad base64", "tools/call", call, map[string]string{"Mcp-Name": "=?base64?ZWNobw?="}, 400, -32020},
		{"uri mismatch", "resources/read", map[string]any{"uri": "test://static-text"}, map[string]string{"Mcp-Name": "test://other"}, 400, -32020},
		{"uri matches", "resources/read", map[string]any{"uri": "test://static-text"}, nil, 200, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := modern(t, c, 3, tc.method, cloneMap(tc.params), nil, tc.hdr)
			if tc.code != 0 {
				wantError(t, r, tc.status, tc.code)
			} else if r.Status != tc.status || r.ErrorCode() != 0 {
				t.Fatalf("got %s", r)
			}
		})
	}
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func ruleParamHeaders(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	call := func(args map[string]any, hdr map[string]string) *testenv.Reply {
		return modern(t, c, 1, "tools/call", map[string]any{"name": "test_x_mcp_header", "arguments": args}, nil, hdr)
	}
	if r := call(map[string]any{"region": "eu-west"}, map[string]string{"Mcp-Param-Region": "eu-west"}); r.Status != 200 || !strings.Contains(string(r.Response().Result), "eu-west") {
		t.Fatalf("matching header: %s", r)
	}
	if r := call(map[string]any{"region": "Zürich"}, map[string]string{"mcp-param-region": "=?base64?" + base64.StdEncoding.EncodeToString([]byte("Zürich")) + "?="}); r.Status != 200 {
		t.Fatalf("base64 header: %s", r)
	}
	wantError(t, call(map[string]any{"region": "eu"}, map[string]string{"Mcp-Param-Region": "us"}), 400, -32020)
	wantError(t, call(map[string]any{"region": "eu"}, nil), 400, -32020)
	wantError(t, call(map[string]any{}, map[string]string{"Mcp-Param-Region": "eu"}), 400, -32020)
	wantError(t, call(map[string]any{"region": "Hello"}, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}), 400, -32020)
	if r := call(map[string]any{}, nil); r.Status != 200 {
		t.Fatalf("no argument, no header: %s", r)
	}
}

func ruleModernMethods(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	for _, m := range []string{"unknown/method", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "initialize"} {
		resp := wantError(t, modern(t, c, "m", m, nil, nil, nil), 404, -32601)
		if string(resp.ID) != `"m"` {
			t.Errorf("%s: error id %s", m, resp.ID)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := c.Do(m, c.URL(), nil, map[string]string{"Accept": "text/event-stream, application/json"})
		if r.Status != 405 {
			t.Errorf("%s without a session: got %s, want 405", m, r)
		}
	}
	// A notification is accepted.
	if r := c.Post(testenv.Notification("notifications/cancelled", map[string]any{"requestId": 1}), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}); r.Status != 202 {
		t.Errorf("notification: %s", r)
	}
}

func ruleModernCapability(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	resp := wantError(t, modern(t, c, 1, "tools/call", map[string]any{"name": "test_missing_capability"}, map[string]any{}, nil), 400, -32021)
	var d struct {
		RequiredCapabilities map[string]any `json:"requiredCapabilities"`
	}
	if json.Unmarshal(resp.Error.Data, &d) != nil || d.RequiredCapabilities["sampling"] == nil {
		t.Fatalf("error data %s", resp.Error.Data)
	}
	// Capabilities come from each request, never from an earlier one.
	if r := modern(t, c, 2, "tools/call", map[string]any{"name": "test_missing_capability"}, map[string]any{"sampling": map[string]any{}}, nil); r.Status != 200 || r.ErrorCode() != 0 {
		t.Fatalf("with sampling: %s", r)
	}
	wantError(t, modern(t, c, 3, "tools/call", map[string]any{"name": "test_missing_capability"}, map[string]any{}, nil), 400, -32021)
	// A handler asking for an undeclared input gets the same error.
	wantError(t, modern(t, c, 4, "tools/call", map[string]any{"name": "test_elicitation", "arguments": map[string]any{"message": "x"}}, map[string]any{}, nil), 400, -32021)
}

func ruleModernResults(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	var order []string
	for i := 0; i < 2; i++ {
		r := modern(t, c, i, "tools/list", nil, nil, nil)
		var res struct {
			ResultType string `json:"resultType"`
			TTLMs      *int64 `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
			Tools      []struct{ Name string }
		}
		if err := json.Unmarshal(r.Response().Result, &res); err != nil || res.ResultType != "complete" || res.TTLMs == nil || res.CacheScope == "" {
			t.Fatalf("tools/list: %s", r.Response().Result)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if i == 1 && strings.Join(names, ",") != strings.Join(order, ",") {
			t.Fatal("tools/list order differs between calls")
		}
		order = names
	}
	r := modern(t, c, 5, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil, nil)
	if !strings.Contains(string(r.Response().Result), `"resultType":"complete"`) || !strings.Contains(string(r.Response().Result), "io.modelcontextprotocol/serverInfo") {
		t.Fatalf("tools/call result: %s", r.Response().Result)
	}
}

func ruleModernStreams(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	r := modern(t, c, 1, "tools/call", map[string]any{"name": "test_logging_tool"}, nil, nil)
	if n := len(r.Notifications()); n != 0 {
		t.Fatalf("%d log messages without a logLevel", n)
	}
	r = modern(t, c, 2, "tools/call", map[string]any{"name": "test_logging_tool", "_meta": map[string]any{"io.modelcontextprotocol/logLevel": "info"}}, nil, nil)
	if n := r.Notifications(); len(n) != 1 || n[0].Method != "notifications/message" || !r.SSE {
		t.Fatalf("with logLevel info: %s %+v", r, n)
	}
	r = modern(t, c, 3, "tools/call", map[string]any{"name": "test_logging_tool", "_meta": map[string]any{"io.modelcontextprotocol/logLevel": "error"}}, nil, nil)
	if n := len(r.Notifications()); n != 0 {
		t.Fatalf("%d info messages at logLevel error", n)
	}
	r = modern(t, c, 4, "tools/call", map[string]any{"name": "test_tool_with_progress", "_meta": map[string]any{"progressToken": "pt"}}, nil, nil)
	if n := r.Notifications(); !r.SSE || len(n) != 3 || r.Response() == nil {
		t.Fatalf("progress: %s", r)
	}
	wantError(t, modern(t, c, 5, "tools/call", map[string]any{"name": "test_logging_tool", "_meta": map[string]any{"io.modelcontextprotocol/logLevel": "loud"}}, nil, nil), 400, -32602)
}

func ruleModernNotFound(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	r := modern(t, c, 1, "resources/read", map[string]any{"uri": "test://nope"}, nil, nil)
	resp := r.Response()
	if resp == nil || resp.Error == nil || resp.Error.Code != -32602 || !strings.Contains(string(resp.Error.Data), "test://nope") {
		t.Fatalf("got %s", r)
	}
}

// openListen opens a listen stream and checks its acknowledgement.
func openListen(t *testing.T, c *testenv.Client, id any, filter map[string]any) (*testenv.Stream, map[string]any) {
	t.Helper()
	msg, hdr := testenv.ModernRequest(id, "subscriptions/listen", map[string]any{"notifications": filter}, nil)
	s := c.PostStream(msg, hdr)
	if s.Status != 200 {
		t.Fatalf("listen: HTTP %d %s", s.Status, s.Body)
	}
	if s.Header.Get("X-Accel-Buffering") != "no" {
		t.Error("listen stream without X-Accel-Buffering: no")
	}
	_, ack := s.NextMessage(t, 10*time.Second)
	if ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %s, want the acknowledgement", ack.Method)
	}
	var p struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications map[string]any             `json:"notifications"`
	}
	_ = json.Unmarshal(ack.Params, &p)
	idJSON, _ := json.Marshal(id)
	if string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != string(idJSON) {
		t.Fatalf("ack subscription id %s, want %s", p.Meta["io.modelcontextprotocol/subscriptionId"], idJSON)
	}
	return s, p.Notifications
}

func tagged(t *testing.T, m testenv.Message, id any) {
	t.Helper()
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	idJSON, _ := json.Marshal(id)
	if string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != string(idJSON) {
		t.Fatalf("%s not tagged with subscription %s: %s", m.Method, idJSON, m.Params)
	}
}

func ruleListen(t *testing.T, tg *target) {
	// Every listen stream is held by the first frontend and every call
	// that raises an event goes through the last one (on the cluster, the
	// other frontend), so each event must reach a stream on a frontend
	// that did not forward the call. Clients alternate frontends per
	// request, so a and b each keep to one URL.
	a := testenv.NewModernClient(t, tg.urls[0])
	b := testenv.NewModernClient(t, tg.urls[len(tg.urls)-1])
	const uri = "test://watched-resource"
	res, honoured := openListen(t, a, "sub-res", map[string]any{"resourceSubscriptions": []string{uri}, "taskIds": []string{"t1"}})
	if honoured["taskIds"] != nil {
		t.Errorf("the ack honours taskIds, which this server cannot deliver: %v", honoured)
	}
	tools, _ := openListen(t, a, 42, map[string]any{"toolsListChanged": true})
	prompts, _ := openListen(t, a, "p", map[string]any{"promptsListChanged": true})

	modern(t, b, 1, "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": "test://other"}}, nil, nil)
	modern(t, b, 2, "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": uri}}, nil, nil)
	_, m := res.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/resources/updated" || !strings.Contains(string(m.Params), uri) {
		t.Fatalf("resource stream got %s %s", m.Method, m.Params)
	}
	tagged(t, m, "sub-res")

	modern(t, b, 3, "tools/call", map[string]any{"name": "test_trigger_tool_change"}, nil, nil)
	_, m = tools.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/tools/list_changed" {
		t.Fatalf("tools stream got %s", m.Method)
	}
	tagged(t, m, 42)
	assertQuiet(t, prompts, "a prompts-only stream after a tools change")
	assertQuiet(t, res, "a resource stream after a tools change")
	modern(t, b, 4, "tools/call", map[string]any{"name": "test_trigger_prompt_change"}, nil, nil)
	_, m = prompts.NextMessage(t, 10*time.Second)
	if m.Method != "notifications/prompts/list_changed" {
		t.Fatalf("prompts stream got %s", m.Method)
	}
	tagged(t, m, "p")
	for _, s := range []*testenv.Stream{res, tools, prompts} {
		s.Close()
	}
	// A filter is required.
	msg, hdr := testenv.ModernRequest(9, "subscriptions/listen", map[string]any{}, nil)
	wantError(t, a.Post(msg, hdr), 400, -32602)
}

func ruleMRTR(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...) // requests alternate between frontends
	caps := map[string]any{"elicitation": map[string]any{}}
	params := func() map[string]any {
		return map[string]any{"name": "test_input_required_result_multi_round", "arguments": map[string]any{}}
	}
	r := modern(t, c, 1, "tools/call", params(), caps, nil)
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(r.Response().Result, &ir); err != nil || ir.ResultType != "input_required" || ir.InputRequests["step1"] == nil || ir.RequestState == "" {
		t.Fatalf("round 1: %s", r.Response().Result)
	}
	p := params()
	p["inputResponses"] = map[string]any{"step1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	p["requestState"] = ir.RequestState
	r = modern(t, c, 2, "tools/call", p, caps, nil)
	state1 := ir.RequestState
	ir.InputRequests = nil
	if err := json.Unmarshal(r.Response().Result, &ir); err != nil || ir.ResultType != "input_required" || ir.InputRequests["step2"] == nil {
		t.Fatalf("round 2: %s", r.Response().Result)
	}
	p = params()
	p["inputResponses"] = map[string]any{"step2": map[string]any{"action": "accept", "content": map[string]any{"color": "green"}}}
	p["requestState"] = ir.RequestState
	r = modern(t, c, 3, "tools/call", p, caps, nil)
	if res := string(r.Response().Result); !strings.Contains(res, `"resultType":"complete"`) || !strings.Contains(res, "Ada") || !strings.Contains(res, "green") {
		t.Fatalf("round 3: %s", res)
	}
	// A tampered state, or one from another request, is refused.
	p["requestState"] = ir.RequestState + "-TAMPERED"
	wantError(t, modern(t, c, 4, "tools/call", p, caps, nil), 200, -32602)
	p = map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}, "requestState": state1,
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}}
	wantError(t, modern(t, c, 5, "tools/call", p, caps, nil), 200, -32602)
	// The same handler code on a legacy session sends a server-to-client
	// request instead.
	lc := tg.client(t)
	lc.Initialize(caps)
	s := lc.PostStream(testenv.Request(6, "tools/call", map[string]any{"name": "test_input_required_result_elicitation"}), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	if req.Method != "elicitation/create" {
		t.Fatalf("legacy: got %s", req.Method)
	}
	lc.Post(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Lin"}}}, nil)
	if resp := responseOf(expectEnd(t, s)); resp == nil || !strings.Contains(string(resp.Result), "Hello, Lin!") {
		t.Fatalf("legacy result: %+v", resp)
	}
}

func ruleModernCancel(t *testing.T, tg *target) {
	c := testenv.NewModernClient(t, tg.urls...)
	msg, hdr := testenv.ModernRequest(4242, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 5000}, "_meta": map[string]any{"progressToken": 1}}, nil)
	s := c.PostStream(msg, hdr)
	if _, m := s.NextMessage(t, 10*time.Second); m.Method != "notifications/progress" {
		t.Fatalf("first message %s", m.Method)
	}
	s.Close() // the cancellation in 2026-07-28
	waitLog(t, tg, "4242", "")
}

// TestListenLimits checks the listen cap (503 beyond), a dead peer's slot
// freed, and shutdown delivering the final listen result, on the
// all-in-one binary and on a frontend process of a cluster.
func TestListenLimits(t *testing.T) {
	args := []string{"--max-listen-subscriptions", "2", "--listen-keepalive-interval", "200ms"}
	aio, aioURL := testenv.StartMCPFleet(t, append([]string{"--fixture", "conformance"}, args...)...)
	cl := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, FrontendArgs: args})
	for _, tc := range []struct {
		name string
		proc *testenv.Proc
		url  string
	}{{"all-in-one", aio, aioURL}, {"cluster", cl.Frontends[0], cl.URLs[0]}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testenv.NewModernClient(t, tc.url)
			first, _ := openListen(t, c, 1, map[string]any{"toolsListChanged": true})
			// A peer that dies abruptly (connection reset, no FIN
			// handshake): its slot is freed.
			dead := rawListen(t, tc.url, 2)
			msg, hdr := testenv.ModernRequest(3, "subscriptions/listen", map[string]any{"notifications": map[string]any{}}, nil)
			if s := c.PostStream(msg, hdr); s.Status != 503 {
				t.Fatalf("past the cap: HTTP %d, want 503", s.Status)
			}
			_ = dead.SetLinger(0)
			dead.Close()
			var second *testenv.Stream
			testutil.PollFor(t, testenv.HangGuard(5*time.Second), "the dead peer's slot to be freed", func() bool {
				msg, hdr := testenv.ModernRequest(4, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
				if s := c.PostStream(msg, hdr); s.Status == 200 {
					second = s
				} else {
					s.Close()
				}
				return second != nil
			})
			if _, m := second.NextMessage(t, 5*time.Second); m.Method != "notifications/subscriptions/acknowledged" {
				t.Fatalf("second stream: %s", m.Method)
			}
			// Keepalive comments flow.
			for got := false; !got; {
				select {
				case ev := <-first.Events:
					got = ev.Comment
				case <-time.After(5 * time.Second):
					t.Fatal("no keepalive on the listen stream")
				}
			}
			// Shutdown: each listen stream gets its final result.
			_ = tc.proc.Signal(syscall.SIGTERM)
			for _, s := range []*testenv.Stream{first, second} {
				msgs, _, ended := s.Rest(10 * time.Second)
				if !ended {
					t.Fatal("the listen stream did not end on shutdown")
				}
				resp := responseOf(msgs)
				if resp == nil || !strings.Contains(string(resp.Result), `"resultType":"complete"`) || !strings.Contains(string(resp.Result), "io.modelcontextprotocol/subscriptionId") {
					t.Fatalf("no final result on shutdown: %+v", msgs)
				}
			}
		})
	}
}

// rawListen opens a listen stream over a bare TCP connection, reads the
// acknowledgement and returns the connection.
func rawListen(t *testing.T, url string, id int) *net.TCPConn {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := testenv.ModernRequest(id, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	body, _ := json.Marshal(msg)
	req := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + string(body)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "200 OK") {
		t.Fatalf("raw listen: %v %q", err, buf[:n])
	}
	return conn.(*net.TCPConn)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
