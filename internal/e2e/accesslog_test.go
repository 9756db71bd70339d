package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The frontend's access log (one line per exchange, written when it is
// over), read from the real binaries' output.

var jsonServingRE = regexp.MustCompile(`"msg":"mcpfleet serving"[^\n]*"url":"([^"]+)"`)

// jsonAIO runs the all-in-one binary with JSON logs and args, and returns
// it and its MCP endpoint.
func jsonAIO(t *testing.T, env []string, args ...string) (*testenv.Proc, string) {
	t.Helper()
	bin := filepath.Join(testenv.Binaries(t), "mcpfleet")
	p := testenv.StartEnv(t, "mcpfleet", bin, env, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	return p, p.WaitLog(t, jsonServingRE, 20*time.Second)
}

// accessLines returns the access lines of out that match every field of
// want.
func accessLines(out string, want map[string]any) []map[string]any {
	var ls []map[string]any
	for _, l := range logLines(out) {
		if l["msg"] != "access" {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && l[k] == v
		}
		if ok {
			ls = append(ls, l)
		}
	}
	return ls
}

// waitAccess waits for the access line of one exchange (the one line
// matching key) and returns it; a second line for it fails the test.
func waitAccess(t *testing.T, p *testenv.Proc, key map[string]any) map[string]any {
	t.Helper()
	var ls []map[string]any
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), fmt.Sprintf("the access line of %v", key), func() bool {
		ls = accessLines(p.Log(), key)
		return len(ls) > 0
	})
	if len(ls) != 1 {
		t.Fatalf("%d access lines for %v, want 1: %v", len(ls), key, ls)
	}
	return ls[0]
}

// checkFields fails for each field of l that is not as want says; a nil
// want means the field must be absent.
func checkFields(t *testing.T, what string, l map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := l[k]
		switch {
		case v == nil && ok:
			t.Errorf("%s: %s = %v, want none", what, k, got)
		case v != nil && got != v:
			t.Errorf("%s: %s = %v (%T), want %v", what, k, got, got, v)
		}
	}
	if d, ok := l["duration"].(float64); !ok || d <= 0 {
		t.Errorf("%s: duration %v, want a positive number of milliseconds", what, l["duration"])
	}
	if r, _ := l["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
		t.Errorf("%s: remote %q, want the client's loopback address", what, r)
	}
}

// TestAccessLog: one access line per exchange, with its fields: legacy
// and modern tools/call, an error answer, a notification; a GET stream
// and a listen stream (taken over by the hub) once they end, not before.
func TestAccessLog(t *testing.T) {
	p, url := jsonAIO(t, nil)
	cl := testenv.NewClient(t, url)
	cl.Initialize(nil)
	sid := cl.SessionID[:8]
	checkFields(t, "initialize", waitAccess(t, p, map[string]any{"method": "initialize"}),
		map[string]any{"http_method": "POST", "rpc_id": 0.0, "session": sid, "status": 200.0, "outcome": "ok", "rpc_error": nil, "error_type": nil})
	checkFields(t, "notifications/initialized", waitAccess(t, p, map[string]any{"method": "notifications/initialized"}),
		map[string]any{"session": sid, "status": 202.0, "rpc_id": nil})

	cl.Call(11, "tools/call", callParams("echo", map[string]any{"text": "hi"}))
	checkFields(t, "legacy tools/call", waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 11.0}),
		map[string]any{"http_method": "POST", "tool": "echo", "session": sid, "protocol": "2025-11-25", "status": 200.0,
			"outcome": "ok", "rpc_error": nil, "error_type": nil, "principal": nil})

	r := cl.Post(testenv.Request(12, "tools/call", callParams("no-such-tool", nil)), nil)
	code := r.ErrorCode()
	if code == 0 {
		t.Fatalf("tools/call of an unknown tool: %s, want an error", r)
	}
	checkFields(t, "failed tools/call", waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 12.0}),
		map[string]any{"tool": "no-such-tool", "status": float64(r.Status), "rpc_error": float64(code), "error_type": strconv.FormatInt(code, 10)})

	mc := testenv.NewModernClient(t, url)
	if r := modern(t, mc, 21, "tools/call", callParams("echo", map[string]any{"text": "hi"}), nil, nil); r.Status != 200 || r.Response() == nil || r.Response().Error != nil {
		t.Fatalf("modern tools/call: %s", r)
	}
	checkFields(t, "modern tools/call", waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 21.0}),
		map[string]any{"tool": "echo", "protocol": "2026-07-28", "status": 200.0, "outcome": "ok", "session": nil})

	// A GET stream is logged when it ends: an exchange that began after
	// it is logged first.
	g := cl.OpenGet(nil)
	if g.Status != 200 {
		t.Fatalf("GET stream: HTTP %d", g.Status)
	}
	g.Next(t, 10*time.Second) // the priming event: the stream is open
	cl.Call(13, "ping", nil)
	waitAccess(t, p, map[string]any{"method": "ping", "rpc_id": 13.0})
	if ls := accessLines(p.Log(), map[string]any{"http_method": "GET"}); len(ls) != 0 {
		t.Fatalf("an open GET stream was logged: %v", ls)
	}
	g.Close()
	checkFields(t, "GET stream", waitAccess(t, p, map[string]any{"http_method": "GET"}),
		map[string]any{"method": "GET", "session": sid, "status": 200.0, "rpc_id": nil})

	// So is a listen stream, which the hub writes once the handler
	// returned.
	msg, hdr := testenv.ModernRequest("l-1", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	ls := mc.PostStream(msg, hdr)
	if _, ack := ls.NextMessage(t, 10*time.Second); ls.Status != 200 || ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: HTTP %d %s", ls.Status, ack.Method)
	}
	modern(t, mc, 22, "ping", nil, nil, nil)
	waitAccess(t, p, map[string]any{"method": "ping", "rpc_id": 22.0})
	if l := accessLines(p.Log(), map[string]any{"method": "subscriptions/listen"}); len(l) != 0 {
		t.Fatalf("an open listen stream was logged: %v", l)
	}
	ls.Close()
	checkFields(t, "listen stream", waitAccess(t, p, map[string]any{"method": "subscriptions/listen"}),
		map[string]any{"rpc_id": "l-1", "status": 200.0, "outcome": "ok", "session": nil})
}

// TestAccessLogOff: --access-log=false, or MCPFLEET_ACCESS_LOG=false,
// writes no access line.
func TestAccessLogOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flag", nil, []string{"--access-log=false"}},
		{"environment", []string{"MCPFLEET_ACCESS_LOG=false"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, url := jsonAIO(t, tc.env, tc.args...)
			cl := testenv.NewClient(t, url)
			cl.Initialize(nil)
			cl.Call(1, "tools/call", callParams("echo", map[string]any{"text": "hi"}))
			cl.Post(testenv.Request(2, "tools/call", callParams("no-such-tool", nil)), nil)
			p.Stop(10 * time.Second) // every line is written by the end
			if ls := accessLines(p.Log(), nil); len(ls) != 0 {
				t.Fatalf("%d access lines with the access log off: %v", len(ls), ls)
			}
			if len(logLines(p.Log())) == 0 {
				t.Fatalf("no JSON log line at all: %q", p.Log())
			}
		})
	}
}

// TestLogsHoldNoSecrets serves requests whose arguments, Authorization,
// cookie, progress token and resource URI query carry a marker, with
// authentication, debug logging and the access log on: the marker is in
// no log line. The access lines of a 401 and of an authenticated call
// name what they may: the status, the principal.
func TestLogsHoldNoSecrets(t *testing.T) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "s3cr3t-" + hex.EncodeToString(b[:])
	ti := newTokenIssuer(t)
	p, url := jsonAIO(t, nil, "--log-level", "debug", "--auth-issuer", testIssuer, "--auth-audience", testAudience,
		"--auth-jwks-file", ti.jwks, "--auth-required-scopes", "mcp")

	bad := authClient(t, url, marker, false) // "Authorization: Bearer <marker>"
	if r := bad.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil); r.Status != 401 {
		t.Fatalf("a made-up token: %s, want 401", r)
	}
	// Authentication comes before the body is read: the method is the
	// HTTP one.
	checkFields(t, "401", waitAccess(t, p, map[string]any{"status": 401.0}),
		map[string]any{"method": "POST", "outcome": "rejected", "principal": nil, "rpc_error": float64(protocol.CodeInvalidRequest)})

	cl := authClient(t, url, ti.token(t, "alice", "mcp", time.Hour), false)
	cl.Header.Set("Cookie", "session="+marker)
	cl.Initialize(nil)
	r := cl.Post(testenv.Request(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": marker},
		"_meta": map[string]any{"progressToken": marker}}), nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), marker) {
		t.Fatalf("echo of the marker: %s", r)
	}
	checkFields(t, "authenticated tools/call", waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 2.0}),
		map[string]any{"principal": testIssuer + "#alice", "tool": "echo", "status": 200.0})
	cl.Post(testenv.Request(3, "resources/read", map[string]any{"uri": "test://secret/doc?token=" + marker + "#" + marker}), nil)
	checkFields(t, "resources/read", waitAccess(t, p, map[string]any{"method": "resources/read", "rpc_id": 3.0}),
		map[string]any{"resource": "test://secret/doc"})
	// A tool error, logged by the server on a worker with debug on.
	cl.Post(testenv.Request(4, "tools/call", callParams("no-such-tool", map[string]any{"secret": marker})), nil)
	waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 4.0})
	mc := authClient(t, url, ti.token(t, "alice", "mcp", time.Hour), true)
	modern(t, mc, 5, "tools/call", callParams("echo", map[string]any{"text": marker}), nil, nil)
	waitAccess(t, p, map[string]any{"method": "tools/call", "rpc_id": 5.0})

	p.Stop(10 * time.Second) // every line is written by the end
	out := p.Log()
	if strings.Contains(out, marker) {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, marker) {
				t.Errorf("a log line holds the marker: %s", l)
			}
		}
	}
	if strings.Contains(out, cl.SessionID) {
		t.Errorf("a whole session id was logged")
	}
}

// TestClusterLogAttributes: in a cluster of separate processes, a
// worker's handler line made with its context (the demo's "sleep
// started", on the process logger) carries the request's attributes and
// the caller's trace context; the frontend writes the exchange's access
// line, with the caller's trace id (tracing off: the exchange's span is the
// caller's).
func TestClusterLogAttributes(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1})
	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if r := cl.Post(testenv.Request(5, "tools/call", callParams("sleep", map[string]any{"ms": 1})), map[string]string{"Traceparent": tp}); r.Status != 200 {
		t.Fatalf("sleep: %s", r)
	}
	sid := regexp.QuoteMeta(cl.SessionID[:8])
	worker := regexp.MustCompile(`msg="sleep started" request=5 session=` + sid + ` method=tools/call rpc_id=5 tool=sleep trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7`)
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "the worker's sleep line with the request's attributes", func() bool {
		return worker.MatchString(c.Workers[0].Log())
	})
	access := regexp.MustCompile(`msg=access frontend=\S+ http_method=POST method=tools/call tool=sleep rpc_id=5 session=` + sid + ` protocol=2025-11-25 status=200 outcome=ok duration=\S+ trace_id=4bf92f3577b34da6a3ce929d0e0e4736 remote=127\.0\.0\.1:\d+`)
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "the frontend's access line", func() bool {
		return access.MatchString(c.Frontends[0].Log())
	})
}
