package loadgen

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// roundsRecords has three rounds of the 1-frontend cluster and of mcp-go
// (legacy, c=64) on a machine that slowed down in round 2: both servers
// cost twice as much then. Within each round the cluster costs 1.875x,
// 1.875x and 2.125x mcp-go; the last round alone (2.125x) and the median
// of each server's own figures (170 / 80 = 2.125x) would both fail the
// 2.0x target, the median of the paired ratios (1.875x) passes it.
func roundsRecords() *Records {
	load := func(label string, rps, cpu float64) *Result {
		return &Result{Kind: "load", Label: label, Proto: Legacy, Concurrency: 64, OK: 1000, RPS: rps, Server: &ServerStats{CPUUsPerReq: cpu}}
	}
	return &Records{Loads: []*Result{
		load("mcpfleet-cluster", 6000, 150), load("mcp-go", 10000, 80),
		load("mcpfleet-cluster", 3000, 300), load("mcp-go", 5000, 160),
		load("mcpfleet-cluster", 7200, 170), load("mcp-go", 8000, 80),
	}}
}

func TestTargetsPairRoundsAndTakeTheMedian(t *testing.T) {
	got := issue21Statuses(t, roundsRecords())
	cpu := got["cluster (1 frontend, 1 worker) legacy c=64 summed CPU/req <= 2.0x mcp-go"]
	if cpu.Status != "PASS" {
		t.Errorf("CPU target: %+v, want PASS (median of 1.875x, 1.875x, 2.125x)", cpu)
	}
	if want := "1.88x, median of 3 rounds (1.88x, 1.88x, 2.12x; middle round 300 vs 160 µs/req)"; cpu.Measured != want {
		t.Errorf("CPU measured %q, want %q", cpu.Measured, want)
	}
	// req/s: 0.60x, 0.60x, 0.90x in the rounds: the median fails 0.7x,
	// though the last round alone would pass.
	rps := got["cluster (1 frontend, 1 worker) legacy c=64 req/s >= 0.7x mcp-go"]
	if rps.Status != "FAIL" || !strings.HasPrefix(rps.Measured, "0.60x, median of 3 rounds (0.60x, 0.60x, 0.90x;") {
		t.Errorf("req/s target: %+v", rps)
	}
}

func TestTableShowsTheMedianRound(t *testing.T) {
	var b bytes.Buffer
	roundsRecords().WriteTable(&b, ReportOptions{})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[3], "rounds > 1: the row's figures are its median round by CPU") {
		t.Fatalf("want a header, one row per configuration and the rounds note:\n%s", b.String())
	}
	if h := strings.Fields(lines[0]); h[len(h)-1] != "rounds" {
		t.Errorf("header %q", lines[0])
	}
	// The cluster's median round by CPU is the third (150, 170, 300):
	// its req/s and CPU, the median ratios, 3 rounds.
	want := []string{"mcpfleet-cluster", "legacy", "64", "7200", "0.000", "0.000", "170", "0", "0.60x", "1.88x", "3"}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("cluster row %q, want %q", f, want)
	}
	if f := strings.Fields(lines[2]); f[0] != "mcp-go" || f[3] != "8000" || f[6] != "80" || f[8] != "1.00x" || f[10] != "3" {
		t.Errorf("mcp-go row %q", f)
	}
}

func TestFindMedianRound(t *testing.T) {
	load := func(rps, cpu float64) *Result {
		return &Result{Label: "x", Proto: Modern, Concurrency: 64, OK: 10, RPS: rps, Server: &ServerStats{CPUUsPerReq: cpu}}
	}
	recs := &Records{Loads: []*Result{load(1, 40), load(2, 10), load(3, 30), load(4, 20)}}
	// Even: the lower of the two middle ones by CPU (20, 30).
	if x := recs.find("x", Modern, 64); x == nil || x.RPS != 4 {
		t.Errorf("even rounds: %+v, want the round with 20 µs/req", x)
	}
	recs.Loads = recs.Loads[:3]
	if x := recs.find("x", Modern, 64); x == nil || x.RPS != 3 {
		t.Errorf("odd rounds: %+v, want the round with 30 µs/req", x)
	}
	// Without CPU figures, by req/s (the higher middle one when even).
	recs.Loads = []*Result{{Label: "y", Proto: Legacy, Concurrency: 1, RPS: 5}, {Label: "y", Proto: Legacy, Concurrency: 1, RPS: 9}}
	if x := recs.find("y", Legacy, 1); x == nil || x.RPS != 9 {
		t.Errorf("by req/s: %+v", x)
	}
	if recs.find("y", Legacy, 64) != nil {
		t.Error("found a result that is not there")
	}
	// Rounds pair in order; a reference with fewer rounds pairs the first.
	recs.Loads = []*Result{load(1, 10), {Label: "ref", Proto: Modern, Concurrency: 64, OK: 10, RPS: 2, Server: &ServerStats{CPUUsPerReq: 20}}, load(1, 30)}
	rs := recs.ratios("x", "ref", Modern, 64, true)
	if len(rs) != 1 || rs[0].v != 0.5 {
		t.Errorf("ratios %+v, want one of 0.5", rs)
	}
}

func TestBreakdownOneRowPerConfiguration(t *testing.T) {
	recs := roundsRecords()
	for i, x := range recs.Loads {
		x.Server.Kinds = []KindStats{{Kind: "frontend", CPUUsPerReq: float64(i)}}
	}
	var b bytes.Buffer
	recs.WriteBreakdown(&b, ReportOptions{})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var rows []string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "mcpfleet-cluster" || f[0] == "mcp-go") {
			rows = append(rows, strings.Join(f[:6], " "))
		}
	}
	// The cluster's third round (150, 170, 300 µs/req: 170, frontend 4),
	// and mcp-go's third (80, 80, 160: the second of the two at 80, in
	// the order they were recorded; frontend 5).
	want := []string{"mcpfleet-cluster legacy 64 7200 170 4", "mcp-go legacy 64 8000 80 5"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s\nall:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), b.String())
	}
}

func TestStatusSwitches(t *testing.T) {
	status := "Name:\tworker\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t1200\nnonvoluntary_ctxt_switches:\t34\n"
	if n := statusSwitches([]byte(status)); n != 1234 {
		t.Errorf("%d, want 1234", n)
	}
	if n := statusSwitches([]byte("Name:\tx\n")); n != 0 {
		t.Errorf("no counts: %d", n)
	}
}

// TestSampleSwitchesCountsThreads samples this process: threads that wait
// (goroutines sleeping on timers park the threads that ran them) add
// context switches between two samples.
func TestSampleSwitchesCountsThreads(t *testing.T) {
	pid := os.Getpid()
	s0, err := SampleProcs([]int{pid})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); time.Sleep(time.Millisecond) }()
		}
		wg.Wait()
		s1, err := SampleProcs([]int{pid})
		if err != nil {
			t.Fatal(err)
		}
		if s1.Switches > s0.Switches {
			if s0.Switches <= 0 {
				t.Errorf("first sample: %d switches", s0.Switches)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no context switch counted in 10 s: %d then %d", s0.Switches, s1.Switches)
		}
	}
}

// TestRoundsPairByNumber: a round that left no result (its run failed)
// leaves a gap: the rounds after it still pair with the same rounds of
// the reference, and the target says how many rounds were compared.
func TestRoundsPairByNumber(t *testing.T) {
	load := func(label string, round int, cpu float64) *Result {
		return &Result{Kind: "load", Label: label, Round: round, Proto: Legacy, Concurrency: 64, OK: 1000, RPS: 1000, Server: &ServerStats{CPUUsPerReq: cpu}}
	}
	recs := &Records{Loads: []*Result{
		load("mcpfleet-cluster", 1, 150), load("mcp-go", 1, 80),
		// mcp-go's round 2 failed: no result.
		load("mcpfleet-cluster", 2, 400),
		load("mcpfleet-cluster", 3, 140), load("mcp-go", 3, 80),
	}}
	rs := recs.ratios("mcpfleet-cluster", "mcp-go", Legacy, 64, true)
	// Paired by place, the cluster's round 2 (400) would meet mcp-go's
	// round 3 (5x) and its round 3 nothing.
	if len(rs) != 2 || rs[0].v != 150.0/80 || rs[1].v != 140.0/80 {
		t.Fatalf("ratios %+v, want rounds 1 and 3: 1.875x and 1.75x", rs)
	}
	got := issue21Statuses(t, recs)["cluster (1 frontend, 1 worker) legacy c=64 summed CPU/req <= 2.0x mcp-go"]
	if got.Status != "PASS" || got.Measured != "1.81x, median of 2 rounds (1.88x, 1.75x; middle round 140 vs 80 µs/req) (2 of its 3 rounds compared)" {
		t.Errorf("target %+v", got)
	}
	// A round run again (same number) counts once, the later result.
	recs.Loads = append(recs.Loads, load("mcpfleet-cluster", 3, 100))
	if _, nums := recs.numbered("mcpfleet-cluster", Legacy, 64); len(nums) != 3 {
		t.Errorf("rounds %v, want 1, 2, 3", nums)
	}
	if rs := recs.ratios("mcpfleet-cluster", "mcp-go", Legacy, 64, true); len(rs) != 2 || rs[1].v != 100.0/80 {
		t.Errorf("re-run round: %+v, want round 3 as 100/80", rs)
	}
	recs.Loads = recs.Loads[:len(recs.Loads)-1]
	// Without round numbers, the order numbers them.
	for _, x := range recs.Loads {
		x.Round = 0
	}
	if rs := recs.ratios("mcpfleet-cluster", "mcp-go", Legacy, 64, true); len(rs) != 2 || rs[1].v != 5 {
		t.Errorf("unnumbered: %+v, want round 2 paired with mcp-go's second result (400/80)", rs)
	}
}

// TestSwitchesNeverNegative: a thread that ended in the window took its
// count with it; the process's figure stays at zero or above.
func TestSwitchesNeverNegative(t *testing.T) {
	pids := []int{1, 2}
	p0 := []ProcSample{{Switches: 5000}, {Switches: 100}}
	p1 := []ProcSample{{Switches: 1000}, {Switches: 300}}
	st := serverStats(pids, []string{"frontend", "worker"}, p0, p1, 100)
	if st.SwitchesPerReq != 2 || st.Kind("frontend").SwitchesPerReq != 0 || st.Kind("worker").SwitchesPerReq != 2 {
		t.Errorf("%+v", st)
	}
}
