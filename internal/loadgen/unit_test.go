package loadgen

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h, a, b Histogram
	r := rand.New(rand.NewPCG(1, 2))
	var all []float64
	for i := 0; i < 50000; i++ {
		d := time.Duration(r.ExpFloat64() * float64(2*time.Millisecond))
		all = append(all, float64(d))
		h.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	sort.Float64s(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := NearestRank(all, q)
		for _, hh := range []*Histogram{&h, &a} {
			got := float64(hh.Quantile(q))
			if math.Abs(got-exact)/exact > 1.0/128 {
				t.Errorf("q=%v: %v, exact %v", q, got, exact)
			}
		}
	}
	if h.Count() != 50000 || a.Count() != 50000 || h.Max() != a.Max() || h.Min() != a.Min() {
		t.Errorf("count/min/max: %d %d %v %v", h.Count(), a.Count(), h.Max(), a.Max())
	}
	if float64(h.Max()) != all[len(all)-1] || float64(h.Min()) != all[0] {
		t.Errorf("min/max not exact")
	}
	var mean float64
	for _, v := range all {
		mean += v
	}
	mean /= float64(len(all))
	if math.Abs(float64(h.Mean())-mean) > 1 {
		t.Errorf("mean %v, want %v", h.Mean(), mean)
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram")
	}
}

func TestHistogramBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345, math.MaxInt64} {
		i := bucketOf(v)
		lo, hi := bucketBounds(i)
		if v < lo || v > hi {
			t.Errorf("%d in bucket %d [%d, %d]", v, i, lo, hi)
		}
		if i >= histBuckets {
			t.Errorf("%d: bucket %d out of range", v, i)
		}
		if v >= 128 && float64(hi-lo)/float64(lo) > 1.0/128 {
			t.Errorf("%d: bucket too wide", v)
		}
	}
}

func TestNearestRank(t *testing.T) {
	v := make([]float64, 20)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if NearestRank(v, 0.5) != 10 || NearestRank(v, 0.99) != 20 || NearestRank(v, 0) != 1 || NearestRank(nil, 0.5) != 0 {
		t.Error("nearest rank")
	}
}

func TestSSEReader(t *testing.T) {
	in := ": comment\r\nid: 7\r\ndata:\r\n\r\nevent: message\ndata: {\"a\":\ndata:1}\n\n" + "data: " + strings.Repeat("x", 10000) + "\n\ndata: last"
	var s sseReader
	s.size = 16
	s.reset(strings.NewReader(in))
	var got []string
	for {
		d, err := s.next()
		if d != nil {
			got = append(got, string(d))
		}
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	want := []string{"{\"a\":\n1}", strings.Repeat("x", 10000), "last"}
	if len(got) != len(want) {
		t.Fatalf("got %d events: %q", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %.40q, want %.40q", i, got[i], want[i])
		}
	}
}

func TestHeaderValue(t *testing.T) {
	if headerValue("echo") != "echo" {
		t.Error("plain name encoded")
	}
	for _, v := range []string{"café", " lead", "trail ", "=?base64?x?=", "a\tb"} {
		if !strings.HasPrefix(headerValue(v), "=?base64?") {
			t.Errorf("%q not encoded", v)
		}
	}
}

func TestNewCallBodies(t *testing.T) {
	k := newCall(Modern, "echo", []byte(`{"text":"hi"}`))
	body := string(k.prefix) + "7" + string(k.suffix)
	for _, s := range []string{`"id":7`, `"name":"echo"`, `"arguments":{"text":"hi"}`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{}`} {
		if !strings.Contains(body, s) {
			t.Errorf("modern body lacks %s: %s", s, body)
		}
	}
	k = newCall(Legacy, "echo", []byte(`{}`))
	if body := string(k.prefix) + "1" + string(k.suffix); strings.Contains(body, "_meta") || k.hdrModern != nil {
		t.Errorf("legacy body: %s", body)
	}
}

func TestRedisInfo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256)
		n, _ := c.Read(buf)
		if !bytes.Contains(buf[:n], []byte("INFO")) {
			return
		}
		body := "# Memory\r\nused_memory:123456\r\nused_memory_human:120K\r\n"
		io.WriteString(c, "$"+strconv.Itoa(len(body))+"\r\n"+body+"\r\n")
	}()
	v, err := RedisUsedMemory(t.Context(), "redis://"+ln.Addr().String()+"/0")
	if err != nil || v != 123456 {
		t.Fatalf("%d %v", v, err)
	}
}

func TestReportTargets(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	recs := &Records{
		Loads: []*Result{
			{Kind: "load", Label: "mcp-go", Proto: Legacy, Concurrency: 64, OK: 100, RPS: 10000, Server: &ServerStats{CPUUsPerReq: 80}},
			{Kind: "load", Label: "mcp-go", Proto: Modern, Concurrency: 64, OK: 100, RPS: 5000, Server: &ServerStats{CPUUsPerReq: 200}},
			{Kind: "load", Label: "mcpfleet-aio", Proto: Legacy, Concurrency: 64, OK: 100, RPS: 13000, Server: &ServerStats{CPUUsPerReq: 60}},
			{Kind: "load", Label: "mcpfleet-aio", Proto: Modern, Concurrency: 64, OK: 100, RPS: 6000, Server: &ServerStats{CPUUsPerReq: 150}},
			{Kind: "load", Label: "mcpfleet-cluster", Proto: Legacy, Concurrency: 64, OK: 100, RPS: 5000, Server: &ServerStats{CPUUsPerReq: 200}},
		},
		Sessions: []*SessionsResult{{Kind: "sessions", Label: "mcpfleet-cluster", N: 1000, OK: 1000,
			Footprint: Footprint{RSSPerItemKiB: f(0.2), GoroutinesPer: f(0), RedisBytesPer: f(400), RSSBeforeMiB: f(1), RSSAfterMiB: f(1), GoroutinesBefore: new(int64), GoroutinesAfter: new(int64), RedisBefore: new(int64), RedisAfter: new(int64)}}},
		FanOuts: []*FanOutResult{{Kind: "fanout", N: 10, URLs: []string{"a", "b"}, Delivered: 200, Expected: 200, AllDelivered: true, LastP99Ms: 300}},
	}
	got := map[string]string{}
	for _, tg := range recs.Targets(ReportOptions{}) {
		got[tg.Name] = tg.Status
	}
	want := map[string]string{
		"all-in-one legacy c=64 CPU/req <= 0.8x mcp-go":                            "PASS", // 0.75
		"all-in-one legacy c=64 req/s >= 1.2x mcp-go":                              "PASS", // 1.3
		"all-in-one modern c=64 CPU/req <= 0.5x mcp-go modern":                     "FAIL", // 0.75
		"cluster legacy c=64 summed CPU/req <= 1.5x mcp-go":                        "FAIL", // 2.5
		"cluster legacy c=64 req/s >= 0.6x mcp-go":                                 "FAIL", // 0.5
		"idle legacy session on the cluster frontend: < 1 KiB RSS":                 "PASS",
		"idle legacy session: < 1 KiB Redis memory":                                "PASS",
		"idle legacy session on the all-in-one: < 1 KiB memory":                    "MISSING",
		"idle listen stream < 8 KiB frontend RSS":                                  "MISSING",
		"fan-out to 10 listen streams on 2 frontends: all delivered, p99 < 250 ms": "FAIL",
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("%s: %q, want %q (all: %v)", name, got[name], st, got)
		}
	}
	var b bytes.Buffer
	recs.WriteTable(&b, ReportOptions{})
	if !strings.Contains(b.String(), "1.30x") || !strings.Contains(b.String(), "0.75x") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	recs.WriteScale(&b)
	if !strings.Contains(b.String(), "400 B/session") {
		t.Errorf("scale:\n%s", b.String())
	}
}

func TestCheckOpenFiles(t *testing.T) {
	if err := CheckOpenFiles(10); err != nil {
		t.Fatal(err)
	}
	err := CheckOpenFiles(1 << 40)
	if err == nil || !strings.Contains(err.Error(), "ulimit -n") {
		t.Fatalf("want a clear refusal, got %v", err)
	}
}
