package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Records are the results of several runs, as read back from JSON lines
// (`mcpfleet bench -jsonl FILE`).
type Records struct {
	Loads    []*Result
	Sessions []*SessionsResult
	Listens  []*ListensResult
	FanOuts  []*FanOutResult
}

// ReadRecords reads JSON lines of Result, SessionsResult, ListensResult
// and FanOutResult (told apart by "kind"); blank lines and lines starting
// with # are skipped.
func ReadRecords(r io.Reader) (*Records, error) {
	recs := &Records{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := []byte(strings.TrimSpace(sc.Text()))
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var err error
		switch k.Kind {
		case "load":
			v := &Result{}
			err = json.Unmarshal(b, v)
			recs.Loads = append(recs.Loads, v)
		case "sessions":
			v := &SessionsResult{}
			err = json.Unmarshal(b, v)
			recs.Sessions = append(recs.Sessions, v)
		case "listens":
			v := &ListensResult{}
			err = json.Unmarshal(b, v)
			recs.Listens = append(recs.Listens, v)
		case "fanout":
			v := &FanOutResult{}
			err = json.Unmarshal(b, v)
			recs.FanOuts = append(recs.FanOuts, v)
		default:
			err = fmt.Errorf("unknown kind %q", k.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	return recs, sc.Err()
}

// ReportOptions name the configurations the report compares.
type ReportOptions struct {
	// Ref is the label ratios are relative to (default "mcp-go").
	Ref string
	// AllInOne and Cluster are the labels of mcpfleet's all-in-one and
	// cluster runs (default "mcpfleet-aio", "mcpfleet-cluster").
	AllInOne, Cluster string
}

func (o *ReportOptions) defaults() {
	if o.Ref == "" {
		o.Ref = "mcp-go"
	}
	if o.AllInOne == "" {
		o.AllInOne = "mcpfleet-aio"
	}
	if o.Cluster == "" {
		o.Cluster = "mcpfleet-cluster"
	}
}

// find returns the last load result with label, proto and concurrency.
func (r *Records) find(label string, proto Proto, c int) *Result {
	var out *Result
	for _, x := range r.Loads {
		if x.Label == label && x.Proto == proto && x.Concurrency == c {
			out = x
		}
	}
	return out
}

func cpuPerReq(x *Result) (float64, bool) {
	if x == nil || x.Server == nil || x.OK == 0 {
		return 0, false
	}
	return x.Server.CPUUsPerReq, true
}

// WriteTable writes the load results as a table with ratios to the
// reference configuration (same protocol, same concurrency).
func (r *Records) WriteTable(w io.Writer, o ReportOptions) {
	o.defaults()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "config\tproto\tc\treq/s\tp50 ms\tp99 ms\tCPU µs/req\terrors\treq/s vs %s\tCPU vs %s\t\n", o.Ref, o.Ref)
	for _, x := range r.Loads {
		ref := r.find(o.Ref, x.Proto, x.Concurrency)
		rr, cr := "-", "-"
		if ref != nil && ref.RPS > 0 {
			rr = fmt.Sprintf("%.2fx", x.RPS/ref.RPS)
		}
		cpu := "-"
		if v, ok := cpuPerReq(x); ok {
			cpu = fmt.Sprintf("%.0f", v)
			if rv, ok := cpuPerReq(ref); ok && rv > 0 {
				cr = fmt.Sprintf("%.2fx", v/rv)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.3f\t%.3f\t%s\t%d\t%s\t%s\t\n",
			x.Label, x.Proto, x.Concurrency, x.RPS, x.P50Ms, x.P99Ms, cpu, x.Errors, rr, cr)
	}
	tw.Flush()
}

// WriteScale writes the idle-scale and fan-out figures.
func (r *Records) WriteScale(w io.Writer) {
	for _, s := range r.Sessions {
		fmt.Fprintf(w, "%d idle legacy sessions on %s after %d warm-up sessions (%d ok, %d errors, opened in %.2fs):", s.N, s.Label, s.Warmup, s.OK, sumCounts(s.Errors), s.OpenS)
		if s.RSSPerItemKiB != nil {
			fmt.Fprintf(w, " RSS %.2f KiB/session (%.1f -> %.1f MiB);", *s.RSSPerItemKiB, *s.RSSBeforeMiB, *s.RSSAfterMiB)
		}
		if s.GoroutinesPer != nil {
			fmt.Fprintf(w, " goroutines %.3f/session (%d -> %d);", *s.GoroutinesPer, *s.GoroutinesBefore, *s.GoroutinesAfter)
		}
		if s.RedisBytesPer != nil {
			fmt.Fprintf(w, " Redis used_memory %.0f B/session (%d -> %d);", *s.RedisBytesPer, *s.RedisBefore, *s.RedisAfter)
		}
		fmt.Fprintln(w)
		writeNotes(w, s.Notes, s.ErrorSample)
	}
	for _, l := range r.Listens {
		fmt.Fprintf(w, "%d idle listen streams on %s (%d open, per URL %s, %d errors, %d lost, opened in %.2fs):", l.N, l.Label, l.Open, intsString(l.PerURL), sumCounts(l.Errors), l.Lost, l.OpenS)
		if l.RSSPerItemKiB != nil {
			fmt.Fprintf(w, " RSS %.2f KiB/stream (%.1f -> %.1f MiB);", *l.RSSPerItemKiB, *l.RSSBeforeMiB, *l.RSSAfterMiB)
		}
		if l.GoroutinesPer != nil {
			fmt.Fprintf(w, " goroutines %.3f/stream (%d -> %d);", *l.GoroutinesPer, *l.GoroutinesBefore, *l.GoroutinesAfter)
		}
		fmt.Fprintln(w)
		writeNotes(w, l.Notes, l.ErrorSample)
	}
	for _, f := range r.FanOuts {
		fmt.Fprintf(w, "fan-out of %d resources/updated to %d listen streams on %s (per URL %s): delivered %d/%d, lost streams %d, call errors %d; time until the last stream had it: p50 %.1f ms, p99 %.1f ms, max %.1f ms; per stream p50 %.1f ms, p99 %.1f ms\n",
			f.Events, f.Streams, f.Label, intsString(f.PerURL), f.Delivered, f.Expected, f.Lost, f.CallErrors, f.LastP50Ms, f.LastP99Ms, f.LastMaxMs, f.StreamP50Ms, f.StreamP99Ms)
		writeNotes(w, nil, f.ErrorSample)
	}
}

func writeNotes(w io.Writer, notes []string, sample string) {
	if sample != "" {
		fmt.Fprintf(w, "  first error: %s\n", sample)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// Target is one checked goal.
type Target struct {
	Name     string
	Measured string
	// Status is PASS, FAIL or MISSING (not measured).
	Status string
}

// Targets evaluates the project's performance targets on the records.
func (r *Records) Targets(o ReportOptions) []Target {
	o.defaults()
	var out []Target
	add := func(name string, measured string, ok, have bool) {
		st := "MISSING"
		if have {
			st = "FAIL"
			if ok {
				st = "PASS"
			}
		}
		out = append(out, Target{Name: name, Measured: measured, Status: st})
	}
	ratio := func(label string, proto Proto, c int, cpu bool) (float64, string, bool) {
		x, ref := r.find(label, proto, c), r.find(o.Ref, proto, c)
		if x == nil || ref == nil {
			return 0, "not measured", false
		}
		if cpu {
			v, ok1 := cpuPerReq(x)
			rv, ok2 := cpuPerReq(ref)
			if !ok1 || !ok2 || rv == 0 {
				return 0, "no CPU figures", false
			}
			return v / rv, fmt.Sprintf("%.2fx (%.0f vs %.0f µs/req)", v/rv, v, rv), true
		}
		if ref.RPS == 0 {
			return 0, "reference has no throughput", false
		}
		return x.RPS / ref.RPS, fmt.Sprintf("%.2fx (%.0f vs %.0f req/s)", x.RPS/ref.RPS, x.RPS, ref.RPS), true
	}
	v, m, ok := ratio(o.AllInOne, Legacy, 64, true)
	add("all-in-one legacy c=64 CPU/req <= 0.8x "+o.Ref, m, v <= 0.8, ok)
	v, m, ok = ratio(o.AllInOne, Legacy, 64, false)
	add("all-in-one legacy c=64 req/s >= 1.2x "+o.Ref, m, v >= 1.2, ok)
	v, m, ok = ratio(o.AllInOne, Modern, 64, true)
	add("all-in-one modern c=64 CPU/req <= 0.5x "+o.Ref+" modern", m, v <= 0.5, ok)
	v, m, ok = ratio(o.Cluster, Legacy, 64, true)
	add("cluster legacy c=64 summed CPU/req <= 1.5x "+o.Ref, m, v <= 1.5, ok)
	v, m, ok = ratio(o.Cluster, Legacy, 64, false)
	add("cluster legacy c=64 req/s >= 0.6x "+o.Ref, m, v >= 0.6, ok)

	for _, label := range []string{o.Cluster, o.AllInOne} {
		var s *SessionsResult
		for _, x := range r.Sessions {
			if x.Label == label {
				s = x
			}
		}
		where := "cluster frontend"
		if label == o.AllInOne {
			where = "all-in-one"
		}
		if s == nil {
			add("idle legacy session on the "+where+": no goroutine", "not measured", false, false)
			add("idle legacy session on the "+where+": < 1 KiB memory", "not measured", false, false)
			continue
		}
		complete := s.OK == s.N
		if s.GoroutinesPer != nil {
			add("idle legacy session on the "+where+": no goroutine (< 0.1 per session)",
				fmt.Sprintf("%.3f goroutines/session (%d ok of %d)", *s.GoroutinesPer, s.OK, s.N), *s.GoroutinesPer < 0.1 && complete, true)
		} else {
			add("idle legacy session on the "+where+": no goroutine", "not measured", false, false)
		}
		if s.RSSPerItemKiB != nil {
			add("idle legacy session on the "+where+": < 1 KiB RSS", fmt.Sprintf("%.2f KiB/session", *s.RSSPerItemKiB), *s.RSSPerItemKiB < 1 && complete, true)
		} else {
			add("idle legacy session on the "+where+": < 1 KiB RSS", "not measured", false, false)
		}
		if label == o.Cluster {
			if s.RedisBytesPer != nil {
				add("idle legacy session: < 1 KiB Redis memory", fmt.Sprintf("%.0f B/session", *s.RedisBytesPer), *s.RedisBytesPer < 1024 && complete, true)
			} else {
				add("idle legacy session: < 1 KiB Redis memory", "not measured", false, false)
			}
		}
	}
	if len(r.Listens) > 0 && r.Listens[len(r.Listens)-1].RSSPerItemKiB != nil {
		l := r.Listens[len(r.Listens)-1]
		add(fmt.Sprintf("idle listen stream < 8 KiB frontend RSS (%d streams)", l.N),
			fmt.Sprintf("%.2f KiB/stream (%d open of %d)", *l.RSSPerItemKiB, l.Open, l.N), *l.RSSPerItemKiB < 8 && l.Open == l.N, true)
	} else {
		add("idle listen stream < 8 KiB frontend RSS", "not measured", false, false)
	}
	if len(r.FanOuts) > 0 {
		f := r.FanOuts[len(r.FanOuts)-1]
		add(fmt.Sprintf("fan-out to %d listen streams on %d frontends: all delivered, p99 < 250 ms", f.N, len(f.URLs)),
			fmt.Sprintf("delivered %d/%d, p99 %.1f ms", f.Delivered, f.Expected, f.LastP99Ms), f.AllDelivered && f.LastP99Ms < 250, true)
	} else {
		add("fan-out: all delivered, p99 < 250 ms", "not measured", false, false)
	}
	return out
}

// WriteTargets writes each target with PASS, FAIL or MISSING.
func (r *Records) WriteTargets(w io.Writer, o ReportOptions) {
	for _, t := range r.Targets(o) {
		fmt.Fprintf(w, "%-7s %s: %s\n", t.Status, t.Name, t.Measured)
	}
}
