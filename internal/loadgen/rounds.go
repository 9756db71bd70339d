package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Rounds. A configuration may be measured several times at one protocol
// and concurrency: `make bench` has the servers of a protocol take the
// load in turns, and repeats the turns at the targets' concurrency
// (BENCH_ROUNDS), so that round k of every server ran within a minute of
// round k of the others. A result's round is its Round (`mcpfleet bench
// -round`, which bench.sh sets); a result without one is numbered by its
// place among those of its (label, protocol, concurrency), the first being
// round 1. So a run that failed and wrote no result leaves a gap, not a
// shift: round k is still paired with round k. On a machine whose speed
// drifts, a ratio of two servers is steadier when taken within a round,
// and the median over rounds drops the round a burst of other work fell
// on.

// key names the results of one configuration at one protocol and
// concurrency.
type key struct {
	label string
	proto Proto
	c     int
}

func keyOf(x *Result) key { return key{x.Label, x.Proto, x.Concurrency} }

// rounds returns the results of label, proto and c in the order they were
// recorded: round 1 first.
func (r *Records) rounds(label string, proto Proto, c int) []*Result {
	var out []*Result
	for _, x := range r.Loads {
		if x.Label == label && x.Proto == proto && x.Concurrency == c {
			out = append(out, x)
		}
	}
	return out
}

// find returns the result the report shows for label, proto and c: the
// only round, or with several the median round (of two results of one
// round, the later: see numbered), by CPU per request
// (by req/s when a round has no CPU figure); nil when there is none. With
// an even number of rounds it is the lower of the two middle ones by CPU
// (the higher by req/s).
func (r *Records) find(label string, proto Proto, c int) *Result {
	byRound, nums := r.numbered(label, proto, c)
	xs := make([]*Result, len(nums))
	for i, n := range nums {
		xs[i] = byRound[n]
	}
	switch len(xs) {
	case 0:
		return nil
	case 1:
		return xs[0]
	}
	byCPU := true
	for _, x := range xs {
		if _, ok := cpuPerReq(x); !ok {
			byCPU = false
		}
	}
	sorted := slices.Clone(xs)
	slices.SortStableFunc(sorted, func(a, b *Result) int {
		if byCPU {
			va, _ := cpuPerReq(a)
			vb, _ := cpuPerReq(b)
			return cmp.Compare(va, vb)
		}
		return cmp.Compare(b.RPS, a.RPS)
	})
	return sorted[(len(sorted)-1)/2]
}

// roundRatio is the ratio of a configuration to the reference in one
// round, with the two figures it divides.
type roundRatio struct {
	v, x, ref float64
}

// numbered returns the results of label, proto and c by round number
// (see above; of two with the same number, the later), and the numbers in
// increasing order.
func (r *Records) numbered(label string, proto Proto, c int) (map[int]*Result, []int) {
	byRound := map[int]*Result{}
	var nums []int
	for i, x := range r.rounds(label, proto, c) {
		n := x.Round
		if n <= 0 {
			n = i + 1
		}
		if _, ok := byRound[n]; !ok {
			nums = append(nums, n)
		}
		byRound[n] = x
	}
	slices.Sort(nums)
	return byRound, nums
}

// ratios returns, for each round that both label and ref have at proto
// and c, label's figure over ref's: CPU per request when cpu is set (a
// round without CPU figures on either side is left out), else req/s (a
// round whose reference has no throughput is left out). Round k of one is
// paired with round k of the other.
func (r *Records) ratios(label, ref string, proto Proto, c int, cpu bool) []roundRatio {
	xs, nums := r.numbered(label, proto, c)
	refs, _ := r.numbered(ref, proto, c)
	var out []roundRatio
	for _, n := range nums {
		x, rf := xs[n], refs[n]
		if rf == nil {
			continue
		}
		if cpu {
			v, ok1 := cpuPerReq(x)
			rv, ok2 := cpuPerReq(rf)
			if ok1 && ok2 && rv > 0 {
				out = append(out, roundRatio{v / rv, v, rv})
			}
			continue
		}
		if rf.RPS > 0 {
			out = append(out, roundRatio{x.RPS / rf.RPS, x.RPS, rf.RPS})
		}
	}
	return out
}

// medianRatio returns the median of rs (the mean of the two middle ones
// when there is an even number) and the round whose ratio is the middle
// one (the lower middle when even); ok is false when rs is empty.
func medianRatio(rs []roundRatio) (float64, roundRatio, bool) {
	if len(rs) == 0 {
		return 0, roundRatio{}, false
	}
	s := slices.Clone(rs)
	slices.SortStableFunc(s, func(a, b roundRatio) int { return cmp.Compare(a.v, b.v) })
	mid := s[(len(s)-1)/2]
	if len(s)%2 == 0 {
		return (mid.v + s[len(s)/2].v) / 2, mid, true
	}
	return mid.v, mid, true
}

// describeRatios says what medianRatio found: "1.97x (169 vs 86 µs/req)"
// for one round; with several, the median, each round's ratio in order
// and the figures of the middle round. runs is the number of rounds of
// the configuration: when fewer were compared (a round its reference
// lacks, or without figures), it says how many.
func describeRatios(m float64, mid roundRatio, rs []roundRatio, runs int, unit string) string {
	of := ""
	if runs > len(rs) {
		of = fmt.Sprintf(" (%d of its %d rounds compared)", len(rs), runs)
	}
	if len(rs) == 1 {
		return fmt.Sprintf("%.2fx (%.0f vs %.0f %s)%s", m, mid.x, mid.ref, unit, of)
	}
	each := make([]string, len(rs))
	for i, x := range rs {
		each[i] = fmt.Sprintf("%.2fx", x.v)
	}
	return fmt.Sprintf("%.2fx, median of %d rounds (%s; middle round %.0f vs %.0f %s)%s", m, len(rs), strings.Join(each, ", "), mid.x, mid.ref, unit, of)
}

// keys returns the (label, protocol, concurrency) of the load results,
// each once, grouped by label (in the order the labels first appear), then
// protocol (likewise), then concurrency.
func (r *Records) keys() []key {
	var out []key
	seen := map[key]bool{}
	for _, x := range r.byConfig() {
		if k := keyOf(x); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// writeSwitches writes, for each row at concurrency c with figures by
// kind of process, the context switches per request of each kind (in the
// order of kinds) and of all the processes: how often their threads
// stopped (to wait for the network, a lock, a wake-up, or preempted).
// A request that crosses more processes wakes more threads: this is what
// a cluster of more, smaller processes pays on shared cores.
func writeSwitches(w io.Writer, rows []*Result, kinds []string, c int) {
	for _, x := range rows {
		if x.Server == nil || len(x.Server.Kinds) == 0 || x.OK == 0 || x.Concurrency != c {
			continue
		}
		var parts []string
		for _, k := range kinds {
			if ks := x.Server.Kind(k); ks != nil {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, ks.SwitchesPerReq))
			}
		}
		fmt.Fprintf(w, "context switches per request, %s %s c=%d: %s (all %.2f)\n", x.Label, x.Proto, x.Concurrency, strings.Join(parts, ", "), x.Server.SwitchesPerReq)
	}
}
