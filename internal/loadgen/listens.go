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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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
