package e2e

// Hostile clients (issue 10, point 5). Each test runs the all-in-one
// binary (so its memory can be read from /proc/<pid>/status) with the
// conformance fixture, keeps a well-behaved client calling echo every
// 50 ms through its own session, throws one family of abuse at the server
// and checks that the good client never noticed, that the abuse got the
// answer the server's contract prescribes, and that memory stayed bounded.
// Every test logs a table "input -> what the server returned".
//
// The limits the tests lean on:
//   - ReadHeaderTimeout 10 s (the root package's runHTTP http.Server)
//     and --body-timeout 10 s (408) for a request's body;
//   - frontend.Options.WriteTimeout 10 s: each write to a GET or POST SSE
//     stream has that deadline, a listen stream's pending bytes wait at
//     most that long (the hub's writers never wait for a client), and a
//     JSON answer has 10 s to be taken;
//   - --max-body-bytes 4 MiB (413), protocol.DefaultMaxDepth 64 (-32700),
//     --max-string-bytes 2 MiB and --max-array-len 10000 (400, -32600),
//     initialize params kept per session at most 64 KiB (-32602);
//   - --max-listen-subscriptions (503 beyond).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

const (
	hostileReadHeaderTimeout = 10 * time.Second // serve.go runHTTP: http.Server.ReadHeaderTimeout
	hostileWriteTimeout      = 10 * time.Second // frontend.Options.WriteTimeout default
	hostileMaxBody           = 4 << 20          // --max-body-bytes default
	hostileMaxString         = 2 << 20          // --max-string-bytes default
	hostileMaxArray          = 10000            // --max-array-len default
	// hostileHoldLimit is how long a connection that makes no progress may
	// be held: well past every timeout of the server (10 s).
	hostileHoldLimit = 25 * time.Second
)

var (
	// hostileGoodMaxLatency bounds any one echo of the good client: a hang
	// guard (stretched for race-enabled binaries), not a latency target.
	hostileGoodMaxLatency = testenv.HangGuard(3 * time.Second)
	// hostileRSSLimit bounds the RSS growth during an attack: a guard
	// against unbounded growth, five times larger for race-enabled
	// binaries (the race detector's shadow memory), not a memory target.
	hostileRSSLimit = int64(200<<20) * map[bool]int64{false: 1, true: 5}[testenv.RaceEnabled]
)

// ---------------------------------------------------------------------------
// The table each test logs.

type hostileTable struct {
	mu   sync.Mutex
	rows [][3]string
}

func (tb *hostileTable) add(kase, input, got string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, [3]string{kase, input, got})
}

func (tb *hostileTable) log(t *testing.T, title string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "hostile table %q (%d rows): case | input | what the server returned\n", title, len(tb.rows))
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	t.Logf("%s", b.String())
}

// ---------------------------------------------------------------------------
// The server under attack.

type hostileServer struct {
	proc  *testenv.Proc
	url   string // the MCP endpoint
	base  string // http://host:port
	host  string // host:port
	admin string // the admin listener: http://host:port
}

func startHostileServer(t *testing.T, args ...string) *hostileServer {
	t.Helper()
	p, u := testenv.StartMCPFleet(t, append([]string{"--fixture", "conformance"}, args...)...)
	base := strings.TrimSuffix(u, "/mcp")
	return &hostileServer{proc: p, url: u, base: base, host: strings.TrimPrefix(base, "http://"), admin: p.AdminURL(t)}
}

var hostilePanicRE = regexp.MustCompile(`(?i)panic|fatal error|\[recovery\]`)

// assertHealthy checks that the server still runs, logged no panic (gin's
// recovery included) and answers /healthz.
func (s *hostileServer) assertHealthy(t *testing.T) {
	t.Helper()
	if s.proc.Exited() {
		t.Fatalf("the server exited during the attack; its log ends:\n%s", hostileTail(s.proc.Log(), 3000))
	}
	log := s.proc.Log()
	if loc := hostilePanicRE.FindStringIndex(log); loc != nil {
		from, to := max(0, loc[0]-300), min(len(log), loc[1]+1500)
		t.Errorf("the server logged a panic:\n%s", log[from:to])
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(s.admin + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: HTTP %d", resp.StatusCode)
	}
}

// assertNoSessionIDs checks that the server's log (at the level it was
// started with) never shows one of the session ids in full: a log reader
// must not be able to take a session over.
func (s *hostileServer) assertNoSessionIDs(t *testing.T, tab *hostileTable, ids ...string) {
	t.Helper()
	log := s.proc.Log()
	found := 0
	for _, id := range ids {
		if id != "" && strings.Contains(log, id) {
			found++
			t.Errorf("the server log shows the session id %s… in full", id[:min(8, len(id))])
		}
	}
	tab.add("logs", fmt.Sprintf("the server's log (%d lines) searched for the %d session ids in full", strings.Count(log, "\n"), len(ids)), fmt.Sprintf("%d found", found))
}

func hostileTail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// hostileRSS returns the resident set size of pid (VmRSS), in bytes.
func hostileRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's VmRSS: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func hostileMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// scrape returns the server's /metrics text.
func (s *hostileServer) scrape(t *testing.T) string {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(s.admin + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return string(b)
}

// hostileSeries returns the value of one series (name{labels}) in a
// Prometheus text exposition, 0 when absent.
func hostileSeries(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, series+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[len(series):]), 64)
			return v
		}
	}
	return 0
}

// ---------------------------------------------------------------------------
// The well-behaved client.

type hostileGood struct {
	url, session, version string
	hc                    *http.Client
	stop, done            chan struct{}
	once                  sync.Once

	mu       sync.Mutex
	lat      []time.Duration
	failures []string
}

// startHostileGood initializes a session and calls echo on it every 50 ms
// from a goroutine until finish.
func startHostileGood(t *testing.T, url string) *hostileGood {
	t.Helper()
	c := testenv.NewClient(t, url)
	c.Initialize(nil)
	g := &hostileGood{
		url: url, session: c.SessionID, version: c.ProtocolVersion,
		hc:   &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := g.call(0); err != nil {
		t.Fatalf("good client: the first echo failed: %v", err)
	}
	go g.loop()
	t.Cleanup(g.halt)
	return g
}

func (g *hostileGood) halt() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
}

func (g *hostileGood) loop() {
	defer close(g.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		start := time.Now()
		err := g.call(n)
		d := time.Since(start)
		g.mu.Lock()
		g.lat = append(g.lat, d)
		if err != nil {
			g.failures = append(g.failures, fmt.Sprintf("echo %d at %s (%s): %v", n, start.Format("15:04:05.000"), d.Round(time.Millisecond), err))
		}
		g.mu.Unlock()
	}
}

func (g *hostileGood) call(n int) error {
	text := fmt.Sprintf("good-%d", n)
	body := hostileJSON(testenv.Request(n, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}))
	req, err := http.NewRequest(http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", g.session)
	req.Header.Set("Mcp-Protocol-Version", g.version)
	resp, err := g.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if !bytes.Contains(b, []byte(`"text":"`+text+`"`)) || bytes.Contains(b, []byte(`"error":`)) {
		return fmt.Errorf("unexpected answer: %.200s", b)
	}
	return nil
}

// finish stops the good client, records its statistics and fails the test
// when any call failed or was slower than hostileGoodMaxLatency.
func (g *hostileGood) finish(t *testing.T, tab *hostileTable) {
	t.Helper()
	// At least 20 calls (about a second), however short the attack was.
	testutil.WaitFor(testenv.HangGuard(10*time.Second), func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.lat) >= 20
	})
	g.halt()
	g.mu.Lock()
	defer g.mu.Unlock()
	lat := append([]time.Duration(nil), g.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond)
	}
	tab.add("good client", "echo every 50 ms through its own session, throughout the attack",
		fmt.Sprintf("%d calls, %d failed, latency p50 %s p99 %s max %s", len(lat), len(g.failures), q(.5), q(.99), q(1)))
	if len(lat) < 20 {
		t.Errorf("good client: only %d echo calls were made", len(lat))
	}
	for i, f := range g.failures {
		if i == 5 {
			break
		}
		t.Errorf("good client: %s", f)
	}
	if len(g.failures) > 0 {
		t.Errorf("good client: %d of %d echo calls failed", len(g.failures), len(lat))
	}
	if q(1) > hostileGoodMaxLatency {
		t.Errorf("good client: an echo took %s (bound %s; p99 %s)", q(1), hostileGoodMaxLatency, q(.99))
	}
}

// ---------------------------------------------------------------------------
// Raw HTTP.

func hostileJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func hostileEcho(id any, text string) []byte {
	return hostileJSON(testenv.Request(id, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}))
}

// hostileDial connects to host; rcvbuf > 0 shrinks the socket's receive
// buffer before the handshake, so the advertised window stays tiny.
func hostileDial(host string, rcvbuf int) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}
	}
	return d.Dial("tcp", host)
}

// hostileReq builds a request byte for byte: the header lines as given
// (nothing added but Content-Length when a body is given without
// Content-Length or Transfer-Encoding).
func hostileReq(method, target string, hdr []string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	framed := false
	for _, h := range hdr {
		l := strings.ToLower(h)
		if strings.HasPrefix(l, "content-length:") || strings.HasPrefix(l, "transfer-encoding:") {
			framed = true
		}
		b.WriteString(h)
		b.WriteString("\r\n")
	}
	if body != nil && !framed {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// postHdr returns the header lines of a well-formed POST (legacy session
// headers when session is set).
func (s *hostileServer) postHdr(session string, extra ...string) []string {
	h := []string{"Host: " + s.host, "Accept: application/json, text/event-stream", "Content-Type: application/json"}
	if session != "" {
		h = append(h, "Mcp-Session-Id: "+session, "Mcp-Protocol-Version: 2025-11-25")
	}
	return append(h, extra...)
}

// modernHdr returns the header lines of a 2026-07-28 POST.
func (s *hostileServer) modernHdr(hdr map[string]string) []string {
	h := []string{"Host: " + s.host, "Accept: application/json, text/event-stream", "Content-Type: application/json"}
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h = append(h, k+": "+hdr[k])
	}
	return h
}

// getHdr returns the header lines of a legacy GET stream request.
func (s *hostileServer) getHdr(session string, extra ...string) []string {
	return append([]string{"Host: " + s.host, "Accept: text/event-stream", "Mcp-Session-Id: " + session, "Mcp-Protocol-Version: 2025-11-25"}, extra...)
}

// hostileWithout drops the header lines named name.
func hostileWithout(hdr []string, name string) []string {
	var out []string
	for _, h := range hdr {
		if !strings.HasPrefix(strings.ToLower(h), strings.ToLower(name)+":") {
			out = append(out, h)
		}
	}
	return out
}

// hostileResp is what one raw exchange got back.
type hostileResp struct {
	status  int
	header  http.Header
	body    []byte
	code    int64 // JSON-RPC error code (0: none)
	result  json.RawMessage
	eventID string // the first SSE event's id, for a stream
	sse     bool
	err     error
	elapsed time.Duration
}

func (r *hostileResp) decode() {
	if len(bytes.TrimSpace(r.body)) == 0 || bytes.TrimSpace(r.body)[0] != '{' {
		return
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &m) == nil {
		r.result = m.Result
		if m.Error != nil {
			r.code = m.Error.Code
		}
	}
}

func (r hostileResp) String() string {
	if r.status == 0 {
		return "no HTTP response (" + hostileErr(r.err) + ")"
	}
	s := fmt.Sprintf("HTTP %d", r.status)
	switch {
	case r.code != 0:
		s += fmt.Sprintf(", JSON-RPC error %d", r.code)
	case r.result != nil:
		s += ", JSON-RPC result"
	case r.sse:
		s += ", SSE stream"
		if r.eventID != "" {
			s += " (first event id " + hostileTrunc(r.eventID, 40) + ")"
		}
	case len(bytes.TrimSpace(r.body)) == 0:
		s += ", empty body"
	default:
		s += fmt.Sprintf(", body %q", hostileTrunc(string(r.body), 60))
	}
	if len(r.body) >= 64<<10 {
		s += ", " + hostileMiB(int64(len(r.body))) + " body"
	}
	if r.elapsed >= time.Second {
		s += fmt.Sprintf(", after %s", r.elapsed.Round(100*time.Millisecond))
	}
	return s
}

func hostileTrunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func hostileErr(err error) string {
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	}
	return hostileTrunc(err.Error(), 80)
}

// hostileRaw sends req on a fresh connection (writing while it reads, so a
// server that answers before the body is in is seen) and reads one
// response; an SSE response is read up to its first event.
func hostileRaw(host string, req []byte, timeout time.Duration) hostileResp {
	start := time.Now()
	conn, err := hostileDial(host, 0)
	if err != nil {
		return hostileResp{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	go func() { _, _ = conn.Write(req) }()
	r := hostileRead(conn, bufio.NewReaderSize(conn, 64<<10))
	r.elapsed = time.Since(start)
	return r
}

// hostileRead reads one response from br; an SSE stream is read for up to
// 2 s, for its first event id (the caller closes the connection: closing
// the body would drain the stream).
func hostileRead(conn net.Conn, br *bufio.Reader) hostileResp {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return hostileResp{err: err}
	}
	r := hostileResp{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.sse = true
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "id: ") {
				r.eventID = strings.TrimPrefix(line, "id: ")
			}
			if line == "" && r.eventID != "" {
				break
			}
		}
		return r
	}
	defer resp.Body.Close()
	r.body, r.err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	r.decode()
	return r
}

// hostileExpect returns a check of the status and the JSON-RPC error code
// (0: no error object).
func hostileExpect(status int, code int64) func(hostileResp) error {
	return func(r hostileResp) error {
		if r.status != status || r.code != code {
			return fmt.Errorf("want HTTP %d with JSON-RPC code %d", status, code)
		}
		return nil
	}
}

// hostileExpectHTTP checks only the status (responses of net/http itself,
// which carry no JSON-RPC body).
func hostileExpectHTTP(status int) func(hostileResp) error {
	return func(r hostileResp) error {
		if r.status != status {
			return fmt.Errorf("want HTTP %d", status)
		}
		return nil
	}
}

// hostileExpectEcho checks a successful echo of a text of n bytes.
func hostileExpectEcho(n int) func(hostileResp) error {
	return func(r hostileResp) error {
		if r.status != 200 || r.code != 0 || r.result == nil {
			return errors.New("want HTTP 200 with the echo result")
		}
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(r.result, &res); err != nil || len(res.Content) != 1 || len(res.Content[0].Text) != n {
			return fmt.Errorf("want the echo of %d bytes, got %.120s", n, r.result)
		}
		return nil
	}
}

// hostileCase is one input and the answer the server's contract
// prescribes (want nil: recorded only, but never a 5xx nor a dropped
// connection).
type hostileCase struct {
	name, input string
	req         []byte
	want        func(hostileResp) error
	timeout     time.Duration
}

func runHostileCases(t *testing.T, host string, tab *hostileTable, cases []hostileCase) {
	t.Helper()
	for _, c := range cases {
		timeout := c.timeout
		if timeout == 0 {
			timeout = 20 * time.Second
		}
		r := hostileRaw(host, c.req, timeout)
		tab.add(c.name, c.input, r.String())
		switch {
		case c.want != nil:
			if err := c.want(r); err != nil {
				t.Errorf("%s (%s): got %s: %v", c.name, c.input, r, err)
			}
		case r.status == 0 || r.status >= 500:
			t.Errorf("%s (%s): got %s, want a client error or success", c.name, c.input, r)
		}
	}
}

// ---------------------------------------------------------------------------
// Slow clients.

// hostileSlow is a connection that writes head at once, then one byte of
// trickle every interval (repeating trickle's last byte once it is
// spent), and never reads until told to; a reader goroutine notes when the
// server closes it.
type hostileSlow struct {
	conn   net.Conn
	start  time.Time
	closed chan struct{}
	after  time.Duration // when the server closed it (valid once closed)
	got    []byte        // the first bytes the server sent
	stop   chan struct{}
	once   sync.Once
}

func startHostileSlow(t *testing.T, host, head, trickle string, every time.Duration) *hostileSlow {
	t.Helper()
	conn, err := hostileDial(host, 0)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	s := &hostileSlow{conn: conn, start: time.Now(), closed: make(chan struct{}), stop: make(chan struct{})}
	t.Cleanup(s.close)
	go func() {
		if head != "" {
			if _, err := conn.Write([]byte(head)); err != nil {
				return
			}
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				return
			case <-s.closed:
				return
			case <-tick.C:
			}
			c := trickle[len(trickle)-1]
			if i < len(trickle) {
				c = trickle[i]
			}
			if _, err := conn.Write([]byte{c}); err != nil {
				return
			}
		}
	}()
	go func() {
		buf := make([]byte, 512)
		var got []byte
		for {
			n, err := conn.Read(buf)
			if len(got) < 256 {
				got = append(got, buf[:n]...)
			}
			if err != nil {
				s.got, s.after = got, time.Since(s.start)
				close(s.closed)
				return
			}
		}
	}()
	return s
}

func (s *hostileSlow) close() {
	s.once.Do(func() { close(s.stop) })
	_ = s.conn.Close()
}

// closedBy reports whether the server closed the connection by deadline.
func (s *hostileSlow) closedBy(deadline time.Time) bool {
	select {
	case <-s.closed:
		return true
	default:
	}
	select {
	case <-s.closed:
		return true
	case <-time.After(time.Until(deadline)):
		return false
	}
}

// hostileDrained reads conn to its end: nil when the server closed it
// (EOF or reset) within timeout; n is what was read.
func hostileDrained(conn net.Conn, timeout time.Duration) (int64, error) {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	n, err := io.Copy(io.Discard, conn)
	if err == nil || errors.Is(err, syscall.ECONNRESET) {
		return n, nil
	}
	return n, err
}

// TestHostileSlowloris: slow senders and non-readers, while a good client
// works and a well-behaved listen stream keeps receiving.
//
//   - 200 connections send their request headers one byte every 500 ms:
//     ReadHeaderTimeout (10 s) must close them.
//   - 20 connections send complete headers and then the body one byte a
//     second (slow body, "R-U-Dead-Yet"): they must be dropped within
//     hostileHoldLimit.
//   - 2 connections with a 2 KiB receive buffer POST echo with a 5.3 MB
//     text and never read the JSON answer: they must be dropped within
//     hostileHoldLimit.
//   - 8 legacy GET streams and 16 subscriptions/listen streams on 2 KiB
//     receive buffers never read while touch_resource floods them with
//     events: each must be dropped (WriteTimeout, bounded buffers) and
//     counted in mcpfleet_frontend_dropped_streams_total.
func TestHostileSlowloris(t *testing.T) {
	tab := &hostileTable{}
	defer tab.log(t, "slow clients")
	srv := startHostileServer(t)
	good := startHostileGood(t, srv.url)
	pid := srv.proc.Pid()
	rss0 := hostileRSS(t, pid)
	peak := rss0
	// Events of about 1.5 KB: under the 2 KiB buffer of a net/http
	// response, so a stalled write blocks in the flush.
	uri := "test://hostile/" + strings.Repeat("u", 1400)

	// Slow headers.
	const nHeaders = 200
	var headers []*hostileSlow
	for i := 0; i < nHeaders; i++ {
		headers = append(headers, startHostileSlow(t, srv.host, "", "POST /mcp HTTP/1.1\r\nHost: "+srv.host+"\r\nX-Slowloris: a", 500*time.Millisecond))
	}
	headersStart := time.Now()

	// Slow bodies.
	const nBodies = 20
	var bodies []*hostileSlow
	for i := 0; i < nBodies; i++ {
		head := string(hostileReq("POST", "/mcp", srv.postHdr("", "Content-Length: 100000"), nil))
		bodies = append(bodies, startHostileSlow(t, srv.host, head, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"a`, time.Second))
	}
	bodiesStart := time.Now()

	// Unread JSON answers.
	// Each answer is about 5.3 MB (the worker's encoder writes each '<' as
	// \u003c): more than the kernel's socket buffers take (tcp_wmem's
	// 4 MiB), so the server itself has to hold the rest.
	const nJSON, bigText = 2, 880 << 10
	owner := testenv.NewClient(t, srv.url)
	owner.Initialize(nil)
	var unread []net.Conn
	for i := 0; i < nJSON; i++ {
		conn, err := hostileDial(srv.host, 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		req := hostileReq("POST", "/mcp", srv.postHdr(owner.SessionID), []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":"big-%d","method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`, i, strings.Repeat("<", bigText))))
		go func() { _, _ = conn.Write(req) }()
		unread = append(unread, conn)
	}
	unreadStart := time.Now()
	// What the slow and unread connections hold, once the answers are
	// written as far as the sockets take them.
	testutil.WaitFor(testenv.HangGuard(10*time.Second), func() bool {
		return hostileSeries(srv.scrape(t), "mcpfleet_frontend_inflight_requests") >= nBodies+nJSON
	})
	// A bounded wait, part of the measure: the answers are written as far
	// as the sockets take them (no event tells when) before the RSS is read.
	time.Sleep(time.Second)
	rssHeld := hostileRSS(t, pid)
	peak = max(peak, rssHeld)
	tab.add("memory", fmt.Sprintf("VmRSS with the %d slow headers, %d slow bodies and %d unread 5.3 MB answers in place", nHeaders, nBodies, nJSON),
		fmt.Sprintf("%s -> %s (+%s; the unread answers' processing, transient allocations included, dominates)", hostileMiB(rss0), hostileMiB(rssHeld), hostileMiB(rssHeld-rss0)))

	// Stalled legacy GET streams, their sessions subscribed to uri.
	const nGet, nListen = 8, 16
	var stalled []net.Conn
	for i := 0; i < nGet; i++ {
		c := testenv.NewClient(t, srv.url)
		c.Initialize(nil)
		c.Call(1, "resources/subscribe", map[string]any{"uri": uri})
		conn, err := hostileDial(srv.host, 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(hostileReq("GET", "/mcp", srv.getHdr(c.SessionID), nil)); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, conn)
	}
	// Stalled listen streams on uri.
	for i := 0; i < nListen; i++ {
		conn, err := hostileDial(srv.host, 2048)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		msg, hdr := testenv.ModernRequest(i, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}}, nil)
		if _, err := conn.Write(hostileReq("POST", "/mcp", srv.modernHdr(hdr), hostileJSON(msg))); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, conn)
	}
	// A well-behaved listen stream on the same uri, read promptly.
	lc := testenv.NewModernClient(t, srv.url)
	lc.Schemas = nil // a fast reader: no schema validation per event
	msg, hdr := testenv.ModernRequest("good-listen", "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}}, nil)
	ls := lc.PostStream(msg, hdr)
	if ls.Status != 200 {
		t.Fatalf("the good listen stream: HTTP %d %s", ls.Status, ls.Body)
	}
	if _, ack := ls.NextMessage(t, 10*time.Second); ack.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(ack.Params), uri) {
		t.Fatalf("the good listen stream's acknowledgement: %s %.200s", ack.Method, ack.Params)
	}
	var (
		glMu    sync.Mutex
		glTimes []time.Time
	)
	glEnded := make(chan struct{})
	go func() {
		defer close(glEnded)
		for ev := range ls.Events {
			if !ev.Comment && ev.Data != "" {
				glMu.Lock()
				glTimes = append(glTimes, time.Now())
				glMu.Unlock()
			}
		}
	}()
	// Every stream is open before the flood.
	var openG, openL float64
	if !testutil.WaitFor(testenv.HangGuard(10*time.Second), func() bool {
		m := srv.scrape(t)
		openG, openL = hostileSeries(m, `mcpfleet_frontend_open_streams{kind="get"}`), hostileSeries(m, `mcpfleet_frontend_open_streams{kind="listen"}`)
		return openG >= nGet && openL >= nListen+1
	}) {
		t.Fatalf("open streams: get %v listen %v, want %d and %d", openG, openL, nGet, nListen+1)
	}

	// The flood: another client calls touch_resource on uri, 3 at a time,
	// about 200 a second (each is one 1.5 KB event per stream).
	flooder := testenv.NewClient(t, srv.url)
	flooder.Initialize(nil)
	floodStop := make(chan struct{})
	var touches, touchErrs atomic.Int64
	var floodWG sync.WaitGroup
	fhc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for w := 0; w < 3; w++ {
		floodWG.Add(1)
		go func() {
			defer floodWG.Done()
			for i := 0; ; i++ {
				select {
				case <-floodStop:
					return
				default:
				}
				body := hostileJSON(testenv.Request(fmt.Sprintf("t%d-%d", w, i), "tools/call", map[string]any{"name": "touch_resource", "arguments": map[string]any{"uri": uri}}))
				req, _ := http.NewRequest(http.MethodPost, srv.url, bytes.NewReader(body))
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Mcp-Session-Id", flooder.SessionID)
				req.Header.Set("Mcp-Protocol-Version", flooder.ProtocolVersion)
				resp, err := fhc.Do(req)
				if err != nil {
					touchErrs.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(b, []byte("touched")) {
					touchErrs.Add(1)
				} else {
					touches.Add(1)
				}
				time.Sleep(10 * time.Millisecond) // the behaviour under test: a flood of about 200 touches a second
			}
		}()
	}
	floodStart := time.Now()
	// Until every stalled stream is closed (open_streams: no GET stream,
	// only the good listen stream) and counted as dropped, within 45 s.
	var droppedGet, droppedListen, openGet, openListen float64
	var getClosedAfter, listenClosedAfter time.Duration
	for deadline := floodStart.Add(45 * time.Second); ; {
		time.Sleep(250 * time.Millisecond) // the sampling interval of the peak RSS, part of the measure
		if r := hostileRSS(t, pid); r > peak {
			peak = r
		}
		m := srv.scrape(t)
		droppedGet = hostileSeries(m, `mcpfleet_frontend_dropped_streams_total{kind="get"}`)
		droppedListen = hostileSeries(m, `mcpfleet_frontend_dropped_streams_total{kind="listen"}`)
		openGet = hostileSeries(m, `mcpfleet_frontend_open_streams{kind="get"}`)
		openListen = hostileSeries(m, `mcpfleet_frontend_open_streams{kind="listen"}`)
		if openGet == 0 && getClosedAfter == 0 {
			getClosedAfter = time.Since(floodStart)
		}
		if openListen <= 1 && listenClosedAfter == 0 {
			listenClosedAfter = time.Since(floodStart)
		}
		if getClosedAfter > 0 && listenClosedAfter > 0 {
			// The counters move with the closes: wait for them.
			testutil.WaitFor(testenv.HangGuard(5*time.Second), func() bool {
				m := srv.scrape(t)
				droppedGet = hostileSeries(m, `mcpfleet_frontend_dropped_streams_total{kind="get"}`)
				droppedListen = hostileSeries(m, `mcpfleet_frontend_dropped_streams_total{kind="listen"}`)
				return droppedGet >= nGet && droppedListen >= nListen
			})
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	close(floodStop)
	floodWG.Wait()
	floodEnd := time.Now()

	// The good listen stream kept receiving throughout the flood.
	glMu.Lock()
	times := append([]time.Time(nil), glTimes...)
	glMu.Unlock()
	var maxGap time.Duration
	prev := floodStart
	for _, at := range times {
		if at.After(floodEnd) {
			break
		}
		if gap := at.Sub(prev); gap > maxGap {
			maxGap = gap
		}
		prev = at
	}
	if gap := floodEnd.Sub(prev); gap > maxGap {
		maxGap = gap
	}
	glDropped := false
	select {
	case <-glEnded:
		glDropped = true
	default:
	}
	tab.add("flood", fmt.Sprintf("touch_resource on a %d-byte URI, 3 callers, %s", len(uri), floodEnd.Sub(floodStart).Round(100*time.Millisecond)),
		fmt.Sprintf("%d touches ok, %d failed", touches.Load(), touchErrs.Load()))
	tab.add("good listen stream", "subscriptions/listen on the flooded URI, read promptly",
		fmt.Sprintf("%d events, longest silence during the flood %s, dropped=%v", len(times), maxGap.Round(10*time.Millisecond), glDropped))
	if glDropped {
		t.Errorf("the well-behaved listen stream was closed during the flood")
	}
	if touches.Load() == 0 || touchErrs.Load() > 0 {
		t.Errorf("the flood: %d touches ok, %d failed", touches.Load(), touchErrs.Load())
	}
	if maxGap > hostileGoodMaxLatency {
		t.Errorf("the well-behaved listen stream received nothing for %s while its URI was flooded (bound %s): the stalled listen streams held up its writes", maxGap.Round(10*time.Millisecond), hostileGoodMaxLatency)
	}

	// The stalled streams were dropped and their connections closed.
	closedIn := func(d time.Duration) string {
		if d == 0 {
			return "not all closed within 45 s"
		}
		return fmt.Sprintf("all closed %s after the flood began", d.Round(250*time.Millisecond))
	}
	got := fmt.Sprintf("GET: %s; listen: %s; dropped_streams_total get=%v listen=%v", closedIn(getClosedAfter), closedIn(listenClosedAfter), droppedGet, droppedListen)
	var closeErrs []string
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, conn := range stalled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := hostileDrained(conn, 10*time.Second); err != nil {
				mu.Lock()
				closeErrs = append(closeErrs, fmt.Sprintf("stalled stream %d still open after %s of reading (%d bytes): %v", i, 10*time.Second, n, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got += fmt.Sprintf(", %d of %d connections closed by the server", len(stalled)-len(closeErrs), len(stalled))
	tab.add("stalled streams", fmt.Sprintf("%d legacy GET + %d subscriptions/listen on 2 KiB receive buffers, never read", nGet, nListen), got)
	if getClosedAfter == 0 || listenClosedAfter == 0 {
		t.Errorf("stalled streams: open_streams get=%v listen=%v (the good one included) 45 s into the flood: %s", openGet, openListen, got)
	}
	if droppedGet < nGet || droppedListen < nListen {
		t.Errorf("stalled streams: %s, want get>=%d listen>=%d counted as dropped (mcpfleet_frontend_dropped_streams_total)", got, nGet, nListen)
	}
	for _, e := range closeErrs {
		t.Error(e)
	}

	// Slow headers: closed by ReadHeaderTimeout.
	closed, slowest, fastest := 0, time.Duration(0), time.Hour
	for _, s := range headers {
		if s.closedBy(headersStart.Add(hostileReadHeaderTimeout + 6*time.Second)) {
			closed++
			slowest, fastest = max(slowest, s.after), min(fastest, s.after)
		}
	}
	tab.add("slow headers", fmt.Sprintf("%d connections sending request headers 1 byte / 500 ms", nHeaders),
		fmt.Sprintf("%d closed by the server without a response, after %s to %s", closed, fastest.Round(100*time.Millisecond), slowest.Round(100*time.Millisecond)))
	if closed != nHeaders {
		t.Errorf("slow headers: %d of %d connections still open %s after they started (ReadHeaderTimeout is %s)", nHeaders-closed, nHeaders, hostileReadHeaderTimeout+6*time.Second, hostileReadHeaderTimeout)
	}

	// Slow bodies: the body of a request has no deadline.
	closed = 0
	for _, s := range bodies {
		if s.closedBy(bodiesStart.Add(hostileHoldLimit)) {
			closed++
		}
	}
	tab.add("slow bodies", fmt.Sprintf("%d POSTs with complete headers (Content-Length 100000), body 1 byte / s", nBodies),
		fmt.Sprintf("%d of %d dropped by the server within %s", closed, nBodies, hostileHoldLimit))
	if closed != nBodies {
		t.Errorf("slow bodies: %d of %d connections trickling their body are still held after %s (--body-timeout is 10 s)", nBodies-closed, nBodies, hostileHoldLimit)
	}

	// Unread JSON answers: held for hostileHoldLimit, then read.
	time.Sleep(time.Until(unreadStart.Add(hostileHoldLimit))) // the behaviour under test: answers left unread for hostileHoldLimit
	held := 0
	for i, conn := range unread {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		r := hostileRead(conn, bufio.NewReaderSize(conn, 64<<10))
		if r.status == 200 && r.err == nil && hostileExpectEcho(bigText)(r) == nil {
			held++
			continue
		}
		t.Logf("unread answer %d: %s", i, r)
	}
	tab.add("unread JSON answers", fmt.Sprintf("%d POSTs of echo of 0.9 MB of '<' (a 5.3 MB answer) on 2 KiB receive buffers, not read for %s", nJSON, hostileHoldLimit),
		fmt.Sprintf("%d of %d still held by the server and delivered in full once read", held, nJSON))
	if held > 0 {
		t.Errorf("unread JSON answers: %d of %d 5.3 MB answers were still held by the server after %s without the client reading a byte (a JSON answer has 10 s to be taken)", held, nJSON, hostileHoldLimit)
	}

	if r := hostileRSS(t, pid); r > peak {
		peak = r
	}
	tab.add("memory", "VmRSS before the attack -> peak (flood included)", fmt.Sprintf("%s -> %s (+%s; bound +%s)", hostileMiB(rss0), hostileMiB(peak), hostileMiB(peak-rss0), hostileMiB(hostileRSSLimit)))
	if peak-rss0 > hostileRSSLimit {
		t.Errorf("RSS grew by %s (bound %s): +%s with the slow and unread connections in place, the rest during the flood of the stalled streams", hostileMiB(peak-rss0), hostileMiB(hostileRSSLimit), hostileMiB(rssHeld-rss0))
	}
	good.finish(t, tab)
	srv.assertHealthy(t)
}

// ---------------------------------------------------------------------------
// Floods.

// hostileOpenListen opens a subscriptions/listen stream on a raw
// connection and reads the response head (a refusal: its body too).
func hostileOpenListen(host string, id int) (net.Conn, hostileResp) {
	conn, err := hostileDial(host, 0)
	if err != nil {
		return nil, hostileResp{err: err}
	}
	msg, hdr := testenv.ModernRequest(id, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	h := []string{"Host: " + host, "Accept: application/json, text/event-stream", "Content-Type: application/json",
		"Mcp-Protocol-Version: " + hdr["Mcp-Protocol-Version"], "Mcp-Method: " + hdr["Mcp-Method"]}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(hostileReq("POST", "/mcp", h, hostileJSON(msg))); err != nil {
		conn.Close()
		return nil, hostileResp{err: err}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, hostileResp{err: err}
	}
	r := hostileResp{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != 200 {
		r.body, r.err = io.ReadAll(resp.Body)
		r.decode()
		conn.Close()
		return nil, r
	}
	r.sse = strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	_ = conn.SetDeadline(time.Time{})
	return conn, r
}

// TestHostileFloods: 5,000 initialize calls, then listen streams up to a
// cap of 2,000 and 100 beyond it (503), while memory stays bounded and the
// good client is unaffected; then 200 sessions that each declare 1 MiB of
// capabilities, under the same memory bound.
func TestHostileFloods(t *testing.T) {
	tab := &hostileTable{}
	defer tab.log(t, "floods")
	const listenCap = 2000
	srv := startHostileServer(t, "--max-listen-subscriptions", strconv.Itoa(listenCap))
	good := startHostileGood(t, srv.url)
	pid := srv.proc.Pid()
	// A bounded wait, part of the measure: the baseline RSS once the good
	// client's start-up settled (no event tells when).
	time.Sleep(200 * time.Millisecond)
	rss0 := hostileRSS(t, pid)
	peak := rss0
	sample := func() int64 {
		r := hostileRSS(t, pid)
		peak = max(peak, r)
		return r
	}

	// 5,000 sessions, 32 at a time.
	const nInit, par = 5000, 32
	ids := make([]string, nInit)
	statuses := make([]int, nInit)
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: par, MaxConnsPerHost: par}}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= nInit {
					return
				}
				params := testenv.InitParams("2025-11-25", nil)
				params["clientInfo"] = map[string]any{"name": fmt.Sprintf("flood-%d", i), "version": "1"}
				req, _ := http.NewRequest(http.MethodPost, srv.url, bytes.NewReader(hostileJSON(testenv.Request(0, "initialize", params))))
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i], ids[i] = resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
			}
		}()
	}
	wg.Wait()
	initDur := time.Since(start)
	rssInit := sample()
	ok, distinct := 0, map[string]bool{}
	byStatus := map[int]int{}
	for i := range statuses {
		byStatus[statuses[i]]++
		if statuses[i] == 200 && ids[i] != "" {
			ok++
			distinct[ids[i]] = true
		}
	}
	sessions := hostileSeries(srv.scrape(t), "mcpfleet_sessions")
	tab.add("session flood", fmt.Sprintf("%d initialize calls, %d in parallel", nInit, par),
		fmt.Sprintf("statuses %v, %d distinct session ids, in %s; mcpfleet_sessions=%v; RSS %s -> %s", byStatus, len(distinct), initDur.Round(100*time.Millisecond), sessions, hostileMiB(rss0), hostileMiB(rssInit)))
	if ok != nInit || len(distinct) != nInit {
		t.Errorf("session flood: %d of %d initialize calls succeeded (%v), %d distinct ids", ok, nInit, byStatus, len(distinct))
	}
	if sessions < nInit {
		t.Errorf("session flood: mcpfleet_sessions = %v, want at least %d", sessions, nInit)
	}

	// Listen streams up to the cap.
	conns := make([]net.Conn, listenCap)
	results := make([]hostileResp, listenCap)
	next.Store(0)
	start = time.Now()
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= listenCap {
					return
				}
				conns[i], results[i] = hostileOpenListen(srv.host, i)
			}
		}()
	}
	wg.Wait()
	listenDur := time.Since(start)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	rssListen := sample()
	byStatus = map[int]int{}
	for _, r := range results {
		byStatus[r.status]++
	}
	open := hostileSeries(srv.scrape(t), `mcpfleet_frontend_open_streams{kind="listen"}`)
	tab.add("listen flood", fmt.Sprintf("%d subscriptions/listen streams (cap %d)", listenCap, listenCap),
		fmt.Sprintf("statuses %v in %s; open_streams{listen}=%v; RSS %s", byStatus, listenDur.Round(100*time.Millisecond), open, hostileMiB(rssListen)))
	if byStatus[200] != listenCap {
		for _, r := range results {
			if r.status != 200 {
				t.Errorf("a listen stream under the cap: %s", r)
				break
			}
		}
		t.Fatalf("listen flood: %v, want %d × 200", byStatus, listenCap)
	}
	// Beyond the cap: 503.
	beyond := map[string]int{}
	for i := 0; i < 100; i++ {
		c, r := hostileOpenListen(srv.host, listenCap+i)
		if c != nil {
			c.Close()
		}
		beyond[r.String()]++
		if r.status != 503 || r.code != -32603 {
			t.Errorf("listen stream %d beyond the cap: %s, want HTTP 503 with JSON-RPC code -32603", i+1, r)
		}
	}
	tab.add("listen beyond the cap", "100 more subscriptions/listen streams", fmt.Sprintf("%v", beyond))
	// The good client's session still works for new requests; closing the
	// streams frees every slot.
	for _, c := range conns {
		c.Close()
	}
	freed := time.Now()
	var stillOpen float64
	if !testutil.WaitFor(testenv.HangGuard(15*time.Second), func() bool {
		stillOpen = hostileSeries(srv.scrape(t), `mcpfleet_frontend_open_streams{kind="listen"}`)
		return stillOpen == 0
	}) {
		t.Fatalf("%v listen streams still open %s after their clients closed them", stillOpen, testenv.HangGuard(15*time.Second))
	}
	c, r := hostileOpenListen(srv.host, 1)
	if c != nil {
		c.Close()
	}
	tab.add("listen after closing all", "the streams closed, then one more listen", fmt.Sprintf("slots freed within %s; new stream: %s", time.Since(freed).Round(100*time.Millisecond), r))
	if r.status != 200 {
		t.Errorf("a listen stream after the flood closed: %s", r)
	}
	sample()
	tab.add("memory", "VmRSS before the floods -> peak", fmt.Sprintf("%s -> %s (+%s; bound +%s)", hostileMiB(rss0), hostileMiB(peak), hostileMiB(peak-rss0), hostileMiB(hostileRSSLimit)))
	if peak-rss0 > hostileRSSLimit {
		t.Errorf("RSS grew by %s during the floods (bound %s)", hostileMiB(peak-rss0), hostileMiB(hostileRSSLimit))
	}

	// Sessions that try to make the server keep a lot: initialize params
	// over the 64 KiB a session keeps are refused; just under it, each
	// session keeps its declaration for the session TTL.
	t.Run("fat sessions", func(t *testing.T) {
		const nFat, fat, lean = 200, 1 << 20, 60 << 10
		before := hostileRSS(t, pid)
		refused := map[string]int{}
		blob := strings.Repeat("f", fat)
		for i := 0; i < nFat; i++ {
			body := hostileJSON(testenv.Request(0, "initialize", testenv.InitParams("2025-11-25", map[string]any{"experimental": map[string]any{"blob": map[string]any{"data": blob}}})))
			r := hostileRaw(srv.host, hostileReq("POST", "/mcp", srv.postHdr(""), body), 20*time.Second)
			refused[r.String()]++
			if r.status != 400 || r.code != -32602 {
				t.Errorf("initialize with 1 MiB capabilities: %s, want HTTP 400 with -32602", r)
				break
			}
		}
		after := hostileRSS(t, pid)
		tab.add("fat sessions", fmt.Sprintf("%d initialize calls, each declaring a 1 MiB capabilities.experimental value", nFat),
			fmt.Sprintf("%v; RSS %s -> %s", refused, hostileMiB(before), hostileMiB(after)))
		blob = strings.Repeat("f", lean)
		kept := 0
		for i := 0; i < nFat; i++ {
			body := hostileJSON(testenv.Request(0, "initialize", testenv.InitParams("2025-11-25", map[string]any{"experimental": map[string]any{"blob": map[string]any{"data": blob}}})))
			if r := hostileRaw(srv.host, hostileReq("POST", "/mcp", srv.postHdr(""), body), 20*time.Second); r.status == 200 {
				kept++
			}
		}
		leanAfter := hostileRSS(t, pid)
		tab.add("lean sessions", fmt.Sprintf("%d initialize calls, each declaring a 60 KiB capabilities.experimental value", nFat),
			fmt.Sprintf("%d × HTTP 200; RSS %s -> %s (+%s, ≈%d KiB per session for the session TTL)", kept, hostileMiB(after), hostileMiB(leanAfter), hostileMiB(leanAfter-after), (leanAfter-after)/nFat>>10))
		if kept != nFat {
			t.Errorf("%d of %d initialize calls with 60 KiB capabilities succeeded", kept, nFat)
		}
		if leanAfter-before > hostileRSSLimit {
			t.Errorf("%d sessions declaring 60 KiB capabilities (and %d refused 1 MiB ones) grew RSS by %s (bound %s)", nFat, nFat, hostileMiB(leanAfter-before), hostileMiB(hostileRSSLimit))
		}
	})

	good.finish(t, tab)
	srv.assertHealthy(t)
}

// ---------------------------------------------------------------------------
// Oversize and deeply nested bodies.

// TestHostileBodies: bodies over the size cap, nesting past the depth cap,
// and large but legal strings, arrays and objects in params.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	tab := &hostileTable{}
	defer tab.log(t, "bodies")
	srv := startHostileServer(t)
	good := startHostileGood(t, srv.url)
	pid := srv.proc.Pid()
	rss0 := hostileRSS(t, pid)
	v := testenv.NewClient(t, srv.url)
	v.Initialize(nil)
	sess := v.SessionID
	post := func(body []byte, extra ...string) []byte {
		return hostileReq("POST", "/mcp", srv.postHdr(sess, extra...), body)
	}
	pad := func(msg []byte, size int) []byte { // msg followed by spaces: size bytes of valid JSON
		return append(msg, bytes.Repeat([]byte(" "), size-len(msg))...)
	}
	chunked := func(body []byte) []byte {
		var b bytes.Buffer
		for len(body) > 0 {
			n := min(len(body), 1<<20)
			fmt.Fprintf(&b, "%x\r\n", n)
			b.Write(body[:n])
			b.WriteString("\r\n")
			body = body[n:]
		}
		b.WriteString("0\r\n\r\n")
		return b.Bytes()
	}
	deepArgs := func(id, k int) []byte { // depth 3 + k
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"depth","deep":%s%s}}}`,
			id, strings.Repeat("[", k), strings.Repeat("]", k)))
	}
	items := make([]int, 100000)
	for i := range items {
		items[i] = i
	}
	manyKeys := map[string]any{"text": "keys"}
	for i := 0; i < 100000; i++ {
		manyKeys["k"+strconv.Itoa(i)] = i
	}
	big := strings.Repeat("x", 3<<20)                 // over --max-string-bytes (2 MiB)
	under := strings.Repeat("x", hostileMaxString-64) // just under it
	underItems := items[:hostileMaxArray]
	mModern, hModern := testenv.ModernRequest(30, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": big}}, nil)
	mPing := hostileJSON(testenv.Request(1, "ping", nil))
	cases := []hostileCase{
		{name: "oversize", input: "5 MiB body with Content-Length", req: post(pad(mPing, hostileMaxBody+1<<20)), want: hostileExpect(413, -32600)},
		{name: "oversize", input: "4 MiB + 1 byte body with Content-Length", req: post(pad(mPing, hostileMaxBody+1)), want: hostileExpect(413, -32600)},
		{name: "oversize", input: "5 MiB chunked body (no Content-Length)", req: post(chunked(pad(mPing, hostileMaxBody+1<<20)), "Transfer-Encoding: chunked"), want: hostileExpect(413, -32600)},
		{name: "oversize", input: "Content-Length: 5 MiB announced, 10 bytes sent", req: hostileReq("POST", "/mcp", srv.postHdr(sess, "Content-Length: 5242880"), []byte(`{"jsonrpc"`)), want: hostileExpect(413, -32600)},
		{name: "at the cap", input: "echo padded to exactly 4 MiB", req: post(pad(hostileEcho(2, "at the cap"), hostileMaxBody)), want: hostileExpectEcho(len("at the cap"))},
		{name: "nesting", input: "100k '['", req: post([]byte(strings.Repeat("[", 100000))), want: hostileExpect(400, -32700)},
		{name: "nesting", input: "100k '[' then 100k ']'", req: post([]byte(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))), want: hostileExpect(400, -32700)},
		{name: "nesting", input: `100k '{"a":'`, req: post([]byte(strings.Repeat(`{"a":`, 100000))), want: hostileExpect(400, -32700)},
		{name: "nesting", input: `100k '{"a":' closed`, req: post([]byte(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000))), want: hostileExpect(400, -32700)},
		{name: "nesting", input: "tools/call echo, arguments nested 100k deep", req: post(deepArgs(3, 100000)), want: hostileExpect(400, -32700)},
		{name: "nesting", input: "tools/call echo, total depth 64 (the cap)", req: post(deepArgs(4, 61)), want: hostileExpectEcho(len("depth"))},
		{name: "nesting", input: "tools/call echo, total depth 65", req: post(deepArgs(5, 62)), want: hostileExpect(400, -32700)},
		{name: "huge string", input: "legacy echo of a 3 MiB text", req: post(hostileEcho(6, big)), want: hostileExpect(400, -32600)},
		{name: "huge string", input: "2026-07-28 echo of a 3 MiB text", req: hostileReq("POST", "/mcp", srv.modernHdr(hModern), hostileJSON(mModern)), want: hostileExpect(400, -32600)},
		{name: "large string", input: "legacy echo of a text 64 bytes under the 2 MiB string cap", req: post(hostileEcho(16, under)), want: hostileExpectEcho(len(under))},
		{name: "huge array", input: "echo with an extra 100k-element array argument", req: post(hostileJSON(testenv.Request(8, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "items", "items": items}}))), want: hostileExpect(400, -32600)},
		{name: "large array", input: "echo with an extra array of 10,000 elements (the cap)", req: post(hostileJSON(testenv.Request(17, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "items", "items": underItems}}))), want: hostileExpectEcho(len("items"))},
		{name: "huge array", input: "tools/call whose arguments is a 100k-element array", req: post(hostileJSON(testenv.Request(9, "tools/call", map[string]any{"name": "echo", "arguments": items}))), want: hostileExpect(400, -32600)},
		{name: "huge object", input: "echo with 100k extra argument keys", req: post(hostileJSON(testenv.Request(10, "tools/call", map[string]any{"name": "echo", "arguments": manyKeys}))), want: hostileExpect(400, -32600)},
		{name: "huge array", input: "params with a 100k-element array beside name", req: post(hostileJSON(testenv.Request(11, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "beside"}, "extra": items}))), want: hostileExpect(400, -32600)},
		{name: "huge method", input: "a 3 MiB method name", req: post(hostileJSON(testenv.Request(12, big, nil))), want: hostileExpect(400, -32600)},
		{name: "huge tool name", input: "tools/call of a 3 MiB tool name", req: post(hostileJSON(testenv.Request(13, "tools/call", map[string]any{"name": big}))), want: hostileExpect(400, -32600)},
		{name: "huge id", input: "echo with a 3 MiB string id", req: post(hostileJSON(testenv.Request(big, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "id"}}))), want: func(r hostileResp) error {
			if err := hostileExpect(400, -32600)(r); err != nil {
				return err
			}
			if len(r.body) > 4<<10 {
				return fmt.Errorf("the error echoes the %d-byte id (%d-byte body)", len(big), len(r.body))
			}
			return nil
		}},
		{name: "huge clientInfo", input: "initialize with a 3 MiB clientInfo.name", req: hostileReq("POST", "/mcp", srv.postHdr(""), hostileJSON(testenv.Request(0, "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": big, "version": "1"}}))), want: hostileExpect(400, -32600)},
		{name: "fat clientInfo", input: "initialize with a 100 KiB clientInfo.name (over the 64 KiB kept per session)", req: hostileReq("POST", "/mcp", srv.postHdr(""), hostileJSON(testenv.Request(0, "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": strings.Repeat("n", 100<<10), "version": "1"}}))), want: hostileExpect(400, -32602)},
	}
	runHostileCases(t, srv.host, tab, cases)
	rss := hostileRSS(t, pid)
	tab.add("memory", "VmRSS before -> after the bodies above", fmt.Sprintf("%s -> %s (bound +%s)", hostileMiB(rss0), hostileMiB(rss), hostileMiB(hostileRSSLimit)))
	if rss-rss0 > hostileRSSLimit {
		t.Errorf("RSS grew by %s (bound %s)", hostileMiB(rss-rss0), hostileMiB(hostileRSSLimit))
	}
	// An answer the bus cannot carry (the worker's JSON encoder escapes
	// each '<' as 6 bytes); its own memory cost is recorded apart.
	runHostileCases(t, srv.host, tab, []hostileCase{
		{name: "huge string", input: "echo of 1.9 MiB of raw '<' (11.4 MiB once HTML-escaped, over NATS's 8 MiB payload)", req: post([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("<", 1945<<10) + `"}}}`)), want: func(r hostileResp) error {
			// The worker knows at once that it cannot send the answer; the
			// client should get a JSON-RPC answer, not a "retry" 503 once
			// the frontend gave up on a worker that seemed dead.
			if r.status != 200 || r.code != -32603 || !bytes.Contains(r.body, []byte("over the")) || r.elapsed >= 4*time.Second {
				return errors.New("want HTTP 200 with JSON-RPC error -32603 (the result is over the bus's payload cap) before the 4 s WorkerTimeout")
			}
			return nil
		}},
	})
	after := hostileRSS(t, pid)
	tab.add("memory", "VmRSS across that one request", fmt.Sprintf("%s -> %s", hostileMiB(rss), hostileMiB(after)))
	// The session used for the abuse still works.
	if res := v.Call(100, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "still here"}}); !strings.Contains(string(res), "still here") {
		t.Errorf("the abused session: %s", res)
	}
	good.finish(t, tab)
	srv.assertHealthy(t)
}

// ---------------------------------------------------------------------------
// Forged answers to server-to-client requests.

var hostileDroppedAnswerRE = regexp.MustCompile(`worker: dropping an answer from another session`)

// TestHostileForgedAnswers: session A's test_sampling waits for A's answer
// to its sampling/createMessage; session B (and clients without a
// session) post answers with A's request id, ids the server never issued,
// and ids of A's task input. None may reach A's request: ids that cannot
// be the server's are refused (400), answers with the server's id form
// are accepted for routing (202, the contract that lets any frontend take
// an answer) and dropped by the worker for the wrong session, answers to
// another session's task are refused (404). A's request then completes
// with A's own answer.
func TestHostileForgedAnswers(t *testing.T) {
	t.Parallel()
	tab := &hostileTable{}
	defer tab.log(t, "forged answers")
	srv := startHostileServer(t, "--log-level", "debug")
	good := startHostileGood(t, srv.url)
	a := testenv.NewClient(t, srv.url)
	a.Initialize(map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}})
	b := testenv.NewClient(t, srv.url)
	b.Initialize(map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}})
	b.Schemas = nil // its refusals are checked by hand

	s := a.PostStream(testenv.Request("a1", "tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "from A"}}), nil)
	_, req := s.NextMessage(t, 10*time.Second)
	var id string
	if req.Method != "sampling/createMessage" || json.Unmarshal(req.ID, &id) != nil || !strings.HasPrefix(id, "mcpf-") {
		t.Fatalf("A's first message: %s %s, want a sampling/createMessage with a string id", req.Method, req.ID)
	}
	i := strings.LastIndexByte(id, '-')
	seq, _ := strconv.Atoi(id[i+1:])
	workerPart := id[:i]
	result := func(text string) map[string]any {
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": text}, "model": "m", "stopReason": "endTurn"}
	}
	answer := func(id any, text string) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "result": result(text)}
	}
	post := func(c *testenv.Client, msg any, hdr map[string]string) hostileResp {
		r := c.Post(msg, hdr)
		hr := hostileResp{status: r.Status, body: r.Body}
		hr.decode()
		return hr
	}
	type forged struct {
		input string
		msg   any
		hdr   map[string]string
		from  *testenv.Client
		want  func(hostileResp) error
	}
	noSession := testenv.NewClient(t, srv.url)
	noSession.Schemas = nil
	cases := []forged{
		{"B answers A's pending sampling id", answer(id, "FORGED by B"), nil, b, hostileExpect(202, 0)},
		{"B answers A's pending id with an error", map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -1, "message": "FORGED"}}, nil, b, hostileExpect(202, 0)},
		{"B answers an integer id never issued", answer(12345, "x"), nil, b, hostileExpect(400, -32600)},
		{"B answers a string id never issued", answer("never-issued", "x"), nil, b, hostileExpect(400, -32600)},
		{"B answers an id of the server's form, unknown worker", answer("mcpf-nosuchworker-1", "x"), nil, b, hostileExpect(202, 0)},
		{"B answers the next sequence number of A's worker", answer(fmt.Sprintf("%s-%d", workerPart, seq+1000), "x"), nil, b, hostileExpect(202, 0)},
		{"B sends an error response without id", map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -1, "message": "x"}}, nil, b, hostileExpect(400, -32600)},
		{"B answers an unknown task's input id", answer("task:nosuchtask:confirm", "x"), nil, b, hostileExpect(404, -32602)},
		{"no session: answer with A's id", answer(id, "FORGED"), nil, noSession, hostileExpect(400, -32600)},
		{"unknown session id: answer with A's id", answer(id, "FORGED"), map[string]string{"Mcp-Session-Id": "0123456789abcdef0123456789abcdef"}, noSession, hostileExpect(404, -32001)},
		{"2026-07-28 (stateless): answer with A's id", answer(id, "FORGED"), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, noSession, hostileExpect(400, -32600)},
		{"A answers an id never issued", answer("never-issued", "x"), nil, a, hostileExpect(400, -32600)},
	}
	for _, c := range cases {
		r := post(c.from, c.msg, c.hdr)
		tab.add("forged answer", c.input, r.String())
		if err := c.want(r); err != nil {
			t.Errorf("%s: got %s: %v", c.input, r, err)
		}
	}
	// A's request is still waiting for A's answer.
	if msgs, _, ended := s.Rest(1500 * time.Millisecond); ended || hostileResponseOf(msgs) != nil {
		t.Fatalf("A's request ended after the forged answers (ended=%v): %+v", ended, msgs)
	}
	dropped := len(hostileDroppedAnswerRE.FindAllString(srv.proc.Log(), -1))
	tab.add("forged answer", "worker log after B's two answers with A's id", fmt.Sprintf("%d × \"dropping an answer from another session\"; A's request still waiting", dropped))
	if dropped < 2 {
		t.Errorf("the worker logged %d drops of answers from another session, want 2", dropped)
	}
	// A's own answer completes the tool with A's text.
	if r := a.Post(answer(id, "genuine from A"), nil); r.Status != 202 {
		t.Fatalf("A's answer: %s", r)
	}
	msgs, _, ended := s.Rest(10 * time.Second)
	resp := hostileResponseOf(msgs)
	switch {
	case !ended || resp == nil:
		t.Fatalf("A's request did not complete after A's answer: %+v", msgs)
	case strings.Contains(string(resp.Result), "FORGED") || !strings.Contains(string(resp.Result), "LLM response: genuine from A"):
		t.Fatalf("A's result: %s %+v", resp.Result, resp.Error)
	}
	tab.add("genuine answer", "A answers its own sampling request", "HTTP 202; the tool completed with \"LLM response: genuine from A\"")
	// A late forged answer after completion changes nothing.
	r := post(b, answer(id, "late FORGED"), nil)
	tab.add("forged answer", "B answers A's id after A's request completed", r.String())
	if r.status != 202 {
		t.Errorf("late forged answer: %s, want 202", r)
	}

	// Task input: A's task asks for confirmation on A's tasks/result
	// stream; B's answers to that input id are refused.
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	_ = json.Unmarshal(a.Call("a2", "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "h.txt"}, "task": map[string]any{"ttl": 60000}}), &created)
	if created.Task.TaskID == "" {
		t.Fatal("confirm_delete did not start a task")
	}
	ts := a.PostStream(testenv.Request("a3", "tasks/result", map[string]any{"taskId": created.Task.TaskID}), nil)
	_, ask := ts.NextMessage(t, 10*time.Second)
	var askID string
	if ask.Method != "elicitation/create" || json.Unmarshal(ask.ID, &askID) != nil || !strings.HasPrefix(askID, "task:") {
		t.Fatalf("the task's input request: %s %s", ask.Method, ask.ID)
	}
	for _, c := range []forged{
		{"B answers A's task input id (accept)", map[string]any{"jsonrpc": "2.0", "id": askID, "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}, nil, b, hostileExpect(404, -32602)},
		{"B answers A's task input id with an error", map[string]any{"jsonrpc": "2.0", "id": askID, "error": map[string]any{"code": -1, "message": "FORGED"}}, nil, b, hostileExpect(404, -32602)},
	} {
		r := post(c.from, c.msg, c.hdr)
		tab.add("forged answer", c.input, r.String())
		if err := c.want(r); err != nil {
			t.Errorf("%s: got %s: %v", c.input, r, err)
		}
	}
	var st struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(a.Call("a4", "tasks/get", map[string]any{"taskId": created.Task.TaskID}), &st)
	if st.Status != "input_required" {
		t.Fatalf("A's task after B's answers: status %q, want input_required", st.Status)
	}
	if r := a.Post(map[string]any{"jsonrpc": "2.0", "id": askID, "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}, nil); r.Status != 202 {
		t.Fatalf("A's answer to its task: %s", r)
	}
	msgs, _, ended = ts.Rest(10 * time.Second)
	if resp := hostileResponseOf(msgs); !ended || resp == nil || !strings.Contains(string(resp.Result), "h.txt") || resp.Error != nil {
		t.Fatalf("A's tasks/result after A's answer: %+v", msgs)
	}
	tab.add("genuine answer", "A answers its task's input", fmt.Sprintf("HTTP 202; task was still %s before, then completed", st.Status))
	good.finish(t, tab)
	srv.assertNoSessionIDs(t, tab, a.SessionID, b.SessionID, good.session)
	srv.assertHealthy(t)
}

func hostileResponseOf(msgs []testenv.Message) *testenv.Message {
	for i := range msgs {
		if msgs[i].Method == "" && (msgs[i].Result != nil || msgs[i].Error != nil) {
			return &msgs[i]
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Cancels aimed at another session's requests.

// TestHostileCrossSessionCancel: session B cancels the id of A's sleep in
// every form; A's sleep finishes normally. B's cancel of its own request
// with the same id proves the cancels were live.
func TestHostileCrossSessionCancel(t *testing.T) {
	t.Parallel()
	tab := &hostileTable{}
	defer tab.log(t, "cross-session cancels")
	srv := startHostileServer(t, "--log-level", "debug")
	good := startHostileGood(t, srv.url)
	a := testenv.NewClient(t, srv.url)
	a.Initialize(nil)
	b := testenv.NewClient(t, srv.url)
	b.Initialize(nil)
	b.Schemas = nil
	other := testenv.NewClient(t, srv.url)
	other.Schemas = nil

	sleep := func(c *testenv.Client, id any, ms int) *testenv.Stream {
		s := c.PostStream(testenv.Request(id, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": ms}, "_meta": map[string]any{"progressToken": fmt.Sprint(id)}}), nil)
		if _, m := s.NextMessage(t, 10*time.Second); m.Method != "notifications/progress" {
			t.Fatalf("sleep %v: first message %s, want progress", id, m.Method)
		}
		return s
	}
	start := time.Now()
	sa := sleep(a, 7, 3000)
	sa2 := sleep(a, "s7", 3000)
	// B runs its own sleep with the same id, to cancel it for real.
	sb := sleep(b, 7, 3000)
	cancels := []struct {
		input string
		from  *testenv.Client
		msg   any
		hdr   map[string]string
	}{
		{"B cancels requestId 7 (A's and B's id)", b, testenv.Notification("notifications/cancelled", map[string]any{"requestId": 7, "reason": "hostile"}), nil},
		{"B cancels requestId \"7\" (string form)", b, testenv.Notification("notifications/cancelled", map[string]any{"requestId": "7"}), nil},
		{"B cancels requestId \"s7\" (A's string id)", b, testenv.Notification("notifications/cancelled", map[string]any{"requestId": "s7"}), nil},
		{"B cancels requestId 7.0", b, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7.0}}`), nil},
		{"B cancels with requestId null", b, testenv.Notification("notifications/cancelled", map[string]any{"requestId": nil}), nil},
		{"no session: cancel requestId 7", other, testenv.Notification("notifications/cancelled", map[string]any{"requestId": 7}), nil},
		{"2026-07-28 (stateless): cancel requestId 7", other, testenv.Notification("notifications/cancelled", map[string]any{"requestId": 7}), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}},
		{"unknown session id: cancel requestId 7", other, testenv.Notification("notifications/cancelled", map[string]any{"requestId": 7}), map[string]string{"Mcp-Session-Id": "0123456789abcdef0123456789abcdef"}},
	}
	wants := []func(hostileResp) error{
		hostileExpect(202, 0), hostileExpect(202, 0), hostileExpect(202, 0), hostileExpect(202, 0), hostileExpect(202, 0),
		hostileExpect(400, -32600), hostileExpect(202, 0), hostileExpect(404, -32001),
	}
	for i, c := range cancels {
		r := c.from.Post(c.msg, c.hdr)
		hr := hostileResp{status: r.Status, body: r.Body}
		hr.decode()
		tab.add("cancel", c.input, hr.String())
		if err := wants[i](hr); err != nil {
			t.Errorf("%s: got %s: %v", c.input, hr, err)
		}
	}
	// B's own sleep 7 was cancelled: its stream ends without a response.
	msgs, _, ended := sb.Rest(5 * time.Second)
	if !ended || hostileResponseOf(msgs) != nil {
		t.Errorf("B's own sleep 7 was not cancelled by B's cancel (ended=%v, response=%v)", ended, hostileResponseOf(msgs) != nil)
	}
	tab.add("cancel", "B's own sleep 7 after B's cancel", fmt.Sprintf("stream ended=%v without a response=%v", ended, hostileResponseOf(msgs) == nil))
	// A's sleeps finish normally.
	for _, x := range []struct {
		name string
		s    *testenv.Stream
	}{{"7", sa}, {"s7", sa2}} {
		msgs, _, ended := x.s.Rest(10 * time.Second)
		resp := hostileResponseOf(msgs)
		got := fmt.Sprintf("ended=%v after %s", ended, time.Since(start).Round(100*time.Millisecond))
		if resp != nil && resp.Error == nil && strings.Contains(string(resp.Result), "slept") {
			got += ", result \"slept\""
		} else {
			t.Errorf("A's sleep %s: %+v (ended=%v), want the result \"slept\"", x.name, resp, ended)
		}
		tab.add("cancel", "A's sleep "+x.name+" (3000 ms) after all of the above", got)
	}
	if d := time.Since(start); d < 2900*time.Millisecond {
		t.Errorf("A's sleeps ended after %s, before their 3 s", d)
	}
	// The worker saw B's cancel of B's request, and none of A's.
	log := srv.proc.Log()
	bCancelled := regexp.MustCompile(`msg="sleep cancelled" request=7 session=` + regexp.QuoteMeta(b.SessionID[:8])).MatchString(log)
	aCancelled := regexp.MustCompile(`msg="sleep cancelled" request=\S+ session=` + regexp.QuoteMeta(a.SessionID[:8])).MatchString(log)
	tab.add("cancel", "worker log", fmt.Sprintf("B's sleep 7 cancelled=%v; any of A's sleeps cancelled=%v", bCancelled, aCancelled))
	if !bCancelled {
		t.Errorf("the worker did not log the cancellation of B's own sleep")
	}
	if aCancelled {
		t.Errorf("the worker logged a cancellation of A's sleep")
	}
	good.finish(t, tab)
	srv.assertNoSessionIDs(t, tab, a.SessionID, b.SessionID, good.session)
	srv.assertHealthy(t)
}

// ---------------------------------------------------------------------------
// Garbage.

// TestHostileGarbage: invalid UTF-8, NUL bytes, binary bodies, wrong
// content types, missing and duplicate headers, absurd Mcp-Session-Id and
// Last-Event-ID values, broken HTTP framing.
func TestHostileGarbage(t *testing.T) {
	t.Parallel()
	tab := &hostileTable{}
	defer tab.log(t, "garbage")
	srv := startHostileServer(t)
	good := startHostileGood(t, srv.url)
	v := testenv.NewClient(t, srv.url)
	v.Initialize(nil)
	sess := v.SessionID
	h := srv.host
	post := func(body []byte, extra ...string) []byte {
		return hostileReq("POST", "/mcp", srv.postHdr(sess, extra...), body)
	}
	postH := func(hdr []string, body []byte) []byte { return hostileReq("POST", "/mcp", hdr, body) }
	get := func(extra ...string) []byte { return hostileReq("GET", "/mcp", srv.getHdr(sess, extra...), nil) }
	base := srv.postHdr(sess)
	echo := func(id int, text string) []byte { return hostileEcho(id, text) }
	// A 2026-07-28 call of test_x_mcp_header with region in the body and
	// the Mcp-Param-Region header once or twice.
	paramTwice := func(first, second, body string) []byte {
		msg, hdr := testenv.ModernRequest(90, "tools/call", map[string]any{"name": "test_x_mcp_header", "arguments": map[string]any{"region": body}}, nil)
		lines := append(srv.modernHdr(hdr), "Mcp-Param-Region: "+first)
		if second != "" {
			lines = append(lines, "Mcp-Param-Region: "+second)
		}
		return postH(lines, hostileJSON(msg))
	}

	binary := make([]byte, 64<<10)
	x := uint32(2463534242)
	for i := range binary {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		binary[i] = byte(x)
	}
	binary[0] = 0x93 // not '{' nor '['
	// A GET stream of V, to have a real event id of V's.
	g := v.OpenGet(nil)
	vEvent := g.Next(t, 10*time.Second).ID
	g.Close()
	if vEvent == "" {
		t.Fatal("V's GET stream has no priming event id")
	}
	fakePost := "p" + fmt.Sprintf("%x", "nosuchfrontend") + "xabc:1"

	cases := []hostileCase{
		// Encodings.
		{name: "utf-8", input: `echo text with invalid UTF-8 bytes \xff\xfe`, req: post([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\xff\xfeb\"}}}"))},
		{name: "utf-8", input: "whole body is invalid UTF-8", req: post([]byte("\xff\xfe\xfd\xfc")), want: hostileExpect(400, -32700)},
		{name: "utf-8", input: `method name with invalid UTF-8`, req: post([]byte("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/\xffcall\"}")), want: hostileExpect(200, -32601)},
		{name: "utf-8", input: "UTF-8 BOM before the JSON", req: post(append([]byte("\xef\xbb\xbf"), echo(3, "bom")...)), want: hostileExpect(400, -32700)},
		{name: "nul", input: "raw NUL byte inside a JSON string", req: post([]byte("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\x00b\"}}}")), want: hostileExpect(400, -32700)},
		{name: "nul", input: "NUL byte after the message", req: post(append(echo(5, "x"), 0)), want: hostileExpect(400, -32700)},
		{name: "nul", input: `escaped \u0000 in the echo text`, req: post([]byte(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\u0000b"}}}`)), want: hostileExpectEcho(3)},
		{name: "nul", input: "1 KiB of NUL bytes", req: post(make([]byte, 1024)), want: hostileExpect(400, -32700)},
		{name: "binary", input: "64 KiB of random bytes", req: post(binary), want: hostileExpect(400, -32700)},
		{name: "binary", input: "two JSON messages back to back", req: post(append(echo(7, "one"), echo(8, "two")...)), want: hostileExpect(400, -32700)},
		{name: "json", input: `duplicate "id" keys (1 then 2)`, req: post([]byte(`{"jsonrpc":"2.0","id":9,"id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"dup"}}}`))},
		{name: "json", input: "id 1.5", req: post([]byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`)), want: hostileExpect(400, -32600)},
		{name: "json", input: "id 1e400", req: post([]byte(`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`)), want: hostileExpect(400, -32600)},
		{name: "json", input: "id 123456789012345678901234567890", req: post([]byte(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`))},
		{name: "json", input: `"jsonrpc":"1.0"`, req: post([]byte(`{"jsonrpc":"1.0","id":11,"method":"ping"}`)), want: hostileExpect(400, -32600)},
		{name: "json", input: "empty body", req: post([]byte{}), want: hostileExpect(400, -32700)},
		// Content types.
		{name: "content-type", input: "text/plain", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: text/plain"), echo(12, "x")), want: hostileExpect(415, -32600)},
		{name: "content-type", input: "missing", req: postH(hostileWithout(base, "Content-Type"), echo(13, "x")), want: hostileExpect(415, -32600)},
		{name: "content-type", input: "application/octet-stream with binary", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: application/octet-stream"), binary), want: hostileExpect(415, -32600)},
		{name: "content-type", input: "application/jsonx", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: application/jsonx"), echo(14, "x")), want: hostileExpect(415, -32600)},
		{name: "content-type", input: `"application/json, text/plain" (a list)`, req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: application/json, text/plain"), echo(15, "x")), want: hostileExpect(415, -32600)},
		{name: "content-type", input: "APPLICATION/JSON; charset=utf-8", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: APPLICATION/JSON; charset=utf-8"), echo(16, "ct")), want: hostileExpectEcho(2)},
		{name: "content-type", input: "application/json; charset=utf-16 (body is UTF-8)", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: application/json; charset=utf-16"), echo(17, "ct"))},
		{name: "content-type", input: "two Content-Type headers: text/plain, application/json", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: text/plain", "Content-Type: application/json"), echo(18, "x")), want: hostileExpect(415, -32600)},
		{name: "content-type", input: "two Content-Type headers: application/json, text/plain", req: postH(append(hostileWithout(base, "Content-Type"), "Content-Type: application/json", "Content-Type: text/plain"), echo(19, "ct")), want: hostileExpectEcho(2)},
		// Accept.
		{name: "accept", input: "missing", req: postH(hostileWithout(base, "Accept"), echo(20, "x")), want: hostileExpect(406, -32600)},
		{name: "accept", input: "*/*", req: postH(append(hostileWithout(base, "Accept"), "Accept: */*"), echo(21, "x")), want: hostileExpect(406, -32600)},
		{name: "accept", input: "application/json only", req: postH(append(hostileWithout(base, "Accept"), "Accept: application/json"), echo(22, "x")), want: hostileExpect(406, -32600)},
		{name: "accept", input: "two Accept headers, one type each", req: postH(append(hostileWithout(base, "Accept"), "Accept: application/json", "Accept: text/event-stream"), echo(23, "ac")), want: hostileExpectEcho(2)},
		// Mcp-Session-Id.
		{name: "session id", input: "empty value", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: "), echo(25, "x")), want: hostileExpect(400, -32600)},
		{name: "session id", input: "10 KB of 'a'", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: "+strings.Repeat("a", 10<<10)), echo(26, "x")), want: hostileExpect(404, -32001)},
		{name: "session id", input: "500 KB of 'a'", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: "+strings.Repeat("a", 500<<10)), echo(27, "x")), want: hostileExpect(404, -32001)},
		{name: "session id", input: "2 MiB of 'a' (over net/http's 1 MiB header limit)", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: "+strings.Repeat("a", 2<<20)), echo(28, "x")), want: hostileExpectHTTP(431)},
		{name: "session id", input: `control character \x01 inside`, req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: abc\x01def"), echo(29, "x"))},
		{name: "session id", input: `ESC and DEL (\x1b\x7f)`, req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: \x1b[31m\x7f"), echo(30, "x"))},
		{name: "session id", input: `V's id + bare CR + "X-Injected: 1"`, req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: "+sess+"\rX-Injected: 1"), echo(31, "x"))},
		{name: "session id", input: "UTF-8 (é)", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: é"+sess), echo(32, "x")), want: hostileExpect(404, -32001)},
		{name: "session id", input: "well-formed but unknown", req: postH(append(hostileWithout(base, "Mcp-Session-Id"), "Mcp-Session-Id: 0123456789abcdef0123456789abcdef"), echo(33, "x")), want: hostileExpect(404, -32001)},
		{name: "session id", input: "V's id, then a bogus second Mcp-Session-Id", req: postH(append(base, "Mcp-Session-Id: bogus"), echo(34, "d1"))},
		{name: "session id", input: "a bogus Mcp-Session-Id, then V's id", req: postH(append([]string{"Mcp-Session-Id: bogus"}, base...), echo(35, "d2"))},
		{name: "session id", input: "GET with a 10 KB id", req: hostileReq("GET", "/mcp", srv.getHdr(strings.Repeat("a", 10<<10)), nil), want: hostileExpect(404, -32001)},
		{name: "session id", input: "DELETE with a 10 KB id", req: hostileReq("DELETE", "/mcp", []string{"Host: " + h, "Mcp-Session-Id: " + strings.Repeat("a", 10<<10)}, nil), want: hostileExpect(404, -32001)},
		// Last-Event-ID.
		{name: "last-event-id", input: "10 KB", req: get("Last-Event-ID: " + strings.Repeat("g", 10<<10) + ":1"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: `"g:1" (empty stream)`, req: get("Last-Event-ID: g:1"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: "index overflowing uint64", req: get("Last-Event-ID: g0123:99999999999999999999999"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: "negative index", req: get("Last-Event-ID: g0123:-1"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: "upper-case stream id", req: get("Last-Event-ID: gABC:1"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: `control characters ("g\x01\x02:1")`, req: get("Last-Event-ID: g\x01\x02:1")},
		{name: "last-event-id", input: "POST stream id with a bad frontend part", req: get("Last-Event-ID: pzz:1"), want: hostileExpect(400, -32600)},
		{name: "last-event-id", input: "well-formed GET stream id V never had", req: get("Last-Event-ID: g0123456789abcdef:5"), want: func(r hostileResp) error {
			// Not resumed: a fresh stream, with a priming id of its own.
			if r.status != 200 || !r.sse || r.eventID == "" || strings.HasPrefix(r.eventID, "g0123456789abcdef:") {
				return errors.New("want a fresh SSE stream with a new priming event id")
			}
			return nil
		}},
		{name: "last-event-id", input: "well-formed POST stream id of a frontend that does not exist", req: get("Last-Event-ID: " + fakePost), want: hostileExpect(404, -32600)},
		{name: "last-event-id", input: "V's own GET stream id, index 2^63", req: get("Last-Event-ID: " + strings.SplitN(vEvent, ":", 2)[0] + ":9223372036854775808"), want: hostileExpectHTTP(200)},
		{name: "last-event-id", input: "10 KB Last-Event-ID on a POST", req: post(echo(36, "le"), "Last-Event-ID: "+strings.Repeat("g", 10<<10)), want: hostileExpectEcho(2)},
		// Host, Origin, framing.
		{name: "host", input: "missing Host", req: postH(hostileWithout(base, "Host"), echo(37, "x")), want: hostileExpectHTTP(400)},
		{name: "host", input: "two Host headers", req: postH(append(base, "Host: "+h), echo(38, "x")), want: hostileExpectHTTP(400)},
		{name: "host", input: "Host: evil.example", req: postH(append(hostileWithout(base, "Host"), "Host: evil.example"), echo(39, "x")), want: hostileExpect(403, -32600)},
		{name: "origin", input: "Origin: http://evil.example", req: postH(append(base, "Origin: http://evil.example"), echo(40, "x")), want: hostileExpect(403, -32600)},
		{name: "origin", input: "Origin: null", req: postH(append(base, "Origin: null"), echo(41, "x")), want: hostileExpect(403, -32600)},
		{name: "framing", input: "two different Content-Length headers", req: postH(append(base, "Content-Length: 10", "Content-Length: 11"), echo(42, "x")), want: hostileExpectHTTP(400)},
		{name: "framing", input: "Content-Length: -1", req: postH(append(base, "Content-Length: -1"), echo(43, "x")), want: hostileExpectHTTP(400)},
		{name: "framing", input: "Content-Length and Transfer-Encoding: chunked", req: postH(append(base, "Content-Length: 5", "Transfer-Encoding: chunked"), []byte("zz\r\n")), want: hostileExpectHTTP(400)},
		{name: "framing", input: "chunked body with a bad chunk size", req: postH(append(base, "Transfer-Encoding: chunked"), []byte("zz\r\n{}\r\n0\r\n\r\n")), want: hostileExpect(400, -32700)},
		{name: "framing", input: "Transfer-Encoding: gzip", req: postH(append(base, "Transfer-Encoding: gzip"), echo(44, "x")), want: hostileExpectHTTP(501)},
		{name: "framing", input: "request line of control bytes", req: []byte("\x00\x01\x02 /mcp HTTP/1.1\r\nHost: " + h + "\r\n\r\n"), want: hostileExpectHTTP(400)},
		{name: "framing", input: "HTTP/9.9", req: []byte("GET /mcp HTTP/9.9\r\nHost: " + h + "\r\n\r\n"), want: hostileExpectHTTP(505)},
		{name: "framing", input: "10,000 extra headers (X-N: n)", req: postH(append(append([]string(nil), base...), hostileManyHeaders(10000)...), echo(45, "hd")), want: hostileExpectEcho(2)},
		{name: "framing", input: "header name with a space", req: postH(append(base, "Bad Name: x"), echo(46, "x")), want: hostileExpectHTTP(400)},
		{name: "param header", input: "Mcp-Param-Region sent twice (eu, then us), body eu", req: paramTwice("eu", "us", "eu"), want: hostileExpect(400, -32020)},
		{name: "param header", input: "Mcp-Param-Region sent twice (us, then eu), body eu", req: paramTwice("us", "eu", "eu"), want: hostileExpect(400, -32020)},
		{name: "param header", input: "Mcp-Param-Region once (eu), body eu", req: paramTwice("eu", "", "eu"), want: func(r hostileResp) error {
			if r.status != 200 || r.code != 0 || r.result == nil {
				return errors.New("want HTTP 200 with a result")
			}
			return nil
		}},
		{name: "method", input: "PUT", req: hostileReq("PUT", "/mcp", base, echo(47, "x")), want: hostileExpect(405, -32600)},
		{name: "method", input: "OPTIONS (no Origin: not a CORS preflight)", req: hostileReq("OPTIONS", "/mcp", []string{"Host: " + h}, nil), want: hostileExpectHTTP(204)},
		{name: "method", input: "OPTIONS preflight from an origin outside the list", req: hostileReq("OPTIONS", "/mcp", []string{"Host: " + h, "Origin: https://evil.example", "Access-Control-Request-Method: POST"}, nil), want: hostileExpect(403, -32600)},
		{name: "method", input: "OPTIONS preflight asking for an unknown header", req: hostileReq("OPTIONS", "/mcp", []string{"Host: " + h, "Origin: http://127.0.0.1", "Access-Control-Request-Method: POST", "Access-Control-Request-Headers: content-type, x-evil"}, nil), want: hostileExpect(403, -32600)},
		{name: "method", input: "FOO (unknown method)", req: hostileReq("FOO", "/mcp", []string{"Host: " + h}, nil)},
		{name: "method", input: "HTTP/1.0 POST without Host", req: []byte("POST /mcp HTTP/1.0\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: " + sess + fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", len(echo(48, "x"))) + string(echo(48, "x"))), want: hostileExpect(403, -32600)},
	}
	runHostileCases(t, h, tab, cases)

	// The session used for the abuse still works, and nothing smuggled a
	// second request.
	if res := v.Call(100, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "still here"}}); !strings.Contains(string(res), "still here") {
		t.Errorf("the abused session: %s", res)
	}
	good.finish(t, tab)
	srv.assertHealthy(t)
}

func hostileManyHeaders(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("X-N%d: %d", i, i)
	}
	return out
}
