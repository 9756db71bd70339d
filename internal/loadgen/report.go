package loadgen

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
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
	// cluster runs (default "mcpfleet-aio", "mcpfleet-cluster": one
	// frontend, one worker, nats-server, redis-server); Cluster2 is the
	// cluster of 2 frontends and 2 workers, each request of a session sent
	// to the other frontend than the last (default
	// "mcpfleet-cluster-2fe2w").
	AllInOne, Cluster, Cluster2 string
	// Concurrency is the concurrency the targets and the chart are
	// evaluated at (default 64).
	Concurrency int
	// ChartLabels are the configurations of the chart, in order (default:
	// AllInOne, Cluster, Cluster2, go-sdk, Ref, floor).
	ChartLabels []string
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
	if o.Cluster2 == "" {
		o.Cluster2 = "mcpfleet-cluster-2fe2w"
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if len(o.ChartLabels) == 0 {
		o.ChartLabels = []string{o.AllInOne, o.Cluster, o.Cluster2, "go-sdk", o.Ref, "floor"}
	}
}

func cpuPerReq(x *Result) (float64, bool) {
	if x == nil || x.Server == nil || x.OK == 0 {
		return 0, false
	}
	return x.Server.CPUUsPerReq, true
}

// WriteTable writes the load results as a table with ratios to the
// reference configuration (same protocol, same concurrency), one
// configuration's rows together (configurations in the order they first
// appear, then by protocol and concurrency), however the runs took turns.
// A configuration measured in several rounds has one row: the figures of
// its median round (see find), the ratios the median of each round's
// ratio to the same round of the reference, and the number of rounds.
func (r *Records) WriteTable(w io.Writer, o ReportOptions) {
	o.defaults()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "config\tproto\tc\treq/s\tp50 ms\tp99 ms\tCPU µs/req\terrors\treq/s vs %s\tCPU vs %s\trounds\t\n", o.Ref, o.Ref)
	several := false
	for _, k := range r.keys() {
		x := r.find(k.label, k.proto, k.c)
		_, nums := r.numbered(k.label, k.proto, k.c)
		rr, cr := "-", "-"
		if m, _, ok := medianRatio(r.ratios(k.label, o.Ref, k.proto, k.c, false)); ok {
			rr = fmt.Sprintf("%.2fx", m)
		}
		cpu := "-"
		if v, ok := cpuPerReq(x); ok {
			cpu = fmt.Sprintf("%.0f", v)
			if m, _, ok := medianRatio(r.ratios(k.label, o.Ref, k.proto, k.c, true)); ok {
				cr = fmt.Sprintf("%.2fx", m)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.3f\t%.3f\t%s\t%d\t%s\t%s\t%d\t\n",
			x.Label, x.Proto, x.Concurrency, x.RPS, x.P50Ms, x.P99Ms, cpu, x.Errors, rr, cr, len(nums))
		several = several || len(nums) > 1
	}
	tw.Flush()
	if several {
		fmt.Fprintf(w, "rounds > 1: the row's figures are its median round by CPU µs/req (by req/s without CPU figures); its ratios are the medians of each round's ratio to the same round of %s\n", o.Ref)
	}
}

// byConfig returns the load results grouped by label (in the order the
// labels first appear), then protocol (likewise), then concurrency; runs
// of the same key keep their order.
func (r *Records) byConfig() []*Result {
	first := map[string]int{}
	for _, x := range r.Loads {
		for _, k := range []string{"l:" + x.Label, "p:" + string(x.Proto)} {
			if _, ok := first[k]; !ok {
				first[k] = len(first)
			}
		}
	}
	out := slices.Clone(r.Loads)
	slices.SortStableFunc(out, func(a, b *Result) int {
		return cmp.Or(cmp.Compare(first["l:"+a.Label], first["l:"+b.Label]),
			cmp.Compare(first["p:"+string(a.Proto)], first["p:"+string(b.Proto)]),
			cmp.Compare(a.Concurrency, b.Concurrency))
	})
	return out
}

// WriteNotes writes what the servers of the load runs ran with: each
// distinct Features text with its configurations, and the configurations
// whose sessions alternated between URLs.
func (r *Records) WriteNotes(w io.Writer) {
	var order []string
	labels := map[string][]string{}
	var alt []string
	for _, x := range r.Loads {
		name := x.Label
		if name == "" {
			name = "-"
		}
		if x.Features != "" {
			if _, ok := labels[x.Features]; !ok {
				order = append(order, x.Features)
			}
			if !slices.Contains(labels[x.Features], name) {
				labels[x.Features] = append(labels[x.Features], name)
			}
		}
		if x.Alternate && len(x.URLs) > 1 && !slices.Contains(alt, name) {
			alt = append(alt, name)
		}
	}
	for _, f := range order {
		fmt.Fprintf(w, "note: %s: %s\n", strings.Join(labels[f], ", "), f)
	}
	if len(alt) > 0 {
		fmt.Fprintf(w, "note: %s: each request of a session sent to the other frontend than the last (no sticky routing)\n", strings.Join(alt, ", "))
	}
}

// HasBreakdown reports whether a load run has CPU by kind of process or
// Redis counters.
func (r *Records) HasBreakdown() bool {
	for _, x := range r.Loads {
		if x.Redis != nil || (x.Server != nil && len(x.Server.Kinds) > 0) {
			return true
		}
	}
	return false
}

// kindOrder is the order of the breakdown's columns.
var kindOrder = []string{"frontend", "worker", "nats-server", "redis-server"}

// WriteBreakdown writes, for the load runs with CPU by kind of process or
// Redis counters (the cluster runs; of a configuration measured in
// several rounds, its median round), the CPU µs per request of each kind
// beside the total, and Redis commands and reads per request; then, at
// the report's concurrency, the context switches per request of each kind
// and the Redis commands per request by command.
func (r *Records) WriteBreakdown(w io.Writer, o ReportOptions) {
	o.defaults()
	var kinds []string
	var rows []*Result
	for _, k := range r.keys() {
		x := r.find(k.label, k.proto, k.c)
		has := x.Redis != nil
		if x.Server != nil {
			for _, ks := range x.Server.Kinds {
				has = true
				if !slices.Contains(kinds, ks.Kind) {
					kinds = append(kinds, ks.Kind)
				}
			}
		}
		if has {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 {
		return
	}
	// The kinds of a cluster in the order of a request's path, then any
	// other in the order seen.
	rank := func(k string) int {
		if i := slices.Index(kindOrder, k); i >= 0 {
			return i
		}
		return len(kindOrder)
	}
	slices.SortStableFunc(kinds, func(a, b string) int { return rank(a) - rank(b) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "config\tproto\tc\treq/s\tCPU µs/req total")
	for _, k := range kinds {
		fmt.Fprintf(tw, "\t%s", k)
	}
	fmt.Fprint(tw, "\tRedis commands/req\tRedis reads/req\t\n")
	for _, x := range rows {
		total := "-"
		if v, ok := cpuPerReq(x); ok {
			total = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s", x.Label, x.Proto, x.Concurrency, x.RPS, total)
		for _, k := range kinds {
			v := "-"
			if ks := x.Server.Kind(k); ks != nil && x.OK > 0 {
				v = fmt.Sprintf("%.0f", ks.CPUUsPerReq)
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		cmds, reads := "-", "-"
		if x.Redis != nil && x.OK > 0 {
			cmds, reads = fmt.Sprintf("%.2f", x.Redis.CommandsPerReq), fmt.Sprintf("%.2f", x.Redis.ReadsPerReq)
		}
		fmt.Fprintf(tw, "\t%s\t%s\t\n", cmds, reads)
	}
	tw.Flush()
	fmt.Fprintln(w, "Redis commands/req: the commands Redis ran over the window, those run inside scripts included (INFO commandstats; EVALSHA/EVAL count the scripts sent); reads/req: its read events from clients (INFO stats total_reads_processed), about one per round trip, a pipeline being one")
	writeSwitches(w, rows, kinds, o.Concurrency)
	for _, x := range rows {
		if x.Redis == nil || x.OK == 0 || x.Concurrency != o.Concurrency {
			continue
		}
		names := make([]string, 0, len(x.Redis.Calls))
		for k := range x.Redis.Calls {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := x.Redis.Calls[names[i]], x.Redis.Calls[names[j]]
			return a > b || a == b && names[i] < names[j]
		})
		parts := make([]string, 0, len(names))
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(x.Redis.Calls[k])/float64(x.OK)))
		}
		if len(parts) == 0 {
			parts = append(parts, "none")
		}
		fmt.Fprintf(w, "Redis commands per request, %s %s c=%d: %s\n", x.Label, x.Proto, x.Concurrency, strings.Join(parts, ", "))
	}
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
	// Group is where the target comes from ("issue 21", "first bench").
	Group    string
	Name     string
	Measured string
	// Status is PASS, FAIL or MISSING (not measured).
	Status string
}

// FanOutTargetStreams is the number of listen streams the fan-out target
// is stated for.
const FanOutTargetStreams = 10000

// Targets evaluates the project's performance targets on the records: the
// load targets at o.Concurrency (64), as ratios to o.Ref measured with the
// same protocol and concurrency; first issue 21's, then those of the
// first bench that issue 21 does not restate.
func (r *Records) Targets(o ReportOptions) []Target {
	o.defaults()
	c := o.Concurrency
	var out []Target
	group := ""
	add := func(name string, measured string, ok, have bool) {
		st := "MISSING"
		if have {
			st = "FAIL"
			if ok {
				st = "PASS"
			}
		}
		out = append(out, Target{Group: group, Name: name, Measured: measured, Status: st})
	}
	ratio := func(label string, proto Proto, cpu bool) (float64, string, bool) {
		x, ref := r.find(label, proto, c), r.find(o.Ref, proto, c)
		switch {
		case x == nil:
			return 0, "not measured", false
		case ref == nil:
			return 0, o.Ref + " not measured", false
		}
		rs := r.ratios(label, o.Ref, proto, c, cpu)
		m, mid, ok := medianRatio(rs)
		switch {
		case !ok && cpu:
			return 0, "no CPU figures", false
		case !ok:
			return 0, "reference has no throughput", false
		}
		_, runs := r.numbered(label, proto, c)
		if cpu {
			return m, describeRatios(m, mid, rs, len(runs), "µs/req"), true
		}
		return m, describeRatios(m, mid, rs, len(runs), "req/s"), true
	}
	cpuAtMost := func(label, what string, proto Proto, limit float64) {
		v, m, ok := ratio(label, proto, true)
		ref := o.Ref
		if proto == Modern {
			ref += " modern"
		}
		add(fmt.Sprintf("%s %s c=%d %sCPU/req <= %.1fx %s", what, proto, c, summed(label, o), limit, ref), m, v <= limit, ok)
	}
	rpsAtLeast := func(label, what string, proto Proto, limit float64) {
		v, m, ok := ratio(label, proto, false)
		add(fmt.Sprintf("%s %s c=%d req/s >= %.1fx %s", what, proto, c, limit, o.Ref), m, v >= limit, ok)
	}
	lastSessions := func(label string) *SessionsResult {
		var s *SessionsResult
		for _, x := range r.Sessions {
			if x.Label == label {
				s = x
			}
		}
		return s
	}

	group = "issue 21"
	rpsAtLeast(o.AllInOne, "all-in-one", Legacy, 1.0)
	cpuAtMost(o.AllInOne, "all-in-one", Legacy, 1.0)
	cpuAtMost(o.AllInOne, "all-in-one", Modern, 0.5)
	for _, cl := range []struct{ label, what string }{
		{o.Cluster, "cluster (1 frontend, 1 worker)"},
		{o.Cluster2, "cluster (2 frontends, 2 workers, alternating)"},
	} {
		cpuAtMost(cl.label, cl.what, Legacy, 2.0)
		rpsAtLeast(cl.label, cl.what, Legacy, 0.7)
		cpuAtMost(cl.label, cl.what, Modern, 0.6)
	}
	if s := lastSessions(o.AllInOne); s != nil && s.RSSPerItemKiB != nil {
		add("idle legacy session on the all-in-one: < 1 KiB RSS", fmt.Sprintf("%.2f KiB/session (%d ok of %d)", *s.RSSPerItemKiB, s.OK, s.N), *s.RSSPerItemKiB < 1 && s.OK == s.N, true)
	} else {
		add("idle legacy session on the all-in-one: < 1 KiB RSS", "not measured", false, false)
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
		m := fmt.Sprintf("delivered %d/%d, p99 %.1f ms", f.Delivered, f.Expected, f.LastP99Ms)
		if f.N < FanOutTargetStreams {
			m += fmt.Sprintf(" (measured with %d streams, fewer than the target's %d: BENCH_LISTENS=%d for the real figure)", f.N, FanOutTargetStreams, FanOutTargetStreams)
		}
		add(fmt.Sprintf("fan-out to %d listen streams on %d frontends: all delivered, p99 < 250 ms", f.N, len(f.URLs)), m, f.AllDelivered && f.LastP99Ms < 250, true)
	} else {
		add("fan-out: all delivered, p99 < 250 ms", "not measured", false, false)
	}

	group = "first bench"
	v, m, ok := ratio(o.AllInOne, Legacy, true)
	add(fmt.Sprintf("all-in-one legacy c=%d CPU/req <= 0.8x %s", c, o.Ref), m, v <= 0.8, ok)
	v, m, ok = ratio(o.AllInOne, Legacy, false)
	add(fmt.Sprintf("all-in-one legacy c=%d req/s >= 1.2x %s", c, o.Ref), m, v >= 1.2, ok)
	v, m, ok = ratio(o.Cluster, Legacy, true)
	add(fmt.Sprintf("cluster legacy c=%d summed CPU/req <= 1.5x %s", c, o.Ref), m, v <= 1.5, ok)
	v, m, ok = ratio(o.Cluster, Legacy, false)
	add(fmt.Sprintf("cluster legacy c=%d req/s >= 0.6x %s", c, o.Ref), m, v >= 0.6, ok)
	for _, label := range []string{o.Cluster, o.AllInOne} {
		s := lastSessions(label)
		where := "cluster frontend"
		if label == o.AllInOne {
			where = "all-in-one"
		}
		if s == nil || s.GoroutinesPer == nil {
			add("idle legacy session on the "+where+": no goroutine", "not measured", false, false)
		} else {
			add("idle legacy session on the "+where+": no goroutine (< 0.1 per session)",
				fmt.Sprintf("%.3f goroutines/session (%d ok of %d)", *s.GoroutinesPer, s.OK, s.N), *s.GoroutinesPer < 0.1 && s.OK == s.N, true)
		}
		if label != o.Cluster {
			continue
		}
		if s != nil && s.RSSPerItemKiB != nil {
			add("idle legacy session on the "+where+": < 1 KiB RSS", fmt.Sprintf("%.2f KiB/session", *s.RSSPerItemKiB), *s.RSSPerItemKiB < 1 && s.OK == s.N, true)
		} else {
			add("idle legacy session on the "+where+": < 1 KiB RSS", "not measured", false, false)
		}
		if s != nil && s.RedisBytesPer != nil {
			add("idle legacy session: < 1 KiB Redis memory", fmt.Sprintf("%.0f B/session", *s.RedisBytesPer), *s.RedisBytesPer < 1024 && s.OK == s.N, true)
		} else {
			add("idle legacy session: < 1 KiB Redis memory", "not measured", false, false)
		}
	}
	return out
}

// summed returns "summed " for the cluster labels (whose CPU is summed
// over their processes).
func summed(label string, o ReportOptions) string {
	if label == o.Cluster || label == o.Cluster2 {
		return "summed "
	}
	return ""
}

// WriteTargets writes each target with PASS, FAIL or MISSING, under the
// heading of its group.
func (r *Records) WriteTargets(w io.Writer, o ReportOptions) {
	o.defaults()
	fmt.Fprintf(w, "load targets at c=%d; ratios to %s measured in the same run, same protocol and concurrency (with several rounds, the median of the rounds' ratios, each round against the same round of %s)\n", o.Concurrency, o.Ref, o.Ref)
	group := ""
	for _, t := range r.Targets(o) {
		if t.Group != group {
			group = t.Group
			fmt.Fprintf(w, "%s:\n", group)
		}
		fmt.Fprintf(w, "  %-7s %s: %s\n", t.Status, t.Name, t.Measured)
	}
}
