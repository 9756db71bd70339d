package loadgen

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"slices"
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
		"idle legacy session on the all-in-one: < 1 KiB RSS":                       "MISSING",
		"idle listen stream < 8 KiB frontend RSS":                                  "MISSING",
		"fan-out to 10 listen streams on 2 frontends: all delivered, p99 < 250 ms": "FAIL",
		// Issue 21's.
		"all-in-one legacy c=64 req/s >= 1.0x mcp-go":                                                    "PASS", // 1.3
		"all-in-one legacy c=64 CPU/req <= 1.0x mcp-go":                                                  "PASS", // 0.75
		"cluster (1 frontend, 1 worker) legacy c=64 summed CPU/req <= 2.0x mcp-go":                       "FAIL", // 2.5
		"cluster (1 frontend, 1 worker) legacy c=64 req/s >= 0.7x mcp-go":                                "FAIL", // 0.5
		"cluster (1 frontend, 1 worker) modern c=64 summed CPU/req <= 0.6x mcp-go modern":                "MISSING",
		"cluster (2 frontends, 2 workers, alternating) legacy c=64 summed CPU/req <= 2.0x mcp-go":        "MISSING",
		"cluster (2 frontends, 2 workers, alternating) modern c=64 summed CPU/req <= 0.6x mcp-go modern": "MISSING",
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

// issue21Records are the figures of a make bench at c=64 (and c=16, which
// the targets ignore): the all-in-one's legacy CPU and req/s as given, the
// other mcpfleet figures made worse by the factor worse: at 1 every issue
// 21 target is met (some just at the limit), at 1.2 all of them fail.
func issue21Records(aioCPU, aioRPS, worse float64) *Records {
	load := func(label string, p Proto, c int, rps, cpu float64) *Result {
		return &Result{Kind: "load", Label: label, Proto: p, Concurrency: c, OK: 1000, RPS: rps, Server: &ServerStats{CPUUsPerReq: cpu}}
	}
	f := func(v float64) *float64 { return &v }
	return &Records{
		Loads: []*Result{
			load("mcp-go", Legacy, 64, 10000, 80),
			load("mcp-go", Modern, 64, 5000, 200),
			load("mcp-go", Legacy, 16, 1, 1), // another concurrency: never compared with c=64
			load("mcpfleet-aio", Legacy, 64, aioRPS, aioCPU),
			load("mcpfleet-aio", Modern, 64, 9000, 90*worse),            // 0.45x
			load("mcpfleet-aio", Legacy, 16, 1, 1000),                   // ignored
			load("mcpfleet-cluster", Legacy, 64, 7500/worse, 150*worse), // 1.875x, 0.75x req/s
			load("mcpfleet-cluster", Modern, 64, 6000, 110*worse),       // 0.55x
			load("mcpfleet-cluster-2fe2w", Legacy, 64, 7000/worse, 159*worse),
			load("mcpfleet-cluster-2fe2w", Modern, 64, 5000, 119*worse),
		},
		Sessions: []*SessionsResult{{Kind: "sessions", Label: "mcpfleet-aio", N: 1000, OK: 1000, Footprint: Footprint{RSSPerItemKiB: f(0.9 * worse)}}},
		Listens:  []*ListensResult{{Kind: "listens", N: 10000, Open: 10000, Footprint: Footprint{RSSPerItemKiB: f(7 * worse)}}},
		FanOuts:  []*FanOutResult{{Kind: "fanout", N: 10000, URLs: []string{"a", "b"}, Delivered: 20, Expected: 20, AllDelivered: true, LastP99Ms: 240 * worse}},
	}
}

func issue21Statuses(t *testing.T, recs *Records) map[string]Target {
	t.Helper()
	got := map[string]Target{}
	for _, tg := range recs.Targets(ReportOptions{}) {
		if _, dup := got[tg.Name]; dup {
			t.Errorf("target %q twice", tg.Name)
		}
		if tg.Group == "issue 21" {
			got[tg.Name] = tg
		}
	}
	return got
}

func TestIssue21TargetsPass(t *testing.T) {
	got := issue21Statuses(t, issue21Records(80, 10000, 1))
	want := []string{
		"all-in-one legacy c=64 req/s >= 1.0x mcp-go",
		"all-in-one legacy c=64 CPU/req <= 1.0x mcp-go",
		"all-in-one modern c=64 CPU/req <= 0.5x mcp-go modern",
		"cluster (1 frontend, 1 worker) legacy c=64 summed CPU/req <= 2.0x mcp-go",
		"cluster (1 frontend, 1 worker) legacy c=64 req/s >= 0.7x mcp-go",
		"cluster (1 frontend, 1 worker) modern c=64 summed CPU/req <= 0.6x mcp-go modern",
		"cluster (2 frontends, 2 workers, alternating) legacy c=64 summed CPU/req <= 2.0x mcp-go",
		"cluster (2 frontends, 2 workers, alternating) legacy c=64 req/s >= 0.7x mcp-go",
		"cluster (2 frontends, 2 workers, alternating) modern c=64 summed CPU/req <= 0.6x mcp-go modern",
		"idle legacy session on the all-in-one: < 1 KiB RSS",
		"idle listen stream < 8 KiB frontend RSS (10000 streams)",
		"fan-out to 10000 listen streams on 2 frontends: all delivered, p99 < 250 ms",
	}
	if len(got) != len(want) {
		t.Errorf("%d issue 21 targets, want %d: %v", len(got), len(want), got)
	}
	for _, name := range want {
		if got[name].Status != "PASS" {
			t.Errorf("%s: %+v, want PASS", name, got[name])
		}
	}
	// Equal to the reference is at the limit: 1.0x passes.
	if m := got["all-in-one legacy c=64 CPU/req <= 1.0x mcp-go"].Measured; m != "1.00x (80 vs 80 µs/req)" {
		t.Errorf("measured %q", m)
	}
	var b bytes.Buffer
	issue21Records(80, 10000, 1).WriteTargets(&b, ReportOptions{})
	for _, s := range []string{"load targets at c=64; ratios to mcp-go measured in the same run", "issue 21:\n", "first bench:\n", "  PASS    all-in-one legacy c=64 req/s >= 1.0x mcp-go: 1.00x (10000 vs 10000 req/s)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("targets output lacks %q:\n%s", s, b.String())
		}
	}
}

func TestIssue21TargetsFail(t *testing.T) {
	// The all-in-one just over the limits, the cluster figures 1.2x worse.
	got := issue21Statuses(t, issue21Records(81, 9900, 1.2))
	for name, tg := range got {
		if tg.Status != "FAIL" {
			t.Errorf("%s: %+v, want FAIL", name, tg)
		}
	}
	if len(got) != 12 {
		t.Errorf("%d targets: %v", len(got), got)
	}
	// Missing reference: MISSING, and said why.
	recs := issue21Records(80, 10000, 1)
	recs.Loads = recs.Loads[2:]
	got = issue21Statuses(t, recs)
	tg := got["cluster (1 frontend, 1 worker) modern c=64 summed CPU/req <= 0.6x mcp-go modern"]
	if tg.Status != "MISSING" || tg.Measured != "mcp-go not measured" {
		t.Errorf("without the reference: %+v", tg)
	}
	// A fan-out with fewer streams than the target's says so.
	recs = issue21Records(80, 10000, 1)
	recs.FanOuts[0].N = 2000
	got = issue21Statuses(t, recs)
	if tg := got["fan-out to 2000 listen streams on 2 frontends: all delivered, p99 < 250 ms"]; tg.Status != "PASS" || !strings.Contains(tg.Measured, "fewer than the target's 10000") {
		t.Errorf("small fan-out: %+v", tg)
	}
}

func TestServerStatsByKind(t *testing.T) {
	pids := []int{11, 12, 13, 14, 15, 16}
	kinds := []string{"frontend", "frontend", "worker", "", "nats-server", "redis-server"}
	tck := clockTicks()
	// CPU ticks used in the window: frontends 1 s + 0.5 s, worker 1 s,
	// the unnamed one 0, nats-server 0.25 s, redis-server 0.25 s.
	used := []int64{tck, tck / 2, tck, 0, tck / 4, tck / 4}
	p0 := make([]ProcSample, len(pids))
	p1 := make([]ProcSample, len(pids))
	for i := range pids {
		p0[i] = ProcSample{CPUTicks: 1000, RSS: 1 << 20, Threads: 2, Switches: 500}
		p1[i] = ProcSample{CPUTicks: 1000 + used[i], RSS: 2 << 20, Threads: 3, Switches: 500 + 10000*int64(i)}
	}
	st := serverStats(pids, kinds, p0, p1, 10000)
	if st.CPUS != 3 || st.CPUUsPerReq != 300 || st.Threads != 18 || st.RSSAfterMiB != 12 || st.RSSBeforeMiB != 6 || st.SwitchesPerReq != 15 {
		t.Errorf("total: %+v", st)
	}
	// Switches in the window: 0, 1, 2 ... 5 per request for PID i.
	for i, want := range map[string]float64{"frontend": 1, "worker": 2, "other": 3, "nats-server": 4, "redis-server": 5} {
		if got := st.Kind(i).SwitchesPerReq; got != want {
			t.Errorf("%s: %v switches per request, want %v", i, got, want)
		}
	}
	want := []KindStats{
		{Kind: "frontend", PIDs: []int{11, 12}, CPUS: 1.5, CPUUsPerReq: 150, RSSAfterMiB: 4},
		{Kind: "worker", PIDs: []int{13}, CPUS: 1, CPUUsPerReq: 100, RSSAfterMiB: 2},
		{Kind: "other", PIDs: []int{14}, CPUS: 0, CPUUsPerReq: 0, RSSAfterMiB: 2},
		{Kind: "nats-server", PIDs: []int{15}, CPUS: 0.25, CPUUsPerReq: 25, RSSAfterMiB: 2},
		{Kind: "redis-server", PIDs: []int{16}, CPUS: 0.25, CPUUsPerReq: 25, RSSAfterMiB: 2},
	}
	if len(st.Kinds) != len(want) {
		t.Fatalf("kinds: %+v", st.Kinds)
	}
	for i, w := range want {
		g := st.Kinds[i]
		if g.Kind != w.Kind || fmt.Sprint(g.PIDs) != fmt.Sprint(w.PIDs) || g.CPUS != w.CPUS || g.CPUUsPerReq != w.CPUUsPerReq || g.RSSAfterMiB != w.RSSAfterMiB {
			t.Errorf("kind %d: %+v, want %+v", i, g, w)
		}
	}
	if st.Kind("worker").CPUUsPerReq != 100 || st.Kind("nope") != nil {
		t.Error("Kind lookup")
	}
	// No kinds: the total only.
	if st := serverStats(pids, nil, p0, p1, 10000); len(st.Kinds) != 0 || st.CPUUsPerReq != 300 {
		t.Errorf("without kinds: %+v", st)
	}
	// No request: no division.
	if st := serverStats(pids, kinds, p0, p1, 0); st.CPUUsPerReq != 0 || st.Kinds[0].CPUUsPerReq != 0 {
		t.Errorf("no request: %+v", st)
	}
}

func TestParsePIDs(t *testing.T) {
	pids, kinds, err := ParsePIDs("frontend:11, frontend:12,worker:13,14,nats-server:15,redis_server:16")
	if err != nil || fmt.Sprint(pids) != "[11 12 13 14 15 16]" || fmt.Sprint(kinds) != "[frontend frontend worker  nats-server redis_server]" {
		t.Fatalf("%v %q %v", pids, kinds, err)
	}
	pids, kinds, err = ParsePIDs("1,2")
	if err != nil || len(pids) != 2 || kinds != nil {
		t.Fatalf("plain: %v %v %v", pids, kinds, err)
	}
	for _, bad := range []string{"x", "frontend:", ":12", "a b:1", "frontend:-1", "0"} {
		if _, _, err := ParsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBreakdownAndNotes(t *testing.T) {
	recs := &Records{Loads: []*Result{
		{Kind: "load", Label: "mcpfleet-aio", Proto: Legacy, Concurrency: 64, OK: 1000, RPS: 9000, Server: &ServerStats{CPUUsPerReq: 90},
			Features: "durable delivery on (always), tracing off, access log off"},
		{Kind: "load", Label: "mcpfleet-cluster-2fe2w", Proto: Legacy, Concurrency: 64, OK: 1000, RPS: 5000, URLs: []string{"a", "b"}, Alternate: true,
			Features: "durable delivery on (always), tracing off, access log off",
			Server: &ServerStats{CPUUsPerReq: 250, SwitchesPerReq: 5, Kinds: []KindStats{{Kind: "nats-server", CPUUsPerReq: 40, SwitchesPerReq: 1}, {Kind: "redis-server", CPUUsPerReq: 30, SwitchesPerReq: 0.25},
				{Kind: "worker", CPUUsPerReq: 60, SwitchesPerReq: 1.25}, {Kind: "frontend", CPUUsPerReq: 120, SwitchesPerReq: 2.5}}},
			Redis: &RedisStats{Commands: 3500, CommandsPerReq: 3.5, Reads: 3000, ReadsPerReq: 3, Calls: map[string]int64{"evalsha": 2000, "get": 1000, "pexpire": 500}}},
		{Kind: "load", Label: "mcpfleet-cluster-2fe2w", Proto: Modern, Concurrency: 16, OK: 1000, RPS: 6000, URLs: []string{"a", "b"}, Alternate: true,
			Features: "durable delivery on (always), tracing on",
			Server:   &ServerStats{CPUUsPerReq: 150, Kinds: []KindStats{{Kind: "frontend", CPUUsPerReq: 70}, {Kind: "worker", CPUUsPerReq: 50}, {Kind: "nats-server", CPUUsPerReq: 30}, {Kind: "redis-server", CPUUsPerReq: 0}}},
			Redis:    &RedisStats{}},
	}}
	if !recs.HasBreakdown() {
		t.Fatal("no breakdown")
	}
	var b bytes.Buffer
	recs.WriteBreakdown(&b, ReportOptions{})
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[3], "Redis commands/req: the commands Redis ran") {
		t.Fatalf("breakdown:\n%s", out)
	}
	if want := "context switches per request, mcpfleet-cluster-2fe2w legacy c=64: frontend 2.50, worker 1.25, nats-server 1.00, redis-server 0.25 (all 5.00)"; lines[4] != want {
		t.Errorf("switches: %q, want %q", lines[4], want)
	}
	for i, want := range [][]string{
		{"config", "proto", "c", "req/s", "CPU", "µs/req", "total", "frontend", "worker", "nats-server", "redis-server", "Redis", "commands/req", "Redis", "reads/req"},
		{"mcpfleet-cluster-2fe2w", "legacy", "64", "5000", "250", "120", "60", "40", "30", "3.50", "3.00"},
		{"mcpfleet-cluster-2fe2w", "modern", "16", "6000", "150", "70", "50", "30", "0", "0.00", "0.00"},
	} {
		if got := strings.Fields(lines[i]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
	if lines[5] != "Redis commands per request, mcpfleet-cluster-2fe2w legacy c=64: evalsha 2.00, get 1.00, pexpire 0.50" {
		t.Errorf("by command: %q", lines[5])
	}
	b.Reset()
	recs.WriteNotes(&b)
	want := "note: mcpfleet-aio, mcpfleet-cluster-2fe2w: durable delivery on (always), tracing off, access log off\n" +
		"note: mcpfleet-cluster-2fe2w: durable delivery on (always), tracing on\n" +
		"note: mcpfleet-cluster-2fe2w: each request of a session sent to the other frontend than the last (no sticky routing)\n"
	if b.String() != want {
		t.Errorf("notes:\n%s\nwant:\n%s", b.String(), want)
	}
	if (&Records{Loads: []*Result{{Label: "x"}}}).HasBreakdown() {
		t.Error("a breakdown without kinds or Redis")
	}
}

func TestRedisCountersSub(t *testing.T) {
	before := RedisCounters{Calls: map[string]int64{"info": 1, "get": 10, "evalsha": 5}, Processed: 16, Reads: 20}
	// The window: 100 get, 50 evalsha, 30 set (new), and the two INFO
	// commands and three reads of the samples themselves.
	after := RedisCounters{Calls: map[string]int64{"info": 3, "get": 110, "evalsha": 55, "set": 30}, Processed: 16 + 180 + 2, Reads: 20 + 150 + 3}
	d := after.Sub(before)
	if d.Total() != 180 || d.Processed != 180 || d.Reads != 150 || len(d.Calls) != 3 || d.Calls["info"] != 0 || d.Calls["set"] != 30 {
		t.Errorf("%+v", d)
	}
	// With AUTH: one more command and one more read of its own.
	after.auth = true
	after.Calls["auth"] = 2
	before.Calls["auth"] = 1
	after.Processed++
	after.Reads++
	d = after.Sub(before)
	if d.Total() != 180 || d.Processed != 180 || d.Reads != 150 || d.Calls["auth"] != 0 {
		t.Errorf("with AUTH: %+v", d)
	}
	rs := redisStats("redis://x", d, 100)
	if rs.Commands != 180 || rs.CommandsPerReq != 1.8 || rs.ReadsPerReq != 1.5 {
		t.Errorf("stats: %+v", rs)
	}
}

func TestReadRedisCountersRESP(t *testing.T) {
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
		br := bufio.NewReader(c)
		for _, body := range []string{
			"# Stats\r\ntotal_connections_received:3\r\ntotal_commands_processed:1234\r\ntotal_reads_processed:999\r\n",
			"# Commandstats\r\ncmdstat_get:calls=7,usec=1,usec_per_call=0.1\r\ncmdstat_EVALSHA:calls=3,usec=9\r\ncmdstat_client|setinfo:calls=2,usec=1\r\n",
		} {
			// *2 $4 INFO $n section: five lines.
			for range 5 {
				if _, err := br.ReadString('\n'); err != nil {
					return
				}
			}
			io.WriteString(c, "$"+strconv.Itoa(len(body))+"\r\n"+body+"\r\n")
		}
	}()
	rc, err := ReadRedisCounters(t.Context(), "redis://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if rc.Processed != 1234 || rc.Reads != 999 || rc.Calls["get"] != 7 || rc.Calls["evalsha"] != 3 || rc.Calls["client|setinfo"] != 2 || rc.auth {
		t.Errorf("%+v", rc)
	}
	if _, err := ReadRedisCounters(t.Context(), "redis://192.0.2.1:6379"); err == nil {
		t.Error("a remote Redis was accepted")
	}
}

func TestChartSVG(t *testing.T) {
	recs := issue21Records(80, 10000, 1)
	recs.Loads = append(recs.Loads,
		&Result{Kind: "load", Label: "go-sdk", Proto: Legacy, Concurrency: 64, OK: 10, RPS: 2738, Server: &ServerStats{CPUUsPerReq: 403}},
		&Result{Kind: "load", Label: "floor", Proto: Legacy, Concurrency: 64, OK: 10, RPS: 23942, Server: &ServerStats{CPUUsPerReq: 35}},
		&Result{Kind: "load", Label: "mcpfleet-aio-trace-on", Proto: Legacy, Concurrency: 64, OK: 10, RPS: 1, Server: &ServerStats{CPUUsPerReq: 1}},
	)
	var b bytes.Buffer
	if err := recs.WriteSVG(&b, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	var texts []string
	var root string
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, b.String())
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = v.Name.Space + " " + v.Name.Local
			}
			if v.Name.Local == "rect" {
				rects++
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(v)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q", root)
	}
	all := "\n" + strings.Join(texts, "\n") + "\n"
	for _, label := range []string{"mcpfleet-aio", "mcpfleet-cluster", "mcpfleet-cluster-2fe2w", "go-sdk", "mcp-go", "floor"} {
		if strings.Count(all, "\n"+label+"\n") != 2 { // one name under each chart
			t.Errorf("the chart names %s %d times, want 2", label, strings.Count(all, "\n"+label+"\n"))
		}
	}
	// Values on the bars, axis titles, n/a for the missing bars (floor
	// and go-sdk modern, in both charts).
	for _, s := range []string{"\n10,000\n", "\n23,942\n", "\n2,738\n", "\n403\n", "\n35\n", "\nreq/s\n", "\nCPU µs/request\n", "\nconfiguration\n", "\nlegacy (2025-11-25, sessions)\n", "c=64"} {
		if !strings.Contains(all, s) {
			t.Errorf("the chart lacks %q", strings.TrimSpace(s))
		}
	}
	if n := strings.Count(all, "\nn/a\n"); n != 4 {
		t.Errorf("%d n/a, want 4", n)
	}
	if strings.Contains(all, "trace-on") {
		t.Error("a configuration outside the chart's list was drawn")
	}
	// The background, the legend's 2 swatches, and 10 measured bars in
	// each of the 2 charts.
	if rects != 3+2*10 {
		t.Errorf("%d rects", rects)
	}
	// Empty records still make a valid SVG.
	b.Reset()
	if err := (&Records{}).WriteSVG(&b, ReportOptions{}); err != nil || xml.Unmarshal(b.Bytes(), new(struct{})) != nil {
		t.Errorf("empty chart: %v", err)
	}
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct{ max, top, step float64 }{
		{0, 1, 0.2}, {24000, 30000, 5000}, {83, 100, 20}, {403, 500, 100}, {1, 1.2, 0.2}, {100, 120, 20},
	} {
		top, step := niceScale(tc.max, 5)
		if math.Abs(top-tc.top) > 1e-9 || math.Abs(step-tc.step) > 1e-9 {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", tc.max, top, step, tc.top, tc.step)
		}
	}
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 2.5: "2.5", 12.4: "12"} {
		if got := groupThousands(v); got != want {
			t.Errorf("groupThousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// The table keeps one configuration's rows together, whatever order the
// runs took turns in: configurations and protocols in the order they first
// appear, then by concurrency.
func TestWriteTableGroupsByConfig(t *testing.T) {
	recs := &Records{}
	for _, c := range []int{1, 64} {
		for _, p := range []Proto{Legacy, Modern} {
			for _, l := range []string{"mcpfleet-aio", "mcp-go"} {
				recs.Loads = append(recs.Loads, &Result{Label: l, Proto: p, Concurrency: c, RPS: 100})
			}
		}
	}
	var b bytes.Buffer
	recs.WriteTable(&b, ReportOptions{})
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		f := strings.Fields(line)
		got = append(got, f[0]+" "+f[1]+" "+f[2])
	}
	want := []string{
		"mcpfleet-aio legacy 1", "mcpfleet-aio legacy 64", "mcpfleet-aio modern 1", "mcpfleet-aio modern 64",
		"mcp-go legacy 1", "mcp-go legacy 64", "mcp-go modern 1", "mcp-go modern 64",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
