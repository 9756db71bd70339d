//go:build ha

package hatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// The clients' bounds. A call that has no answer within callTimeout is
// given up (the client's own deadline: what a cut-off frontend costs its
// clients); a connection that is not up within dialTimeout fails (a cut
// host answers no SYN). A GET stream that carries nothing, not even a
// keepalive comment (the frontends send one every second), for
// streamIdle is taken for dead and resumed elsewhere.
const (
	callTimeout = 6 * time.Second
	dialTimeout = time.Second
	streamIdle  = 3 * time.Second
	legacyVer   = "2025-11-25"
)

// newHTTP returns an HTTP client of its own (its own connections) for one
// simulated client.
func newHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// post sends one JSON-RPC message and returns the response message (the
// JSON body, or the response among an SSE stream's messages).
func post(ctx context.Context, hc *http.Client, url string, msg any, hdr map[string]string) (int, http.Header, *testenv.Message, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return 0, nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var msgs [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		testenv.ParseSSE(resp.Body, func(ev testenv.Event) bool {
			if ev.Data != "" {
				msgs = append(msgs, []byte(ev.Data))
			}
			return true
		})
		if ctx.Err() != nil {
			return resp.StatusCode, resp.Header, nil, ctx.Err()
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return resp.StatusCode, resp.Header, nil, err
		}
		msgs = append(msgs, b)
	}
	for _, raw := range msgs {
		var m testenv.Message
		if json.Unmarshal(raw, &m) == nil && m.Method == "" && (m.Result != nil || m.Error != nil) {
			return resp.StatusCode, resp.Header, &m, nil
		}
	}
	return resp.StatusCode, resp.Header, nil, nil
}

// callTool calls a tool and checks that the result's text contains want:
// nil, or what went wrong.
func callTool(ctx context.Context, hc *http.Client, url string, modern bool, session string, id any, tool string, args map[string]any, want string) error {
	params := map[string]any{"name": tool, "arguments": args}
	var msg any
	hdr := map[string]string{}
	if modern {
		m, h := testenv.ModernRequest(id, "tools/call", params, nil)
		msg, hdr = m, h
	} else {
		msg = testenv.Request(id, "tools/call", params)
		hdr["Mcp-Session-Id"] = session
		hdr["Mcp-Protocol-Version"] = legacyVer
	}
	status, _, resp, err := post(ctx, hc, url, msg, hdr)
	switch {
	case err != nil:
		return err
	case status != http.StatusOK:
		if resp != nil && resp.Error != nil {
			return fmt.Errorf("HTTP %d: %s", status, resp.Error.Message)
		}
		return fmt.Errorf("HTTP %d", status)
	case resp == nil:
		return errors.New("no response")
	case resp.Error != nil:
		return fmt.Errorf("error %d: %s", resp.Error.Code, resp.Error.Message)
	case !strings.Contains(string(resp.Result), want):
		return fmt.Errorf("result %s, want %q in it", resp.Result, want)
	}
	return nil
}

// newSession initializes a legacy session at url and returns its id.
func newSession(t *testing.T, url string) string {
	t.Helper()
	cl := testenv.NewClient(t, url)
	cl.Initialize(nil)
	return cl.SessionID
}

// call is one recorded request.
type call struct {
	who        string // the client: "legacy 0", "modern 1", "touch"
	fe         int    // the frontend it went to
	start, end time.Time
	err        string // "" when it succeeded
}

func (c call) took() time.Duration { return c.end.Sub(c.start) }

// recorder keeps every call of a test.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// load is the steady load of a test: legacy and modern clients calling
// echo, each on its frontend until a call fails, then on the other one
// (a client that moves); a toucher raising resources/updated, one URI
// after the other; and a follower, the legacy client whose GET stream
// receives them.
type load struct {
	f     *fleet
	rec   recorder
	stop  chan struct{}
	wg    sync.WaitGroup
	count atomic.Int64 // calls made, every client together

	touch          *toucher
	fol            *follower
	legacySessions []string
}

// loadOptions shape startLoad.
type loadOptions struct {
	legacy, modern int           // echo clients of each era
	pace           time.Duration // between two calls of one client
	maxCalls       int           // per client: the loops are bounded
	updates        int           // URIs the follower subscribes to: the most updates the toucher raises
	// stay keeps each echo client on its frontend after a failure (to
	// keep a degraded frontend under load); otherwise it moves.
	stay bool
	// followOn is the frontend the follower's GET stream starts on; the
	// echo clients start alternately on fe1 and fe2, the toucher on the
	// other frontend than the follower.
	followOn int
}

// startLoad creates the sessions (on the frontends, before any fault) and
// starts every client.
func startLoad(t *testing.T, f *fleet, o loadOptions) *load {
	t.Helper()
	l := &load{f: f, stop: make(chan struct{})}
	// The follower: subscribed to every URI the toucher may touch.
	fol := &follower{l: l, cur: o.followOn, got: map[string]int{}, sentinel: make(chan struct{})}
	cl := testenv.NewClient(t, f.feURL[o.followOn])
	cl.Initialize(nil)
	fol.session = cl.SessionID
	for k := range o.updates {
		cl.Call(fmt.Sprint("s", k), "resources/subscribe", map[string]any{"uri": uri(k)})
	}
	cl.Call("s-end", "resources/subscribe", map[string]any{"uri": sentinelURI})
	l.fol = fol
	l.touch = &toucher{l: l, cur: 1 - o.followOn, session: newSession(t, f.feURL[1-o.followOn]), max: o.updates, produced: map[int]bool{}, unsure: map[int]bool{}}

	type client struct {
		who     string
		modern  bool
		session string
		home    int
	}
	var clients []client
	for i := range o.legacy {
		home := i % 2
		c := client{who: fmt.Sprintf("legacy %d", i), session: newSession(t, f.feURL[home]), home: home}
		l.legacySessions = append(l.legacySessions, c.session)
		clients = append(clients, c)
	}
	for i := range o.modern {
		clients = append(clients, client{who: fmt.Sprintf("modern %d", i), modern: true, home: (i + 1) % 2})
	}
	l.wg.Add(2 + len(clients))
	go fol.run() // ends at stop
	go l.touch.run(o.pace)
	for _, c := range clients {
		go func() { // ends at stop or after maxCalls
			defer l.wg.Done()
			hc := newHTTP()
			defer hc.CloseIdleConnections()
			cur := c.home
			tick := time.NewTicker(o.pace)
			defer tick.Stop()
			for n := range o.maxCalls {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				text := fmt.Sprintf("%s #%d", c.who, n)
				start := time.Now()
				err := callTool(ctx, hc, f.feURL[cur], c.modern, c.session, n, "echo", map[string]any{"text": text}, text)
				cancel()
				l.count.Add(1)
				rc := call{who: c.who, fe: cur, start: start, end: time.Now()}
				if err != nil {
					rc.err = err.Error()
					if !o.stay {
						cur = 1 - cur // move to the other frontend
					}
				}
				l.rec.add(rc)
			}
		}()
	}
	return l
}

// sessions returns every legacy session of the load (all created before
// any fault), for the check that they all still work.
func (l *load) sessions() []string {
	return append([]string{l.fol.session, l.touch.session}, l.legacySessions...)
}

// finish raises the sentinel update, waits until the follower got it
// (everything touched before it was then delivered), and stops every
// client.
func (l *load) finish(t *testing.T) {
	t.Helper()
	l.touch.stopAndWait()
	hc := newHTTP()
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(testenv.HangGuard(30 * time.Second))
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err := callTool(ctx, hc, l.f.feURL[n%2], false, l.touch.session, fmt.Sprint("sentinel", n), "touch_resource", map[string]any{"uri": sentinelURI}, "touched")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sentinel update could not be raised: %v", err)
		}
	}
	select {
	case <-l.fol.sentinel:
	case <-time.After(testenv.HangGuard(30 * time.Second)):
		t.Errorf("the follower did not get the sentinel update (resumptions: %s)", l.fol.history())
	}
	close(l.stop)
	l.wg.Wait()
}

const sentinelURI = "test://ha/sentinel"

func uri(k int) string { return fmt.Sprintf("test://ha/%d", k) }

// toucher raises resources/updated for uri(0), uri(1), ... through a
// frontend, moving to the other one after a failure. An update whose
// touch succeeded is produced (it must reach the follower once); one
// whose touch failed may or may not have been raised (unsure: at most
// once).
type toucher struct {
	l        *load
	cur      int
	session  string
	max      int
	mu       sync.Mutex
	produced map[int]bool
	unsure   map[int]bool
	n        int
	quit     chan struct{}
	done     chan struct{}
}

func (tc *toucher) run(pace time.Duration) {
	defer tc.l.wg.Done()
	tc.mu.Lock()
	tc.quit, tc.done = make(chan struct{}), make(chan struct{})
	tc.mu.Unlock()
	defer close(tc.done)
	hc := newHTTP()
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for k := range tc.max {
		select {
		case <-tc.quit:
			return
		case <-tc.l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		start := time.Now()
		err := callTool(ctx, hc, tc.l.f.feURL[tc.cur], false, tc.session, fmt.Sprint("t", k), "touch_resource", map[string]any{"uri": uri(k)}, "touched")
		cancel()
		rc := call{who: "touch", fe: tc.cur, start: start, end: time.Now()}
		tc.mu.Lock()
		tc.n = k + 1
		if err != nil {
			rc.err = err.Error()
			tc.unsure[k] = true
			tc.cur = 1 - tc.cur
		} else {
			tc.produced[k] = true
		}
		tc.mu.Unlock()
		tc.l.rec.add(rc)
	}
}

// stopAndWait stops the toucher and waits for its last touch.
func (tc *toucher) stopAndWait() {
	tc.mu.Lock()
	quit, done := tc.quit, tc.done
	tc.mu.Unlock()
	if quit == nil {
		return
	}
	close(quit)
	<-done
}

// follower is the legacy client holding the session's GET stream: it
// reads it, and when the stream ends, goes silent for streamIdle or
// cannot be opened, resumes it with Last-Event-ID on the other frontend.
type follower struct {
	l        *load
	session  string
	cur      int
	mu       sync.Mutex
	got      map[string]int
	last     string
	resumes  []string // "12.3s: fe1 -> fe2 (idle)"
	sentinel chan struct{}
	sawEnd   bool
	opened   int
}

func (fo *follower) history() string {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	return strings.Join(fo.resumes, ", ")
}

func (fo *follower) run() {
	defer fo.l.wg.Done()
	hc := newHTTP()
	defer hc.CloseIdleConnections()
	begin := time.Now()
	pace := time.NewTicker(250 * time.Millisecond)
	defer pace.Stop()
	for attempt := 0; attempt < 2000; attempt++ {
		select {
		case <-fo.l.stop:
			return
		default:
		}
		reason := fo.follow(hc)
		fo.mu.Lock()
		fo.resumes = append(fo.resumes, fmt.Sprintf("%.1fs: fe%d -> fe%d (%s)", time.Since(begin).Seconds(), fo.cur+1, 2-fo.cur, reason))
		fo.cur = 1 - fo.cur
		fo.mu.Unlock()
		select {
		case <-fo.l.stop:
			return
		case <-pace.C:
		}
	}
}

// follow opens (or resumes) the GET stream on the current frontend and
// reads it until it ends; it returns why it ended.
func (fo *follower) follow(hc *http.Client) string {
	fo.mu.Lock()
	url, last := fo.l.f.feURL[fo.cur], fo.last
	fo.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", fo.session)
	req.Header.Set("Mcp-Protocol-Version", legacyVer)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	// The opening is bounded like a call.
	opened := time.AfterFunc(callTimeout, cancel)
	resp, err := hc.Do(req)
	if !opened.Stop() || err != nil {
		if err == nil {
			resp.Body.Close()
			err = context.DeadlineExceeded
		}
		return "open: " + shortErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("open: HTTP %d", resp.StatusCode)
	}
	fo.mu.Lock()
	fo.opened++
	fo.mu.Unlock()
	var active atomic.Int64
	active.Store(time.Now().UnixNano())
	idle := atomic.Bool{}
	stopped := atomic.Bool{}
	watch := make(chan struct{})
	go func() { // the watchdog: ends with the stream
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watch:
				return
			case <-fo.l.stop:
				stopped.Store(true)
				cancel()
				return
			case <-tick.C:
				if time.Since(time.Unix(0, active.Load())) > streamIdle {
					idle.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	testenv.ParseSSE(resp.Body, func(ev testenv.Event) bool {
		active.Store(time.Now().UnixNano())
		if ev.Comment || ev.Data == "" {
			return true
		}
		var m testenv.Message
		_ = json.Unmarshal([]byte(ev.Data), &m)
		fo.mu.Lock()
		if ev.ID != "" {
			fo.last = ev.ID
		}
		if m.Method == "notifications/resources/updated" {
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(m.Params, &p)
			fo.got[p.URI]++
			if p.URI == sentinelURI && !fo.sawEnd {
				fo.sawEnd = true
				close(fo.sentinel)
			}
		}
		fo.mu.Unlock()
		return true
	})
	close(watch)
	switch {
	case stopped.Load():
		return "stop"
	case idle.Load():
		return "idle"
	}
	return "ended"
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s) > 80 {
		s = s[i+2:]
	}
	return s
}

// summary is one test's figures.
type summary struct {
	ok, failed    int
	slowestFail   time.Duration
	slowestOK     time.Duration
	failures      map[string]int // by kind of error
	produced      int            // updates whose touch succeeded
	unsure        int            // updates whose touch failed
	delivered     int            // produced updates the follower got
	once          int            // produced updates the follower got exactly once
	unsureGot     int            // unsure updates the follower got
	dupes         []string       // updates got more than once
	missing       []string       // produced updates never got
	resumes       string
	streamsOpened int
}

// summarize counts the calls that were under way in [from, to): those
// that ended after from and started before to (a call in flight at a
// fault is counted with the fault).
func (l *load) summarize(from, to time.Time) summary {
	s := summary{failures: map[string]int{}}
	for _, c := range l.rec.all() {
		if !c.end.After(from) || !c.start.Before(to) {
			continue
		}
		if c.err == "" {
			s.ok++
			s.slowestOK = max(s.slowestOK, c.took())
			continue
		}
		s.failed++
		s.slowestFail = max(s.slowestFail, c.took())
		s.failures[errKind(c.err)]++
	}
	tc, fo := l.touch, l.fol
	tc.mu.Lock()
	fo.mu.Lock()
	defer tc.mu.Unlock()
	defer fo.mu.Unlock()
	for k := range tc.n {
		n := fo.got[uri(k)]
		switch {
		case tc.produced[k]:
			s.produced++
			if n > 0 {
				s.delivered++
			}
			if n == 1 {
				s.once++
			}
			if n == 0 {
				s.missing = append(s.missing, uri(k))
			}
		case tc.unsure[k]:
			s.unsure++
			if n > 0 {
				s.unsureGot++
			}
		}
		if n > 1 {
			s.dupes = append(s.dupes, fmt.Sprintf("%s x%d", uri(k), n))
		}
	}
	s.resumes = strings.Join(fo.resumes, ", ")
	s.streamsOpened = fo.opened
	return s
}

// errKind classifies an error for the summary.
func errKind(e string) string {
	switch {
	case strings.Contains(e, "context deadline exceeded"), strings.Contains(e, "Client.Timeout"):
		return "client timeout"
	case strings.Contains(e, "i/o timeout"):
		return "dial timeout"
	case strings.Contains(e, "connection refused"):
		return "refused"
	case strings.Contains(e, "connection reset"), strings.Contains(e, "EOF"), strings.Contains(e, "broken pipe"):
		return "connection lost"
	case strings.Contains(e, "no route to host"), strings.Contains(e, "host is unreachable"):
		return "unreachable"
	case strings.HasPrefix(e, "HTTP "):
		if i := strings.Index(e, ":"); i > 0 {
			return e[:i]
		}
		return e
	}
	if len(e) > 60 {
		e = e[:60]
	}
	return e
}

func (s summary) kinds() string {
	var ks []string
	for k, n := range s.failures {
		ks = append(ks, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// check fails the test on updates delivered twice, or produced and never
// delivered.
func (s summary) check(t *testing.T) {
	t.Helper()
	if len(s.dupes) > 0 {
		t.Errorf("updates delivered more than once: %v", s.dupes)
	}
	if len(s.missing) > 0 {
		t.Errorf("%d produced updates never delivered: %v", len(s.missing), s.missing)
	}
}

// backAfter returns how long after at service was back: the end of the
// last failed call that ended in (at, until), after which every call
// (of every client) succeeded; 0 when none failed; -1 when calls after
// the last failure did not go on succeeding for a whole second before
// until.
func (l *load) backAfter(at, until time.Time) time.Duration {
	var lastFail time.Time
	for _, c := range l.rec.all() {
		if c.err != "" && c.end.After(at) && c.end.Before(until) && c.end.After(lastFail) {
			lastFail = c.end
		}
	}
	if lastFail.IsZero() {
		return 0
	}
	// A whole second of successes after it, before until.
	okAfter := false
	for _, c := range l.rec.all() {
		if c.err == "" && c.start.After(lastFail.Add(time.Second)) && c.end.Before(until) {
			okAfter = true
			break
		}
	}
	if !okAfter {
		return -1
	}
	return lastFail.Sub(at)
}

// probe calls echo through frontend fe with a legacy session made before
// the fault, until every call succeeded for a whole second; it returns
// how long that took (bounded by guard) and the calls that failed before.
func probe(t *testing.T, f *fleet, fe int, session string, guard time.Duration) (time.Duration, string) {
	t.Helper()
	hc := newHTTP()
	defer hc.CloseIdleConnections()
	start := time.Now()
	var goodSince time.Time
	failed := map[string]int{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		text := fmt.Sprint("probe ", n)
		callAt := time.Now()
		err := callTool(ctx, hc, f.feURL[fe], false, session, fmt.Sprint("p", n), "echo", map[string]any{"text": text}, text)
		cancel()
		switch {
		case err != nil:
			failed[errKind(err.Error())]++
			goodSince = time.Time{}
		case goodSince.IsZero():
			goodSince = callAt
		case time.Since(goodSince) >= time.Second:
			return goodSince.Sub(start), summary{failures: failed}.kinds()
		}
		if time.Since(start) > guard {
			t.Fatalf("fe%d did not serve for a whole second within %s of the heal (last error: %v)", fe+1, guard, err)
		}
		<-tick.C
	}
}

// checkSessions makes one call in every session through every frontend:
// sessions created before the fault still work after the heal.
func checkSessions(t *testing.T, f *fleet, sessions []string) {
	t.Helper()
	hc := newHTTP()
	defer hc.CloseIdleConnections()
	for i, s := range sessions {
		for fe := range f.feURL {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			text := fmt.Sprintf("after, session %d", i)
			if err := callTool(ctx, hc, f.feURL[fe], false, s, fmt.Sprint("after", i), "echo", map[string]any{"text": text}, text); err != nil {
				t.Errorf("session %d (made before the fault) through fe%d after the heal: %v", i, fe+1, err)
			}
			cancel()
		}
	}
}
