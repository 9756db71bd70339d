package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

type rule struct {
	name string
	run  func(t *testing.T, tg *target)
}

// TestHTTPRules checks each 2025-11-25 Streamable HTTP rule against every
// deployment.
func TestHTTPRules(t *testing.T) {
	targets := startTargets(t)
	rules := []rule{
		{"initialize creates a session usable on every frontend", ruleInitialize},
		{"failed initialize leaves nothing behind", ruleFailedInitialize},
		{"second initialize is refused and changes nothing", ruleDuplicateInitialize},
		{"version negotiation", ruleVersionNegotiation},
		{"session id required, unknown session 404, DELETE ends it", ruleSessionLifecycle},
		{"malformed bodies", ruleMalformedBodies},
		{"Accept and Content-Type", ruleHeaders},
		{"MCP-Protocol-Version header", ruleProtocolVersionHeader},
		{"Origin and Host", ruleOriginHost},
		{"notifications and responses get 202", ruleAccepted},
		{"JSON or SSE response", ruleResponseForms},
		{"GET stream", ruleGetStream},
		{"unsupported HTTP methods", ruleMethods},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) { r.run(t, tg) })
			}
		})
	}
}

func ruleInitialize(t *testing.T, tg *target) {
	c := tg.client(t)
	r := c.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
	if r.Status != 200 || r.SSE {
		t.Fatalf("initialize: got %s, want 200 JSON", r)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	for _, ch := range sid {
		if ch < 0x21 || ch > 0x7e {
			t.Fatalf("session id %q has a character outside visible ASCII", sid)
		}
	}
	var res struct {
		ProtocolVersion string          `json:"protocolVersion"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
	}
	if err := json.Unmarshal(r.Response().Result, &res); err != nil || res.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize result: %s (%v)", r.Response().Result, err)
	}
	c.SessionID, c.ProtocolVersion = sid, res.ProtocolVersion
	if tg.record != nil {
		name, version := tg.record(t, sid)
		if name != "testenv" || version != "2025-11-25" {
			t.Fatalf("stored record: client %q version %q", name, version)
		}
	}
	// Every later request, on every frontend, works with the session.
	for i := 0; i < 4; i++ {
		res := c.Call(10+i, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": fmt.Sprint("hi", i)}})
		if !strings.Contains(string(res), fmt.Sprint("hi", i)) {
			t.Fatalf("echo %d: %s", i, res)
		}
	}
	// Responses other than InitializeResult carry no session id.
	r = c.Post(testenv.Request(20, "ping", nil), nil)
	if r.Header.Get("Mcp-Session-Id") != "" {
		t.Fatal("a ping response carried Mcp-Session-Id")
	}
}

func ruleFailedInitialize(t *testing.T, tg *target) {
	cases := []struct {
		name string
		body string
	}{
		{"no clientInfo", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`},
		{"no capabilities", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"x","version":"1"}}}`},
		{"no protocolVersion", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
		{"bad envelope", `{"jsonrpc":"1.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tg.client(t)
			before := -1
			if tg.sessions != nil {
				before = tg.sessions(t)
			}
			r := c.Post([]byte(tc.body), nil)
			if r.Status < 400 || r.Status >= 500 {
				t.Errorf("got %s, want a 4xx", r)
			}
			if code := r.ErrorCode(); code != -32602 && code != -32600 {
				t.Errorf("error code %d, want -32602 or -32600", code)
			}
			if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a failed initialize returned session id %q", sid)
			}
			if tg.sessions != nil {
				if after := tg.sessions(t); after != before {
					t.Errorf("sessions in the store went from %d to %d", before, after)
				}
			}
		})
	}
}

func ruleDuplicateInitialize(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(map[string]any{"sampling": map[string]any{}})
	r := c.Post(map[string]any{"jsonrpc": "2.0", "id": "again", "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "impostor", "version": "9"}}}, nil)
	if r.Status != 400 || r.ErrorCode() != -32600 {
		t.Fatalf("second initialize: got %s code %d, want 400 -32600", r, r.ErrorCode())
	}
	if id := string(r.Response().ID); id != `"again"` {
		t.Fatalf("error id %s, want \"again\"", id)
	}
	if tg.record != nil {
		name, version := tg.record(t, c.SessionID)
		if name != "testenv" || version != "2025-11-25" {
			t.Fatalf("session changed: client %q version %q", name, version)
		}
	}
	// The session keeps working, on every frontend.
	for i := 0; i < 3; i++ {
		c.Call(100+i, "tools/list", nil)
	}
}

func ruleVersionNegotiation(t *testing.T, tg *target) {
	for _, tc := range []struct{ asked, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05"},
		{"2099-01-01", "2025-11-25"},
	} {
		c := tg.client(t)
		r := c.Post(testenv.Request(1, "initialize", testenv.InitParams(tc.asked, nil)), nil)
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if r.Status != 200 || json.Unmarshal(r.Response().Result, &res) != nil || res.ProtocolVersion != tc.want {
			t.Errorf("asked %s: got %s %s, want %s", tc.asked, r, r.Body, tc.want)
		}
	}
}

func ruleSessionLifecycle(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	sid := c.SessionID

	// A non-initialize request without a session id: 400.
	r := c.Post(testenv.Request(1, "tools/list", nil), map[string]string{"Mcp-Session-Id": ""})
	if r.Status != 400 {
		t.Errorf("no session id: got %s, want 400", r)
	}
	// Unknown and garbage session ids: 404.
	for _, bad := range []string{"no-such-session-aaaaaaaaaaaaaaaaaaaa", "bad id", strings.Repeat("x", 300)} {
		r = c.Post(testenv.Request(2, "tools/list", nil), map[string]string{"Mcp-Session-Id": bad})
		if r.Status != 404 {
			t.Errorf("session %q: got %s, want 404", bad, r)
		}
	}
	// DELETE ends the session (on one frontend) ...
	d := c.Do(http.MethodDelete, c.URL(), nil, nil)
	if d.Status/100 != 2 {
		t.Fatalf("DELETE: got %s, want 2xx", d)
	}
	// ... everywhere: every later request gets 404.
	for i := 0; i < 2; i++ {
		r = c.Post(testenv.Request(3+i, "tools/list", nil), nil)
		if r.Status != 404 {
			t.Errorf("after DELETE: got %s, want 404", r)
		}
	}
	if d := c.Do(http.MethodDelete, c.URL(), nil, nil); d.Status != 404 {
		t.Errorf("second DELETE: got %s, want 404", d)
	}
	if tg.sessions != nil && tg.record != nil {
		_ = sid // the record is gone: counted by the failed-initialize rule
	}
	// A notification with an unknown session id: 404 too.
	r = c.Post(testenv.Notification("notifications/initialized", nil), nil)
	if r.Status != 404 {
		t.Errorf("notification on a deleted session: got %s, want 404", r)
	}
}

func ruleMalformedBodies(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   int64
	}{
		{"batch", []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), 400, -32600},
		{"empty batch", []byte(`[]`), 400, -32600},
		{"string", []byte(`"ping"`), 400, -32600},
		{"number", []byte(`42`), 400, -32600},
		{"null", []byte(`null`), 400, -32600},
		{"invalid JSON", []byte(`{"jsonrpc":"2.0","id":1,`), 400, -32700},
		{"not JSON", []byte(`hello`), 400, -32700},
		{"empty body", []byte(``), 400, -32700},
		{"too deep", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + deep + `}}}`), 400, -32700},
		{"no method or result", []byte(`{"jsonrpc":"2.0","id":1}`), 400, -32600},
		{"bool id", []byte(`{"jsonrpc":"2.0","id":true,"method":"ping"}`), 400, -32600},
		{"fractional id", []byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`), 400, -32600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Post(tc.body, nil)
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Errorf("got %s code %d, want %d %d", r, r.ErrorCode(), tc.status, tc.code)
			}
		})
	}
	t.Run("over the size cap", func(t *testing.T) {
		big := bytes.Repeat([]byte("a"), 5<<20)
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + string(big) + `"}}}`)
		r := c.Post(body, nil)
		if r.Status != 413 {
			t.Errorf("got %s, want 413", r)
		}
	})
	// The session still works after all that.
	c.Call(99, "ping", nil)
}

func ruleHeaders(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	ping := testenv.Request(1, "ping", nil)
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"Accept without text/event-stream", map[string]string{"Accept": "application/json"}, 406},
		{"Accept without application/json", map[string]string{"Accept": "text/event-stream"}, 406},
		{"no Accept", map[string]string{"Accept": ""}, 406},
		{"Accept with q=0", map[string]string{"Accept": "application/json, text/event-stream;q=0"}, 406},
		{"Accept in two headers", map[string]string{"Accept": "text/event-stream, application/json;q=0.9"}, 200},
		{"Content-Type text/plain", map[string]string{"Content-Type": "text/plain"}, 415},
		{"no Content-Type", map[string]string{"Content-Type": ""}, 415},
		{"Content-Type with charset", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Post(ping, tc.hdr)
			if r.Status != tc.status {
				t.Errorf("got %s, want %d", r, tc.status)
			}
		})
	}
}

func ruleProtocolVersionHeader(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	for _, tc := range []struct {
		version string
		status  int
	}{
		{"2025-11-25", 200},
		{"2025-06-18", 200},
		{"", 200}, // absent: assume the session's version
		{"1999-01-01", 400},
		{"garbage", 400},
	} {
		r := c.Post(testenv.Request(1, "ping", nil), map[string]string{"Mcp-Protocol-Version": tc.version})
		if r.Status != tc.status {
			t.Errorf("MCP-Protocol-Version %q: got %s, want %d", tc.version, r, tc.status)
		}
	}
}

func ruleOriginHost(t *testing.T, tg *target) {
	c := tg.client(t)
	body := testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil))
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"foreign Origin", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"foreign Host", map[string]string{"Host": "evil.example.com"}, 403},
		{"loopback Origin", map[string]string{"Origin": "http://localhost:1234"}, 200},
		{"null Origin", map[string]string{"Origin": "null"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Post(body, tc.hdr)
			if r.Status != tc.status {
				t.Errorf("got %s, want %d", r, tc.status)
			}
			if tc.status == 403 && r.Header.Get("Mcp-Session-Id") != "" {
				t.Error("a refused request created a session")
			}
		})
	}
}

func ruleAccepted(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	for _, tc := range []struct {
		name string
		msg  any
	}{
		{"initialized", testenv.Notification("notifications/initialized", nil)},
		{"cancel of an unknown request", testenv.Notification("notifications/cancelled", map[string]any{"requestId": 12345})},
		{"malformed cancel", testenv.Notification("notifications/cancelled", map[string]any{"requestId": map[string]any{}})},
		{"unknown notification", testenv.Notification("notifications/whatever", nil)},
		{"answer to a server request", map[string]any{"jsonrpc": "2.0", "id": "mcpf-nosuchworker-1", "result": map[string]any{}}},
		{"error answer to a server request", map[string]any{"jsonrpc": "2.0", "id": "mcpf-nosuchworker-2", "error": map[string]any{"code": -1, "message": "no"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Post(tc.msg, nil)
			if r.Status != 202 || len(r.Body) != 0 {
				t.Errorf("got %s, want 202 with no body", r)
			}
		})
	}
}

func ruleResponseForms(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	// A handler that emits nothing: one JSON response.
	r := c.Post(testenv.Request(1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}), nil)
	if r.Status != 200 || r.SSE || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || len(r.Messages) != 1 {
		t.Fatalf("echo: got %s, want one JSON response", r)
	}
	// Progress: an SSE stream with the notifications, then the result.
	g := c.OpenGet(nil)
	if g.Status != 200 {
		t.Fatalf("GET: HTTP %d", g.Status)
	}
	r = c.Post(testenv.Request(2, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 350}, "_meta": map[string]any{"progressToken": "tok"}}), nil)
	if r.Status != 200 || !r.SSE {
		t.Fatalf("sleep with progress: got %s, want an SSE stream", r)
	}
	if r.Header.Get("Cache-Control") != "no-cache" || r.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("SSE headers: %v", r.Header)
	}
	notes := r.Notifications()
	if len(notes) < 2 {
		t.Fatalf("got %d progress notifications, want at least 2", len(notes))
	}
	last := -1.0
	for _, n := range notes {
		var p struct {
			ProgressToken string  `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		if n.Method != "notifications/progress" || json.Unmarshal(n.Params, &p) != nil || p.ProgressToken != "tok" || p.Progress <= last {
			t.Fatalf("bad progress notification %s %s", n.Method, n.Params)
		}
		last = p.Progress
	}
	resp := r.Response()
	if resp == nil || string(resp.ID) != "2" || !strings.Contains(string(resp.Result), "slept") {
		t.Fatalf("sleep result: %+v", resp)
	}
	if raw := r.Messages[len(r.Messages)-1]; !bytes.Contains(raw, []byte(`"slept"`)) {
		t.Fatalf("the result is not the last message on the stream")
	}
	// Each message goes to exactly one stream: nothing of that request
	// appeared on the GET stream.
	select {
	case ev := <-g.Events:
		if !ev.Comment && ev.Data != "" {
			t.Fatalf("the GET stream got %q", ev.Data)
		}
	case <-time.After(200 * time.Millisecond):
	}
	// Logging without a level set: the session never asked, nothing is sent.
	r = c.Post(testenv.Request(3, "tools/call", map[string]any{"name": "test_tool_with_logging"}), nil)
	if n := len(r.Notifications()); n != 0 {
		t.Fatalf("got %d log messages without logging/setLevel", n)
	}
	c.Call(4, "logging/setLevel", map[string]any{"level": "info"})
	r = c.Post(testenv.Request(5, "tools/call", map[string]any{"name": "test_tool_with_logging"}), nil)
	if n := len(r.Notifications()); n != 3 || !r.SSE {
		t.Fatalf("got %d log messages (sse=%v) at level info, want 3 on an SSE stream", n, r.SSE)
	}
	c.Call(6, "logging/setLevel", map[string]any{"level": "error"})
	r = c.Post(testenv.Request(7, "tools/call", map[string]any{"name": "test_tool_with_logging"}), nil)
	if n := len(r.Notifications()); n != 0 {
		t.Fatalf("got %d info messages at level error", n)
	}
}

func ruleGetStream(t *testing.T, tg *target) {
	c := tg.client(t)
	c.Initialize(nil)
	g := c.OpenGet(nil)
	if g.Status != 200 || !strings.HasPrefix(g.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET: status %d content type %q", g.Status, g.Header.Get("Content-Type"))
	}
	if g.Header.Get("Cache-Control") != "no-cache" || g.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("GET headers: %v", g.Header)
	}
	g.Close()
	if s := c.OpenGet(map[string]string{"Accept": "application/json"}); s.Status != 406 {
		t.Errorf("GET without text/event-stream: got %d, want 406", s.Status)
	}
	if s := c.OpenGet(map[string]string{"Mcp-Session-Id": "unknown-session-aaaaaaaaaaaaaaaaa"}); s.Status != 404 {
		t.Errorf("GET with an unknown session: got %d, want 404", s.Status)
	}
	// DELETE ends open GET streams, wherever they are held.
	g = c.OpenGet(nil)
	if d := c.Do(http.MethodDelete, c.URL(), nil, nil); d.Status/100 != 2 {
		t.Fatalf("DELETE: %s", d)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-g.Events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the GET stream stayed open after DELETE")
		}
	}
}

func ruleMethods(t *testing.T, tg *target) {
	c := tg.client(t)
	for _, m := range []string{http.MethodPut, http.MethodPatch} {
		r := c.Do(m, c.URL(), []byte(`{}`), nil)
		if r.Status != 405 || r.Header.Get("Allow") == "" {
			t.Errorf("%s: got %s, want 405 with Allow", m, r)
		}
	}
}
