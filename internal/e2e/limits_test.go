package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/auth"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// The limits of issue 10, each with its clear error.
func TestLimits(t *testing.T) {
	ti := newTokenIssuer(t)
	v, err := auth.New(t.Context(), auth.Options{Issuer: testIssuer, Audience: testAudience, JWKSFile: ti.jwks})
	if err != nil {
		t.Fatal(err)
	}
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{Auth: v,
		MaxStringBytes: 100, MaxArrayLen: 5, MaxInFlightPerSession: 2, MaxInFlightPerPrincipal: 3, MaxSessionsPerPrincipal: 2,
		MaxListenPerPrincipal: 1, RatePerPrincipal: 20, RateBurst: 40}})
	alice := ti.token(t, "alice", "", time.Hour)

	// Sizes inside a message: 400 with -32600.
	a := authClient(t, ip.URL, alice, false)
	a.Initialize(nil)
	r := a.Post(testenv.Request(1, "tools/call", callParams("echo", map[string]any{"text": strings.Repeat("x", 200)})), nil)
	if r.Status != 400 || r.ErrorCode() != protocol.CodeInvalidRequest || !strings.Contains(r.String(), "100") {
		t.Fatalf("a 200-byte string (cap 100): %s", r)
	}
	r = a.Post(testenv.Request(2, "tools/call", callParams("echo", map[string]any{"text": "x", "extra": []int{1, 2, 3, 4, 5, 6}})), nil)
	if r.Status != 400 || r.ErrorCode() != protocol.CodeInvalidRequest {
		t.Fatalf("a 6-element array (cap 5): %s", r)
	}

	// A client's answers are bounded by the body cap alone: a response,
	// and the inputResponses and requestState of a 2026-07-28 retry, are
	// not refused for the size of what they carry.
	r = a.Post(map[string]any{"jsonrpc": "2.0", "id": "never-issued", "result": map[string]any{"data": strings.Repeat("x", 200)}}, nil)
	if strings.Contains(r.String(), "size limit") {
		t.Fatalf("a response with a 200-byte string (cap 100): %s", r)
	}
	mc := authClient(t, ip.URL, alice, true)
	msg, hdr := testenv.ModernRequest(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"},
		"inputResponses": map[string]any{"k": map[string]any{"result": map[string]any{"data": strings.Repeat("y", 200)}}}, "requestState": strings.Repeat("z", 200)}, nil)
	if r := mc.Post(msg, hdr); strings.Contains(r.String(), "size limit") || r.Status == 200 && r.ErrorCode() == 0 {
		t.Fatalf("a retry with a 200-byte answer and state (cap 100): %s, want the state refused as invalid, not for its size", r)
	}

	// Requests in flight per session: the third concurrent one is 429.
	var held []*testenv.Stream
	for i := range 2 {
		s := a.PostStream(testenv.Request(10+i, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": i}}), nil)
		s.NextMessage(t, 10*time.Second)
		held = append(held, s)
	}
	r = a.Post(testenv.Request(12, "tools/call", callParams("echo", map[string]any{"text": "third"})), nil)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a third request in flight (cap 2): %s", r)
	}
	for _, s := range held {
		expectEnd(t, s)
	}
	a.Call(13, "tools/call", callParams("echo", map[string]any{"text": "after"}))

	// A legacy request whose client closed its stream runs on, detached:
	// it keeps its slot until it ends.
	for i := range 2 {
		s := a.PostStream(testenv.Request(30+i, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": i}}), nil)
		s.NextMessage(t, 10*time.Second)
		s.Close()
	}
	// A bounded wait, the behaviour under test being that the closes free
	// nothing: the frontend sees them meanwhile.
	time.Sleep(200 * time.Millisecond)
	r = a.Post(testenv.Request(32, "tools/call", callParams("echo", map[string]any{"text": "third"})), nil)
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("a third request while two detached ones run (cap 2): %s", r)
	}
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "a detached request's slot to be freed", func() bool {
		return a.Post(testenv.Request(33, "tools/call", callParams("echo", map[string]any{"text": "later"})), nil).Status == 200
	})
	// Both slots free: a request held while another one is answered.
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "both detached requests' slots to be freed", func() bool {
		s := a.PostStream(testenv.Request(35, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 200}, "_meta": map[string]any{"progressToken": 35}}), nil)
		if s.Status != 200 {
			s.Close()
			return false
		}
		ok := a.Post(testenv.Request(36, "tools/call", callParams("echo", map[string]any{"text": "later"})), nil).Status == 200
		expectEnd(t, s)
		return ok
	})
	// Resuming a stream (Last-Event-ID) holds a slot like the request it
	// resumes: one request and its resumption fill the cap of 2.
	s := a.PostStream(testenv.Request(34, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": 34}}), nil)
	ev := s.Next(t, 10*time.Second)
	if ev.ID == "" {
		t.Fatalf("the first event of a POST stream has no id: %+v", ev)
	}
	g1 := a.OpenGet(map[string]string{"Last-Event-ID": ev.ID})
	if g1.Status != 200 {
		t.Fatalf("a resumption under the cap: HTTP %d %s", g1.Status, g1.Body)
	}
	if g2 := a.OpenGet(map[string]string{"Last-Event-ID": ev.ID}); g2.Status != http.StatusTooManyRequests {
		t.Fatalf("a second resumption with the session's 2 slots taken: HTTP %d %s", g2.Status, g2.Body)
	}
	expectEnd(t, g1)
	s.Close()

	// Requests in flight per principal (3), across sessionless requests:
	// the fourth is 429.
	p := authClient(t, ip.URL, alice, true)
	held = held[:0]
	for i := range 3 {
		msg, hdr := testenv.ModernRequest(20+i, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}, "_meta": map[string]any{"progressToken": i}}, nil)
		s := p.PostStream(msg, hdr)
		s.NextMessage(t, 10*time.Second)
		held = append(held, s)
	}
	if r := p.Post(testenv.ModernRequest(23, "tools/call", callParams("echo", map[string]any{"text": "fourth"}), nil)); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a fourth request in flight for the principal (cap 3): %s", r)
	}
	for _, s := range held {
		expectEnd(t, s)
	}
	if r := p.Post(testenv.ModernRequest(24, "tools/call", callParams("echo", map[string]any{"text": "after"}), nil)); r.Status != 200 {
		t.Fatalf("a request once the principal's requests ended: %s", r)
	}

	// Sessions per principal: a third is 429 until one ends.
	b := authClient(t, ip.URL, alice, false)
	b.Initialize(nil)
	c := authClient(t, ip.URL, alice, false)
	r = c.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a third session (cap 2): %s", r)
	}
	// Another principal cannot end alice's session.
	mallory := authClient(t, ip.URL, ti.token(t, "mallory", "", time.Hour), false)
	mallory.SessionID = b.SessionID
	if r := mallory.Do(http.MethodDelete, ip.URL, nil, nil); r.Status != http.StatusNotFound {
		t.Fatalf("mallory deleting alice's session: %s", r)
	}
	if r := b.Do(http.MethodDelete, ip.URL, nil, nil); r.Status != http.StatusNoContent {
		t.Fatalf("alice deleting her session: %s", r)
	}
	c.Initialize(nil)

	// Listen streams per principal: the second is 429.
	m := authClient(t, ip.URL, alice, true)
	s, _ = openListen(t, m, 1, map[string]any{"toolsListChanged": true})
	msg, hdr = testenv.ModernRequest(2, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if r := m.Post(msg, hdr); r.Status != http.StatusTooManyRequests {
		t.Fatalf("a second listen stream (cap 1): %s", r)
	}
	s.Close()

	// The rate limit: a burst past 40 gets 429 with Retry-After. The
	// requests go at once (sequential ones on a loaded machine could be
	// slower than the refill of 20/s and never exhaust the burst).
	const burst = 80
	statuses := make(chan string, burst)
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		msg, hdr := testenv.ModernRequest(100+i, "tools/list", nil, nil)
		body, _ := json.Marshal(msg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, ip.URL, bytes.NewReader(body))
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+alice)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			statuses <- fmt.Sprintf("%d retry-after=%t rate=%t", resp.StatusCode, resp.Header.Get("Retry-After") != "", strings.Contains(string(b), "rate limit"))
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[string]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts["429 retry-after=true rate=true"] == 0 || counts["200 retry-after=false rate=false"] == 0 {
		t.Fatalf("%d requests at once (20/s, burst 40): %v; want some 200 and some 429 with Retry-After", burst, counts)
	}
}

// The in-memory store's capacity: initialize past it is 503 with
// Retry-After, and a session that ends makes room.
func TestSessionStoreCapacity(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Store: sessionstore.Options{MaxSessions: 2}})
	a := testenv.NewClient(t, ip.URL)
	a.Initialize(nil)
	b := testenv.NewClient(t, ip.URL)
	b.Initialize(nil)
	c := testenv.NewClient(t, ip.URL)
	r := c.Post(testenv.Request(1, "initialize", testenv.InitParams("2025-11-25", nil)), nil)
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != protocol.CodeInternalError || r.Header.Get("Retry-After") == "" || r.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a third session of 2: %s", r)
	}
	// The sessions in place keep working.
	a.Call(2, "tools/call", callParams("echo", map[string]any{"text": "still"}))
	if r := b.Do(http.MethodDelete, ip.URL, nil, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	c.Initialize(nil)
}

// A legacy session's resource subscriptions are capped, and so is the
// length of a subscribed URI.
func TestSubscriptionCaps(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{Frontend: frontend.Options{MaxSubscriptionsPerSession: 2}})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)
	sub := func(id int, uri string) *testenv.Reply {
		return c.Post(testenv.Request(id, "resources/subscribe", map[string]any{"uri": uri}), nil)
	}
	for i, u := range []string{"test://a", "test://b", "test://a"} { // the second "a" is already held
		if r := sub(i+1, u); r.Status != 200 || r.ErrorCode() != 0 {
			t.Fatalf("subscribe %s: %s", u, r)
		}
	}
	if r := sub(4, "test://c"); r.ErrorCode() != protocol.CodeInvalidParams || !strings.Contains(r.String(), "most allowed") {
		t.Fatalf("a third subscription (cap 2): %s", r)
	}
	if r := c.Post(testenv.Request(5, "resources/unsubscribe", map[string]any{"uri": "test://b"}), nil); r.ErrorCode() != 0 {
		t.Fatalf("unsubscribe: %s", r)
	}
	if r := sub(6, "test://c"); r.ErrorCode() != 0 {
		t.Fatalf("subscribe after an unsubscribe: %s", r)
	}
	if r := sub(7, "test://"+strings.Repeat("u", 5000)); r.ErrorCode() != protocol.CodeInvalidParams {
		t.Fatalf("a 5 KB uri: %s", r)
	}
}

// Leave (the start of a frontend's drain): answers close their
// connections and /readyz reports draining, while requests are served.
func TestFrontendLeave(t *testing.T) {
	ip := testenv.StartInProc(t, testenv.InProcOptions{})
	c := testenv.NewClient(t, ip.URL)
	c.Initialize(nil)
	ip.Frontend.Leave()
	u, _ := neturl.Parse(ip.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"leaving"}}}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s",
		u.Path, u.Host, c.SessionID, c.ProtocolVersion, len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "leaving") || !resp.Close {
		t.Fatalf("an answer after Leave: HTTP %d %s (closes the connection: %v)", resp.StatusCode, b, resp.Close)
	}
	if err := ip.Frontend.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("Ready after Leave: %v", err)
	}
}
