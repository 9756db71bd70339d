package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
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
	// before and after: the processes' admin listeners (/metrics is never
	// beside the MCP endpoint); empty means goroutines are not measured.
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
	if len(c.MetricsURLs) == 0 {
		fp.Notes = append(fp.Notes, fmt.Sprintf("goroutines %s: not measured (no metrics URL: the admin listeners' /metrics)", when))
	} else {
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
