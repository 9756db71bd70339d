package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync/atomic"
	"time"
)

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
