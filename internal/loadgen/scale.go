package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFanOutURI is the resource URI the listen streams subscribe to and
// touch_resource announces, unless told otherwise.
const DefaultFanOutURI = "bench://mcpfleet/fanout"

// errorSet counts errors by kind and keeps the first message.
type errorSet struct {
	mu     sync.Mutex
	counts map[string]int64
	first  string
}

func (e *errorSet) add(ce *CallError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int64{}
		e.first = ce.Error()
	}
	e.counts[ce.Kind]++
}

// OpenSessions initializes n legacy sessions (initialize +
// notifications/initialized) over urls round-robin with par parallel
// clients, and keeps nothing open: the connections are closed afterwards,
// so the server holds only what it keeps per idle session. It returns how
// many succeeded, the errors by kind and the first error message.
func OpenSessions(ctx context.Context, urls []string, n, par int, timeout time.Duration) (int, map[string]int64, string, error) {
	if err := CheckURLs(urls); err != nil {
		return 0, nil, "", err
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	if par <= 0 {
		par = 16
	}
	cl := newClient(urls, par, timeout)
	defer cl.close()
	out, errs, sample := initSessions(ctx, cl, n, min(par, max(n, 1)))
	return len(out), errs, sample, nil
}

// ScaleConfig describes an idle-scale measurement.
type ScaleConfig struct {
	// URLs are the MCP endpoints (loopback only).
	URLs []string
	// N is the number of sessions or streams.
	N int
	// Concurrency is the number of parallel openings (default 16 for
	// sessions, 64 for streams).
	Concurrency int
	// PIDs are the processes whose RSS is compared before and after.
	PIDs []int
	// MetricsURLs are Prometheus endpoints whose go_goroutines are summed
	// before and after; empty means the /metrics beside each URL.
	MetricsURLs []string
	// RedisURL, when set, is the Redis whose used_memory is compared
	// (sessions only).
	RedisURL string
	// Settle is the pause between opening and the "after" sample
	// (default 2s).
	Settle time.Duration
	// RequestTimeout bounds each exchange (default 10s).
	RequestTimeout time.Duration
	// WarmupSessions is the number of sessions opened (and left idle)
	// before the "before" sample; zero means N, negative none.
	WarmupSessions int
	// URI is the resource the listen streams subscribe to (default
	// DefaultFanOutURI).
	URI string
	// Events is the number of touch_resource events of a fan-out
	// (default 20); EventTimeout how long each may take to reach every
	// stream (default 10s); Gap the pause between events (default 100ms).
	Events       int
	EventTimeout time.Duration
	Gap          time.Duration
	Label        string
}

func (c *ScaleConfig) defaults(n, par int) error {
	if err := CheckURLs(c.URLs); err != nil {
		return err
	}
	if c.N <= 0 {
		c.N = n
	}
	if c.Concurrency <= 0 {
		c.Concurrency = par
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.URI == "" {
		c.URI = DefaultFanOutURI
	}
	if c.Events <= 0 {
		c.Events = 20
	}
	if c.EventTimeout <= 0 {
		c.EventTimeout = 10 * time.Second
	}
	if c.Gap <= 0 {
		c.Gap = 100 * time.Millisecond
	}
	if len(c.MetricsURLs) == 0 {
		seen := map[string]bool{}
		for _, u := range c.URLs {
			if m := MetricsURL(u); m != "" && !seen[m] {
				seen[m] = true
				c.MetricsURLs = append(c.MetricsURLs, m)
			}
		}
	}
	for _, m := range c.MetricsURLs {
		if err := checkURL(m); err != nil {
			return err
		}
	}
	return nil
}

// Footprint is what the server side holds, sampled before and after.
type Footprint struct {
	RSSBeforeMiB *float64 `json:"rss_before_MiB,omitempty"`
	RSSAfterMiB  *float64 `json:"rss_after_MiB,omitempty"`
	// RSSPerItemKiB is the RSS growth divided by the items opened.
	RSSPerItemKiB    *float64 `json:"rss_KiB_per_item,omitempty"`
	GoroutinesBefore *int64   `json:"goroutines_before,omitempty"`
	GoroutinesAfter  *int64   `json:"goroutines_after,omitempty"`
	GoroutinesPer    *float64 `json:"goroutines_per_item,omitempty"`
	RedisBefore      *int64   `json:"redis_used_memory_before,omitempty"`
	RedisAfter       *int64   `json:"redis_used_memory_after,omitempty"`
	RedisBytesPer    *float64 `json:"redis_bytes_per_item,omitempty"`
	// Notes says what could not be measured, and why.
	Notes []string `json:"notes,omitempty"`
}

type sample struct {
	rss        int64
	hasRSS     bool
	goroutines int64
	hasG       bool
	redis      int64
	hasRedis   bool
}

func takeSample(ctx context.Context, c *ScaleConfig, fp *Footprint, when string) sample {
	var s sample
	if len(c.PIDs) > 0 {
		if p, err := SampleProcs(c.PIDs); err == nil {
			s.rss, s.hasRSS = p.RSS, true
		} else {
			fp.Notes = append(fp.Notes, fmt.Sprintf("RSS %s: %v", when, err))
		}
	}
	if len(c.MetricsURLs) > 0 {
		var sum int64
		ok := true
		for _, m := range c.MetricsURLs {
			g, err := Goroutines(ctx, m)
			if err != nil {
				fp.Notes = append(fp.Notes, fmt.Sprintf("goroutines %s: %v", when, err))
				ok = false
				break
			}
			sum += g
		}
		s.goroutines, s.hasG = sum, ok
	}
	if c.RedisURL != "" {
		if m, err := RedisUsedMemory(ctx, c.RedisURL); err == nil {
			s.redis, s.hasRedis = m, true
		} else {
			fp.Notes = append(fp.Notes, fmt.Sprintf("redis %s: %v", when, err))
		}
	}
	return s
}

func (fp *Footprint) fill(before, after sample, n int) {
	div := float64(max(n, 1))
	if before.hasRSS && after.hasRSS {
		b, a := mib(before.rss), mib(after.rss)
		per := float64(after.rss-before.rss) / 1024 / div
		fp.RSSBeforeMiB, fp.RSSAfterMiB, fp.RSSPerItemKiB = &b, &a, &per
	}
	if before.hasG && after.hasG {
		b, a := before.goroutines, after.goroutines
		per := float64(a-b) / div
		fp.GoroutinesBefore, fp.GoroutinesAfter, fp.GoroutinesPer = &b, &a, &per
	}
	if before.hasRedis && after.hasRedis {
		b, a := before.redis, after.redis
		per := float64(a-b) / div
		fp.RedisBefore, fp.RedisAfter, fp.RedisBytesPer = &b, &a, &per
	}
}

// SessionsResult is what MeasureIdleSessions measured.
type SessionsResult struct {
	Kind        string           `json:"kind"` // "sessions"
	Label       string           `json:"label,omitempty"`
	URLs        []string         `json:"urls"`
	N           int              `json:"n"`
	OK          int              `json:"ok"`
	Errors      map[string]int64 `json:"errors,omitempty"`
	ErrorSample string           `json:"error_sample,omitempty"`
	OpenS       float64          `json:"open_s"`
	Warmup      int              `json:"warmup_sessions"`
	Footprint
}

// MeasureIdleSessions opens WarmupSessions idle sessions, samples the
// servers (RSS of the PIDs, go_goroutines of the metrics URLs, Redis
// used_memory), opens N more idle legacy sessions with nothing left open
// (OpenSessions), waits Settle and samples again. Per-session figures
// divide the growth by the sessions opened.
//
// The warm-up sessions stay (they are idle sessions like the others): they
// bring the server's heap, pools and buffers to the size a burst of
// openings needs, so the growth measured afterwards is what each further
// session keeps, not the transient garbage of the first burst.
func MeasureIdleSessions(ctx context.Context, c ScaleConfig) (*SessionsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, MaxDuration)
	defer cancel()
	if err := c.defaults(1000, 16); err != nil {
		return nil, err
	}
	res := &SessionsResult{Kind: "sessions", Label: c.Label, URLs: c.URLs, N: c.N}
	res.Warmup = c.WarmupSessions
	if res.Warmup == 0 {
		res.Warmup = c.N
	}
	if res.Warmup > 0 {
		if _, _, _, err := OpenSessions(ctx, c.URLs, res.Warmup, c.Concurrency, c.RequestTimeout); err != nil {
			return nil, err
		}
		sleep(ctx, c.Settle)
	} else {
		res.Warmup = 0
	}
	before := takeSample(ctx, &c, &res.Footprint, "before")
	t0 := time.Now()
	ok, errs, first, err := OpenSessions(ctx, c.URLs, c.N, c.Concurrency, c.RequestTimeout)
	if err != nil {
		return nil, err
	}
	res.OpenS = time.Since(t0).Seconds()
	res.OK, res.Errors, res.ErrorSample = ok, errs, first
	sleep(ctx, c.Settle)
	after := takeSample(ctx, &c, &res.Footprint, "after")
	res.fill(before, after, ok)
	return res, ctx.Err()
}

// WriteText writes the SCALE line of r.
func (r *SessionsResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "SCALE kind=sessions label=%s n=%d warmup_sessions=%d ok=%d errors=%d open_s=%.2f%s\n",
		orDash(r.Label), r.N, r.Warmup, r.OK, sumCounts(r.Errors), r.OpenS, r.Footprint.text("session"))
	writeErrors(w, r.Errors, r.ErrorSample, r.Notes)
}

func (fp *Footprint) text(item string) string {
	var b strings.Builder
	if fp.RSSPerItemKiB != nil {
		fmt.Fprintf(&b, " rss_MiB=%.1f->%.1f rss_KiB_per_%s=%.2f", *fp.RSSBeforeMiB, *fp.RSSAfterMiB, item, *fp.RSSPerItemKiB)
	}
	if fp.GoroutinesPer != nil {
		fmt.Fprintf(&b, " goroutines=%d->%d goroutines_per_%s=%.3f", *fp.GoroutinesBefore, *fp.GoroutinesAfter, item, *fp.GoroutinesPer)
	}
	if fp.RedisBytesPer != nil {
		fmt.Fprintf(&b, " redis_used_memory=%d->%d redis_bytes_per_%s=%.0f", *fp.RedisBefore, *fp.RedisAfter, item, *fp.RedisBytesPer)
	}
	return b.String()
}

func writeErrors(w io.Writer, errs map[string]int64, first string, notes []string) {
	if len(errs) > 0 {
		fmt.Fprintf(w, "ERRORS %s\n  first: %s\n", kindsString(errs), first)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "NOTE %s\n", n)
	}
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// ListensResult is what MeasureIdleListens measured.
type ListensResult struct {
	Kind        string           `json:"kind"` // "listens"
	Label       string           `json:"label,omitempty"`
	URLs        []string         `json:"urls"`
	N           int              `json:"n"`
	Open        int              `json:"open"`
	PerURL      []int            `json:"per_url"`
	Errors      map[string]int64 `json:"errors,omitempty"`
	ErrorSample string           `json:"error_sample,omitempty"`
	// Lost counts streams that ended before the measurement did.
	Lost  int64   `json:"lost"`
	OpenS float64 `json:"open_s"`
	Footprint
}

// MeasureIdleListens samples the servers, opens N idle
// subscriptions/listen streams spread round-robin over the URLs (each
// acknowledged with {resourceSubscriptions:[URI]}), waits Settle, samples
// again and closes them. Per-stream figures divide the growth by the
// streams open.
func MeasureIdleListens(ctx context.Context, c ScaleConfig) (*ListensResult, error) {
	ctx, cancel := context.WithTimeout(ctx, MaxDuration)
	defer cancel()
	if err := c.defaults(10000, 64); err != nil {
		return nil, err
	}
	if err := CheckOpenFiles(c.N); err != nil {
		return nil, err
	}
	res := &ListensResult{Kind: "listens", Label: c.Label, URLs: c.URLs, N: c.N}
	before := takeSample(ctx, &c, &res.Footprint, "before")
	t0 := time.Now()
	ls, errs := OpenListens(ctx, c.URLs, c.N, c.URI, c.Concurrency, c.RequestTimeout)
	defer ls.Close()
	res.OpenS = time.Since(t0).Seconds()
	res.Open, res.PerURL = ls.Len(), ls.PerURL()
	res.Errors, res.ErrorSample = errs.counts, errs.first
	sleep(ctx, c.Settle)
	after := takeSample(ctx, &c, &res.Footprint, "after")
	res.Lost = ls.Lost()
	res.fill(before, after, res.Open)
	return res, ctx.Err()
}

// WriteText writes the SCALE line of r.
func (r *ListensResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "SCALE kind=listens label=%s n=%d open=%d per_url=%s errors=%d lost=%d open_s=%.2f%s\n",
		orDash(r.Label), r.N, r.Open, intsString(r.PerURL), sumCounts(r.Errors), r.Lost, r.OpenS, r.Footprint.text("stream"))
	writeErrors(w, r.Errors, r.ErrorSample, r.Notes)
}

func intsString(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Listens is a set of open, idle subscriptions/listen streams, each on its
// own connection with a goroutine reading it.
type Listens struct {
	streams []*listenStream
	perURL  []int
	wg      sync.WaitGroup
	closed  atomic.Bool
	lost    atomic.Int64
	fan     atomic.Pointer[fanState]
}

type listenStream struct {
	idx   int
	c     net.Conn
	sse   sseReader
	count int // resources/updated notifications seen (reader goroutine only)
}

// OpenListens opens n subscriptions/listen streams (2026-07-28) spread
// round-robin over urls, par at a time, each subscribed to
// {resourceSubscriptions:[uri]} and checked to be acknowledged with that
// filter. Streams that fail are counted by kind. The caller must Close the
// result. Callers opening thousands should check CheckOpenFiles first.
func OpenListens(ctx context.Context, urls []string, n int, uri string, par int, timeout time.Duration) (*Listens, *errorSet) {
	ls := &Listens{perURL: make([]int, len(urls))}
	errs := &errorSet{}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	parsed := make([]*url.URL, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || checkURL(raw) != nil {
			errs.add(callErr(KindBadResponse, "bad URL %q", raw))
			return ls, errs
		}
		parsed[i] = u
	}
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range max(1, min(par, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				ui := i % len(parsed)
				s, cerr := openListen(ctx, parsed[ui], i, uri, timeout)
				if cerr != nil {
					errs.add(cerr)
					continue
				}
				mu.Lock()
				s.idx = len(ls.streams)
				ls.streams = append(ls.streams, s)
				ls.perURL[ui]++
				mu.Unlock()
				ls.wg.Add(1)
				go ls.read(s)
			}
		}()
	}
	wg.Wait()
	return ls, errs
}

// Len returns the number of streams opened.
func (ls *Listens) Len() int { return len(ls.streams) }

// PerURL returns how many streams each URL holds.
func (ls *Listens) PerURL() []int { return append([]int(nil), ls.perURL...) }

// Lost returns how many streams ended while the set was open.
func (ls *Listens) Lost() int64 { return ls.lost.Load() }

// Close closes every stream and waits for their readers.
func (ls *Listens) Close() {
	if ls.closed.Swap(true) {
		return
	}
	for _, s := range ls.streams {
		s.c.Close()
	}
	ls.wg.Wait()
}

func listenBody(i int, uri string) []byte {
	u, _ := json.Marshal(uri)
	return []byte(`{"jsonrpc":"2.0","id":"bench-listen-` + strconv.Itoa(i) + `","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` + string(u) + `]},"_meta":` + modernMeta + `}}`)
}

// openListen dials u, sends subscriptions/listen and reads up to the
// acknowledgement.
func openListen(ctx context.Context, u *url.URL, i int, uri string, timeout time.Duration) (*listenStream, *CallError) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		return nil, classifyTransport(err)
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(timeout))
	body := listenBody(i, uri)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n",
		u.RequestURI(), u.Host, ModernVersion, len(body))
	req.Write(body)
	if _, err := c.Write(req.Bytes()); err != nil {
		return nil, classifyTransport(err)
	}
	br := bufio.NewReaderSize(c, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, classifyTransport(err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return nil, callErr(KindBadResponse, "listen answered Content-Type %q", ct)
	}
	s := &listenStream{c: c, sse: sseReader{size: 1024}}
	s.sse.reset(resp.Body)
	data, err := s.sse.next()
	if data == nil {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, callErr(KindBadResponse, "the listen stream ended before its acknowledgement")
		}
		return nil, classifyTransport(err)
	}
	var ack struct {
		Method string `json:"method"`
		Params struct {
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if err := json.Unmarshal(data, &ack); err != nil || ack.Method != "notifications/subscriptions/acknowledged" {
		return nil, callErr(KindBadResponse, "the first message of the listen stream is not its acknowledgement: %.200s", data)
	}
	subs := ack.Params.Notifications.ResourceSubscriptions
	if len(subs) != 1 || subs[0] != uri {
		return nil, callErr(KindBadResponse, "the acknowledgement honours resourceSubscriptions %q, want [%q]", subs, uri)
	}
	_ = c.SetDeadline(time.Time{})
	ok = true
	return s, nil
}

var updatedMethod = []byte(`"notifications/resources/updated"`)

// read consumes a stream until it ends, reporting resources/updated
// notifications to the fan-out in progress.
func (ls *Listens) read(s *listenStream) {
	defer ls.wg.Done()
	for {
		data, err := s.sse.next()
		if data != nil && bytes.Contains(data, updatedMethod) {
			// Only notifications during a fan-out count, so one raised
			// by someone else before it cannot shift the numbering.
			if f := ls.fan.Load(); f != nil {
				s.count++
				f.arrived(s.idx, s.count-1, time.Now())
			}
		}
		if err != nil {
			if !ls.closed.Load() {
				ls.lost.Add(1)
			}
			return
		}
	}
}

// fanState records the arrivals of a fan-out's events. A stream's k-th
// resources/updated notification belongs to event k: each stream gets the
// events in order, and a stream that misses one is dropped by the server
// rather than skipped over.
type fanState struct {
	n, events int
	base      time.Time
	start     []atomic.Int64 // per event: ns since base when its call began
	arr       []atomic.Int64 // [event*n+stream]: latency in ns, +1 (0: not yet)
	delivered []atomic.Int64
	done      []chan struct{}
}

func (f *fanState) arrived(stream, event int, at time.Time) {
	if event >= f.events || stream >= f.n {
		return
	}
	lat := int64(at.Sub(f.base)) - f.start[event].Load()
	f.arr[event*f.n+stream].Store(max(lat, 0) + 1)
	if f.delivered[event].Add(1) == int64(f.n) {
		close(f.done[event])
	}
}

// FanOutResult is what MeasureFanOut measured.
type FanOutResult struct {
	Kind        string           `json:"kind"` // "fanout"
	Label       string           `json:"label,omitempty"`
	URLs        []string         `json:"urls"`
	N           int              `json:"n"`
	Streams     int              `json:"streams"`
	PerURL      []int            `json:"per_url"`
	Errors      map[string]int64 `json:"errors,omitempty"`
	ErrorSample string           `json:"error_sample,omitempty"`
	OpenS       float64          `json:"open_s"`
	Events      int              `json:"events"`
	// CallErrors counts touch_resource calls that failed.
	CallErrors int64 `json:"call_errors"`
	// Delivered of Expected (streams × events) notifications arrived;
	// AllDelivered when every event reached every stream requested (N).
	Expected     int64 `json:"expected"`
	Delivered    int64 `json:"delivered"`
	AllDelivered bool  `json:"all_delivered"`
	Lost         int64 `json:"lost"`
	// LastMs is, per event, the time from the start of the touch_resource
	// call until the last stream had the notification (-1: not every
	// stream had it within EventTimeout). The percentiles are over the
	// complete events (nearest rank).
	LastMs    []float64 `json:"last_ms"`
	LastP50Ms float64   `json:"last_p50_ms"`
	LastP99Ms float64   `json:"last_p99_ms"`
	LastMaxMs float64   `json:"last_max_ms"`
	// StreamP50Ms and StreamP99Ms are over every single arrival.
	StreamP50Ms float64 `json:"stream_p50_ms"`
	StreamP99Ms float64 `json:"stream_p99_ms"`
}

// MeasureFanOut opens N listen streams spread over the URLs, then Events
// times calls touch_resource {uri: URI} (modern tools/call on the first
// URL) and records when each stream receives the resulting
// notifications/resources/updated, relative to the start of the call;
// each event waits until every stream has it (or EventTimeout), then Gap.
func MeasureFanOut(ctx context.Context, c ScaleConfig) (*FanOutResult, error) {
	ctx, cancel := context.WithTimeout(ctx, MaxDuration)
	defer cancel()
	if err := c.defaults(10000, 64); err != nil {
		return nil, err
	}
	if err := CheckOpenFiles(c.N); err != nil {
		return nil, err
	}
	res := &FanOutResult{Kind: "fanout", Label: c.Label, URLs: c.URLs, N: c.N, Events: c.Events}
	t0 := time.Now()
	ls, errs := OpenListens(ctx, c.URLs, c.N, c.URI, c.Concurrency, c.RequestTimeout)
	defer ls.Close()
	res.OpenS = time.Since(t0).Seconds()
	res.Streams, res.PerURL = ls.Len(), ls.PerURL()
	res.Errors, res.ErrorSample = errs.counts, errs.first
	n := ls.Len()
	if n == 0 {
		return res, fmt.Errorf("loadgen: no listen stream could be opened (%s): %s", kindsString(errs.counts), errs.first)
	}
	f := &fanState{n: n, events: c.Events, base: time.Now(),
		start: make([]atomic.Int64, c.Events), arr: make([]atomic.Int64, c.Events*n),
		delivered: make([]atomic.Int64, c.Events), done: make([]chan struct{}, c.Events)}
	for i := range f.done {
		f.done[i] = make(chan struct{})
	}
	ls.fan.Store(f)
	args, _ := json.Marshal(map[string]string{"uri": c.URI})
	k := newCall(Modern, "touch_resource", args)
	cl := newClient(c.URLs[:1], 2, c.RequestTimeout)
	defer cl.close()
	cn := &conn{}
	for e := 0; e < c.Events && ctx.Err() == nil; e++ {
		f.start[e].Store(int64(time.Since(f.base)))
		if _, cerr := cl.do(ctx, cn, k, nil, int64(e+1)); cerr != nil {
			res.CallErrors++
			if res.ErrorSample == "" {
				res.ErrorSample = "touch_resource: " + cerr.Error()
			}
		}
		t := time.NewTimer(c.EventTimeout)
		select {
		case <-f.done[e]:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		sleep(ctx, c.Gap)
	}
	ls.fan.Store(nil)
	res.Lost = ls.Lost()
	res.Expected = int64(c.N) * int64(c.Events)
	var h Histogram
	var complete []float64
	for e := 0; e < c.Events; e++ {
		d := f.delivered[e].Load()
		res.Delivered += d
		var last int64
		for s := 0; s < n; s++ {
			if v := f.arr[e*n+s].Load(); v > 0 {
				h.Record(time.Duration(v - 1))
				last = max(last, v-1)
			}
		}
		if d == int64(n) {
			res.LastMs = append(res.LastMs, ms(time.Duration(last)))
			complete = append(complete, ms(time.Duration(last)))
		} else {
			res.LastMs = append(res.LastMs, -1)
		}
	}
	res.AllDelivered = res.Delivered == res.Expected
	sort.Float64s(complete)
	res.LastP50Ms, res.LastP99Ms = NearestRank(complete, 0.50), NearestRank(complete, 0.99)
	if len(complete) > 0 {
		res.LastMaxMs = complete[len(complete)-1]
	}
	res.StreamP50Ms, res.StreamP99Ms = ms(h.Quantile(0.50)), ms(h.Quantile(0.99))
	return res, ctx.Err()
}

// WriteText writes the SCALE line of r.
func (r *FanOutResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "SCALE kind=fanout label=%s n=%d streams=%d per_url=%s open_s=%.2f events=%d delivered=%d/%d all_delivered=%t lost=%d call_errors=%d last_p50_ms=%.1f last_p99_ms=%.1f last_max_ms=%.1f stream_p50_ms=%.1f stream_p99_ms=%.1f\n",
		orDash(r.Label), r.N, r.Streams, intsString(r.PerURL), r.OpenS, r.Events, r.Delivered, r.Expected, r.AllDelivered, r.Lost, r.CallErrors,
		r.LastP50Ms, r.LastP99Ms, r.LastMaxMs, r.StreamP50Ms, r.StreamP99Ms)
	writeErrors(w, r.Errors, r.ErrorSample, nil)
}
