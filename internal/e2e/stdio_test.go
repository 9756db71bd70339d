package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The stdio transport, driven through the real binary over pipes.

const stdioWait = 10 * time.Second

func modernMeta(extra map[string]any) map[string]any {
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func withMeta(params map[string]any, meta map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = meta
	return params
}

// resultText returns the text of a CallToolResult's content, failing on an
// error response.
func resultText(t *testing.T, l testenv.StdioLine) string {
	t.Helper()
	if l.Msg.Error != nil {
		t.Fatalf("got error %d %s, want a result: %s", l.Msg.Error.Code, l.Msg.Error.Message, l.Raw)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(l.Msg.Result, &r); err != nil {
		t.Fatalf("result: %v: %s", err, l.Raw)
	}
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "")
}

func wantErrorCode(t *testing.T, l testenv.StdioLine, code int64) {
	t.Helper()
	if l.Msg.Error == nil || l.Msg.Error.Code != code {
		t.Fatalf("got %s, want error %d", l.Raw, code)
	}
}

func methods(ls []testenv.StdioLine) []string {
	var out []string
	for _, l := range ls {
		if l.Msg.Method != "" {
			out = append(out, l.Msg.Method)
		}
	}
	return out
}

func stdioInitialize(t *testing.T, s *testenv.Stdio, id int, version string, caps map[string]any, name string) testenv.StdioLine {
	t.Helper()
	s.Request(id, "initialize", map[string]any{
		"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": name, "version": "1.0"},
	})
	r, _ := s.Response(jsonID(id), stdioWait)
	return r
}

func jsonID(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
}

func TestStdioLegacy(t *testing.T) {
	s := testenv.StartStdio(t, "--fixture", "conformance", "--log-level", "debug")

	// Before initialize: ping is answered, other requests are refused.
	s.Request(1, "ping", nil)
	if r, _ := s.Response("1", stdioWait); r.Msg.Error != nil || string(r.Msg.Result) != "{}" {
		t.Fatalf("ping before initialize: %s", r.Raw)
	}
	s.Request(2, "tools/list", nil)
	r, _ := s.Response("2", stdioWait)
	wantErrorCode(t, r, protocol.CodeInvalidRequest)

	// initialize opens the session; a second one is refused and changes
	// nothing: the first one's capabilities (sampling, roots) stay.
	r = stdioInitialize(t, s, 3, "2025-06-18", map[string]any{"sampling": map[string]any{}, "roots": map[string]any{}}, "first-client")
	var ir protocol.InitializeResult
	if r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &ir) != nil {
		t.Fatalf("initialize: %s", r.Raw)
	}
	if ir.ProtocolVersion != "2025-06-18" || ir.ServerInfo.Name == "" || ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged {
		t.Fatalf("initialize result: %s", r.Raw)
	}
	if ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		t.Fatalf("stdio delivers resource updates, so resources.subscribe must be advertised: %s", r.Raw)
	}
	r = stdioInitialize(t, s, 4, "2025-11-25", map[string]any{}, "second-client")
	wantErrorCode(t, r, protocol.CodeInvalidRequest)
	s.Notify("notifications/initialized", nil)

	s.Request(5, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "over stdio"}})
	if r, _ := s.Response("5", stdioWait); resultText(t, r) != "over stdio" {
		t.Fatalf("echo: %s", r.Raw)
	}

	// Progress goes out before the result.
	s.Request(6, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 350}, "_meta": map[string]any{"progressToken": "pt-6"}})
	r, before := s.Response("6", stdioWait)
	if resultText(t, r) != "slept" {
		t.Fatalf("sleep: %s", r.Raw)
	}
	progress := 0
	for _, l := range before {
		if l.Msg.Method == "notifications/progress" && strings.Contains(string(l.Raw), `"pt-6"`) {
			progress++
		}
	}
	if progress < 2 {
		t.Fatalf("sleep 350ms sent %d progress notifications before its result, want >= 2: %v", progress, methods(before))
	}

	// Logging honours the session's level: nothing before logging/setLevel.
	s.Request(7, "tools/call", map[string]any{"name": "test_tool_with_logging", "arguments": map[string]any{}})
	r, before = s.Response("7", stdioWait)
	if r.Msg.Error != nil {
		t.Fatalf("test_tool_with_logging: %s", r.Raw)
	}
	for _, m := range methods(before) {
		if m == "notifications/message" {
			t.Fatal("a log message was sent before the client set a level")
		}
	}
	s.Request(8, "logging/setLevel", map[string]any{"level": "debug"})
	if r, _ := s.Response("8", stdioWait); r.Msg.Error != nil {
		t.Fatalf("setLevel: %s", r.Raw)
	}
	s.Request(9, "tools/call", map[string]any{"name": "test_tool_with_logging", "arguments": map[string]any{}})
	_, before = s.Response("9", stdioWait)
	if n := strings.Count(strings.Join(methods(before), " "), "notifications/message"); n == 0 {
		t.Fatalf("no log message after logging/setLevel debug: %v", methods(before))
	}

	// Sampling: the server asks, the client answers on stdin while other
	// requests are served concurrently.
	s.Request(10, "tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "hello?"}})
	seen := s.Until(stdioWait, "sampling/createMessage", func(l testenv.StdioLine) bool {
		return l.Msg.Kind() == protocol.KindRequest && l.Msg.Method == "sampling/createMessage"
	})
	sampling := seen[len(seen)-1]
	s.Request(11, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "meanwhile"}})
	if r, _ := s.Response("11", stdioWait); resultText(t, r) != "meanwhile" {
		t.Fatalf("echo while sampling is pending: %s", r.Raw)
	}
	s.Send(`{"jsonrpc":"2.0","id":` + string(sampling.Msg.ID.AppendJSON(nil)) +
		`,"result":{"role":"assistant","content":{"type":"text","text":"sampled reply"},"model":"test-model"}}`)
	if r, _ := s.Response("10", stdioWait); resultText(t, r) != "LLM response: sampled reply" {
		t.Fatalf("test_sampling: %s", r.Raw)
	}

	// Roots: the first initialize declared them, so the server may ask.
	s.Request(12, "tools/call", map[string]any{"name": "list_roots", "arguments": map[string]any{}})
	seen = s.Until(stdioWait, "roots/list", func(l testenv.StdioLine) bool { return l.Msg.Method == "roots/list" })
	s.Send(`{"jsonrpc":"2.0","id":` + string(seen[len(seen)-1].Msg.ID.AppendJSON(nil)) + `,"result":{"roots":[{"uri":"file:///work"}]}}`)
	if r, _ := s.Response("12", stdioWait); resultText(t, r) != "file:///work" {
		t.Fatalf("list_roots: %s", r.Raw)
	}

	// Cancellation: the handler stops and its response is never sent.
	s.Request(13, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 30000}})
	waitFor(t, stdioWait, "sleep 13 started", func() bool { return strings.Contains(s.Stderr(), `msg="sleep started" request=13`) })
	s.Notify("notifications/cancelled", map[string]any{"requestId": 13, "reason": "user abort"})
	waitFor(t, stdioWait, "sleep 13 cancelled", func() bool { return strings.Contains(s.Stderr(), `msg="sleep cancelled" request=13`) })
	s.Request(14, "ping", nil)
	_, before = s.Response("14", stdioWait)
	// A marker after it: a response to 13 would come before the marker's.
	s.Request("marker-14", "ping", nil)
	_, marked := s.Response(`"marker-14"`, stdioWait)
	for _, l := range append(before, marked...) {
		if l.Msg.Kind() == protocol.KindResponse && string(l.Msg.ID.AppendJSON(nil)) == "13" {
			t.Fatalf("the cancelled request got a response: %s", l.Raw)
		}
	}

	// Resource subscriptions and list changes reach the session on stdout.
	s.Request(15, "resources/subscribe", map[string]any{"uri": "test://watched-resource"})
	if r, _ := s.Response("15", stdioWait); r.Msg.Error != nil {
		t.Fatalf("subscribe: %s", r.Raw)
	}
	s.Request(16, "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": "test://watched-resource"}})
	s.Request(17, "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": "test://not-subscribed"}})
	s.Request(18, "tools/call", map[string]any{"name": "test_trigger_tool_change", "arguments": map[string]any{}})
	got := map[string]int{}
	for _, l := range s.Until(stdioWait, "three responses", countResponses(3)) {
		if l.Msg.Method != "" {
			got[l.Msg.Method+" "+string(l.Msg.Params)]++
		}
	}
	if got[`notifications/resources/updated {"uri":"test://watched-resource"}`] != 1 || len(got) != 2 {
		t.Fatalf("notifications: %v, want one resources/updated for the subscribed URI and one tools/list_changed", got)
	}
	for k := range got {
		if !strings.HasPrefix(k, "notifications/resources/updated") && !strings.HasPrefix(k, "notifications/tools/list_changed") {
			t.Fatalf("unexpected notification %s", k)
		}
	}

	// Malformed lines are answered and serving goes on.
	s.Send("this is not json")
	r = s.Next(stdioWait)
	wantErrorCode(t, r, protocol.CodeParseError)
	if r.Msg.ID.IsValid() {
		t.Fatalf("a parse error has no id: %s", r.Raw)
	}
	s.Send(`{"jsonrpc":"2.0","id":19}`)
	r, _ = s.Response("19", stdioWait)
	wantErrorCode(t, r, protocol.CodeInvalidRequest)
	s.Send(`[{"jsonrpc":"2.0","id":20,"method":"ping"}]`)
	wantErrorCode(t, s.Next(stdioWait), protocol.CodeInvalidRequest)
	s.Request(21, "no/such/method", nil)
	r, _ = s.Response("21", stdioWait)
	wantErrorCode(t, r, protocol.CodeMethodNotFound)
	s.Request(22, "ping", nil)
	s.Response("22", stdioWait)

	// Logs go to stderr, never to stdout (every stdout line was checked).
	if !strings.Contains(s.Stderr(), "level=") {
		t.Fatalf("no logs on stderr: %q", s.Stderr())
	}

	// EOF ends the process, cleanly.
	s.CloseStdin()
	if err := s.WaitExit(stdioWait); err != nil {
		t.Fatalf("exit after EOF: %v", err)
	}
}

func countResponses(n int) func(testenv.StdioLine) bool {
	seen := 0
	return func(l testenv.StdioLine) bool {
		if l.Msg.Kind() == protocol.KindResponse {
			seen++
		}
		return seen == n
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.PollFor(t, testenv.HangGuard(timeout), what, cond)
}

// A line over the size cap is refused; the process goes on.
func TestStdioLineCap(t *testing.T) {
	s := testenv.StartStdio(t, "--max-message-bytes", "2048")
	s.Send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`)
	r := s.Next(stdioWait)
	wantErrorCode(t, r, protocol.CodeInvalidRequest)
	if !strings.Contains(r.Msg.Error.Message, "2048") {
		t.Fatalf("the error should name the limit: %s", r.Raw)
	}
	s.Send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1900) + `"}}`)
	if r, _ := s.Response("2", stdioWait); r.Msg.Error != nil {
		t.Fatalf("a message under the cap: %s", r.Raw)
	}
	s.CloseStdin()
	if err := s.WaitExit(stdioWait); err != nil {
		t.Fatal(err)
	}
}

func TestStdioModern(t *testing.T) {
	s := testenv.StartStdio(t, "--fixture", "conformance")
	meta := modernMeta(nil)

	// server/discover opens the modern era and advertises what stdio
	// delivers: list changes and resource subscriptions (listen streams).
	s.Request(1, "server/discover", withMeta(nil, meta))
	r, _ := s.Response("1", stdioWait)
	var dr protocol.DiscoverResult
	if r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &dr) != nil {
		t.Fatalf("discover: %s", r.Raw)
	}
	if dr.Capabilities.Tools == nil || !dr.Capabilities.Tools.ListChanged ||
		dr.Capabilities.Resources == nil || !dr.Capabilities.Resources.Subscribe || !dr.Capabilities.Resources.ListChanged {
		t.Fatalf("discover capabilities: %s", r.Msg.Result)
	}
	if !strings.Contains(string(r.Msg.Result), `"resultType":"complete"`) {
		t.Fatalf("discover result without resultType: %s", r.Msg.Result)
	}
	// The era is locked: initialize is refused.
	r = stdioInitialize(t, s, 2, "2025-11-25", map[string]any{}, "legacy")
	wantErrorCode(t, r, protocol.CodeInvalidRequest)

	// Modern rules: _meta is required, the version must be supported.
	s.Request(3, "tools/list", nil)
	r, _ = s.Response("3", stdioWait)
	wantErrorCode(t, r, protocol.CodeInvalidParams)
	s.Request(4, "tools/list", withMeta(nil, map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}))
	r, _ = s.Response("4", stdioWait)
	wantErrorCode(t, r, protocol.CodeUnsupportedProtocolVersion)
	s.Request(5, "logging/setLevel", withMeta(map[string]any{"level": "debug"}, meta))
	r, _ = s.Response("5", stdioWait)
	wantErrorCode(t, r, protocol.CodeMethodNotFound)

	// Two listen streams with different filters.
	s.Request("L1", "subscriptions/listen", withMeta(map[string]any{"notifications": map[string]any{
		"toolsListChanged": true, "resourceSubscriptions": []string{"test://watched-resource"}, "taskIds": []string{"t-1"}}}, meta))
	ack := s.Next(stdioWait)
	if ack.Msg.Method != "notifications/subscriptions/acknowledged" ||
		!strings.Contains(string(ack.Raw), `"io.modelcontextprotocol/subscriptionId":"L1"`) ||
		strings.Contains(string(ack.Raw), "taskIds") || !strings.Contains(string(ack.Raw), `"resourceSubscriptions":["test://watched-resource"]`) {
		t.Fatalf("L1 ack: %s", ack.Raw)
	}
	s.Request(7, "subscriptions/listen", withMeta(map[string]any{"notifications": map[string]any{"promptsListChanged": true}}, meta))
	if ack := s.Next(stdioWait); ack.Msg.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(ack.Raw), `"io.modelcontextprotocol/subscriptionId":7`) {
		t.Fatalf("listen 7 ack: %s", ack.Raw)
	}
	s.Request("L1", "subscriptions/listen", withMeta(map[string]any{"notifications": map[string]any{}}, meta))
	r, _ = s.Response(`"L1"`, stdioWait)
	wantErrorCode(t, r, protocol.CodeInvalidRequest)

	call := func(id int, name string, args map[string]any) []testenv.StdioLine {
		s.Request(id, "tools/call", withMeta(map[string]any{"name": name, "arguments": args}, meta))
		r, before := s.Response(jsonID(id), stdioWait)
		if r.Msg.Error != nil {
			t.Fatalf("%s: %s", name, r.Raw)
		}
		return before
	}
	tagged := func(ls []testenv.StdioLine) []string {
		var out []string
		for _, l := range ls {
			if l.Msg.Method == "" {
				continue
			}
			var p struct {
				URI  string         `json:"uri"`
				Meta map[string]any `json:"_meta"`
			}
			_ = json.Unmarshal(l.Msg.Params, &p)
			out = append(out, l.Msg.Method+" "+p.URI+" "+jsonID(p.Meta["io.modelcontextprotocol/subscriptionId"]))
		}
		return out
	}
	got := tagged(call(10, "test_trigger_tool_change", map[string]any{}))
	if len(got) != 1 || got[0] != `notifications/tools/list_changed  "L1"` {
		t.Fatalf("tool change: %q", got)
	}
	got = tagged(call(11, "test_trigger_prompt_change", map[string]any{}))
	if len(got) != 1 || got[0] != `notifications/prompts/list_changed  7` {
		t.Fatalf("prompt change: %q", got)
	}
	got = tagged(call(12, "touch_resource", map[string]any{"uri": "test://watched-resource"}))
	if len(got) != 1 || got[0] != `notifications/resources/updated test://watched-resource "L1"` {
		t.Fatalf("resource update: %q", got)
	}
	// Cancelling L1 ends it: nothing more is tagged L1, and it gets no
	// response.
	s.Notify("notifications/cancelled", map[string]any{"requestId": "L1"})
	s.Request(13, "ping", nil)
	s.Response("13", stdioWait)
	got = tagged(call(14, "test_trigger_tool_change", map[string]any{}))
	// A marker after it: anything tagged L1 would come before its response.
	s.Request("marker-14", "ping", nil)
	_, marked := s.Response(`"marker-14"`, stdioWait)
	got = append(got, tagged(marked)...)
	if len(got) != 0 {
		t.Fatalf("after cancelling L1: %q", got)
	}

	// Logging follows the request's _meta logLevel.
	s.Request(15, "tools/call", withMeta(map[string]any{"name": "test_logging_tool", "arguments": map[string]any{}},
		modernMeta(map[string]any{"io.modelcontextprotocol/logLevel": "debug"})))
	r, before := s.Response("15", stdioWait)
	if r.Msg.Error != nil || !strings.Contains(strings.Join(methods(before), " "), "notifications/message") {
		t.Fatalf("test_logging_tool with logLevel debug: %v then %s", methods(before), r.Raw)
	}

	// MRTR: input_required, then the retry with the answer; a replayed
	// requestState is refused.
	s.Request(16, "tools/call", withMeta(map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}}, meta))
	r, _ = s.Response("16", stdioWait)
	var ir struct {
		ResultType    string                     `json:"resultType"`
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if r.Msg.Error != nil || json.Unmarshal(r.Msg.Result, &ir) != nil || ir.ResultType != "input_required" || ir.RequestState == "" || ir.InputRequests["user_name"] == nil {
		t.Fatalf("MRTR first round: %s", r.Raw)
	}
	retry := func(id int) testenv.StdioLine {
		s.Request(id, "tools/call", withMeta(map[string]any{
			"name": "test_input_required_result_elicitation", "arguments": map[string]any{},
			"requestState":   ir.RequestState,
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
		}, meta))
		r, _ := s.Response(jsonID(id), stdioWait)
		return r
	}
	if r := retry(17); resultText(t, r) != "Hello, Ada!" {
		t.Fatalf("MRTR retry: %s", r.Raw)
	}
	wantErrorCode(t, retry(18), protocol.CodeInvalidParams)

	// Clients send no responses in this era; one is ignored.
	s.Send(`{"jsonrpc":"2.0","id":"x","result":{}}`)
	s.Request(19, "ping", nil)
	if r, before := s.Response("19", stdioWait); r.Msg.Error != nil || len(before) != 0 {
		t.Fatalf("after a stray response: %v %s", rawOf(before), r.Raw)
	}

	// EOF: the open listen stream ends with its result, and the process
	// exits.
	s.CloseStdin()
	r, _ = s.Response("7", stdioWait)
	if r.Msg.Error != nil || !strings.Contains(string(r.Msg.Result), `"resultType":"complete"`) || !strings.Contains(string(r.Msg.Result), `"io.modelcontextprotocol/subscriptionId":7`) {
		t.Fatalf("listen result at EOF: %s", r.Raw)
	}
	if err := s.WaitExit(stdioWait); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

func rawOf(ls []testenv.StdioLine) []string {
	var out []string
	for _, l := range ls {
		out = append(out, string(l.Raw))
	}
	return out
}

// A request with modern _meta, not only server/discover, opens the modern
// era; ping before anything leaves the era open.
func TestStdioEraFromMeta(t *testing.T) {
	s := testenv.StartStdio(t)
	s.Request(1, "ping", nil)
	s.Response("1", stdioWait)
	s.Request(2, "tools/call", withMeta(map[string]any{"name": "echo", "arguments": map[string]any{"text": "modern"}}, modernMeta(nil)))
	r, _ := s.Response("2", stdioWait)
	if resultText(t, r) != "modern" || !strings.Contains(string(r.Msg.Result), `"resultType":"complete"`) {
		t.Fatalf("modern echo: %s", r.Raw)
	}
	r = stdioInitialize(t, s, 3, "2025-11-25", map[string]any{}, "late")
	wantErrorCode(t, r, protocol.CodeInvalidRequest)
	s.CloseStdin()
	if err := s.WaitExit(stdioWait); err != nil {
		t.Fatal(err)
	}
}

// A request still running at EOF gets DrainTimeout to finish; its response
// is written before the process exits.
func TestStdioDrainAtEOF(t *testing.T) {
	s := testenv.StartStdio(t)
	stdioInitialize(t, s, 1, "2025-11-25", map[string]any{}, "c")
	s.Request(2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}})
	s.CloseStdin()
	if r, _ := s.Response("2", stdioWait); resultText(t, r) != "slept" {
		t.Fatalf("sleep across EOF: %s", r.Raw)
	}
	if err := s.WaitExit(stdioWait); err != nil {
		t.Fatal(err)
	}
}
