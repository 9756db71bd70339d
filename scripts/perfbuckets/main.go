// Command perfbuckets sorts the samples of a CPU profile into buckets of
// work, per process name: what share of a process's CPU went to reading
// HTTP requests, writing responses, the handler, the NATS client, the Go
// scheduler, the garbage collector, and so on, and how much of each was
// spent in system calls. `BENCH_PROFILE=1 make bench` runs it on a profile
// of each mcpfleet configuration (scripts/bench_profile.sh);
// docs/scaling.md ("Where a request's CPU goes") shows its tables.
//
// Input: the text of `perf script -F comm,ip,sym` for a `perf record -g`
// profile: a sample is a header line (the process name, then a space),
// then one indented line per frame ("ADDRESS SYMBOL", innermost first),
// then a blank line.
//
//	perf script -i perf.data -F comm,ip,sym | go run ./scripts/perfbuckets -comm frontend,worker
//
// A sample goes to the first bucket (in the order of the rules below)
// whose every pattern is a substring of one of its frames; a sample no rule
// takes is "other", and the -other most frequent innermost frames among
// those are listed. A sample without a call chain is not counted in any
// share; how many there were is printed.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// rule is a bucket: a sample is in it when each of all is a substring of
// one of its frames.
type rule struct {
	name string
	all  []string
}

// rules, first match wins: the runtime's own goroutines and threads, then
// the client libraries' goroutines, then the HTTP server's parts (the
// handler before the connection loop that calls it).
//
// mcpfleet's code that nats.go's subscription goroutine runs (a worker's
// request decode and hand-off, a frontend's routing of a reply frame) is
// mcpfleet's, not the NATS client's: those rules come before the
// subscription's own.
var rules = []rule{
	{"go: sysmon (runtime monitor thread)", []string{"runtime.sysmon"}},
	{"go: garbage collector", []string{"runtime.gcBgMarkWorker"}},
	{"go: garbage collector", []string{"runtime.bgsweep"}},
	{"go: garbage collector", []string{"runtime.bgscavenge"}},
	{"nats client: read loop", []string{"nats%2ego.(*Conn).readLoop"}},
	{"nats client: flusher", []string{"nats%2ego.(*Conn).flusher"}},
	{"worker: request decode, hand-off and handler", []string{"mcpfleet/pkg/worker."}},
	{"frontend: reply routing (on the subscription's goroutine)", []string{"nats%2ego.(*Conn).waitForMsgs", "mcpfleet/pkg/frontend"}},
	{"nats client: subscription delivery", []string{"nats%2ego.(*Conn).waitForMsgs"}},
	{"bus: batched socket writes", []string{"pkg/bus.(*batchConn).writeLoop"}},
	{"redis client", []string{"redis/go-redis"}},
	{"http: background read", []string{"net/http.(*connReader).backgroundRead"}},
	{"http: response flush and write", []string{"net/http.(*response).finishRequest"}},
	{"handler (gin and mcpfleet)", []string{"gin-gonic/gin.(*Engine).ServeHTTP"}},
	{"http: request read and parse", []string{"net/http.(*conn).readRequest"}},
	{"http: wait for the next request", []string{"net/http.(*conn).serve", "bufio.(*Reader).Peek"}},
	{"http: connection loop, other", []string{"net/http.(*conn).serve"}},
	{"nats-server: client read loop", []string{"server.(*client).readLoop"}},
	{"nats-server: client write loop", []string{"server.(*client).writeLoop"}},
	{"go: scheduler", []string{"runtime.schedule"}},
	{"go: scheduler", []string{"runtime.mcall"}},
	{"go: scheduler", []string{"runtime.park_m"}},
}

// inKernel reports whether a frame is the kernel's system call entry.
func inKernel(frame string) bool {
	return strings.Contains(frame, "do_syscall_64") || strings.Contains(frame, "entry_SYSCALL_64")
}

// sample is one profile sample: its process name and frames, innermost
// first.
type sample struct {
	comm   string
	frames []string
}

// parse reads perf script's text and calls each for every sample, in
// order, frames or none. A line that does not start with white space
// starts a sample: the process name (which may hold spaces) and the space
// perf writes after it when a call chain follows. A sample without a call
// chain is one line (name, address, symbol): its name is what comes before
// the last two fields, and it has no frames. An indented line is a frame
// ("ADDRESS SYMBOL", the symbol kept).
func parse(r io.Reader, each func(sample)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var cur *sample
	flush := func() {
		if cur != nil {
			each(*cur)
		}
		cur = nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush()
			cur = &sample{comm: headerComm(line)}
		case cur != nil:
			f := strings.SplitN(strings.TrimSpace(line), " ", 2)
			sym := f[0]
			if len(f) == 2 {
				sym = f[1]
			}
			cur.frames = append(cur.frames, sym)
		}
	}
	flush()
	return sc.Err()
}

// headerComm is the process name of a sample's first line.
func headerComm(line string) string {
	if name, ok := strings.CutSuffix(line, " "); ok {
		return name // a call chain follows
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return strings.TrimSpace(line)
	}
	return strings.Join(f[:len(f)-2], " ")
}

// bucketOf returns the name of the first rule s matches, or "".
func bucketOf(s sample) string {
	for _, r := range rules {
		if !slices.ContainsFunc(r.all, func(p string) bool { return !s.has(p) }) {
			return r.name
		}
	}
	return ""
}

// has reports whether p is a substring of one of s's frames.
func (s sample) has(p string) bool {
	return slices.ContainsFunc(s.frames, func(f string) bool { return strings.Contains(f, p) })
}

// tally is what one process name's samples came to.
type tally struct {
	n       int // samples with a call chain: the shares' denominator
	bare    int // samples without one, in no share
	buckets map[string]*count
	leaves  map[string]int // innermost frames of the samples no rule took
}

// count is one bucket's samples, and those of them in a system call.
type count struct{ samples, kernel int }

func newTally() *tally {
	return &tally{buckets: map[string]*count{}, leaves: map[string]int{}}
}

// add counts s in its bucket, or as bare when it has no frames.
func (t *tally) add(s sample) {
	if len(s.frames) == 0 {
		t.bare++
		return
	}
	t.n++
	name := bucketOf(s)
	if name == "" {
		name = "other"
		t.leaves[s.frames[0]]++
	}
	c := t.buckets[name]
	if c == nil {
		c = &count{}
		t.buckets[name] = c
	}
	c.samples++
	if slices.ContainsFunc(s.frames, inKernel) {
		c.kernel++
	}
}

// write prints t as a table, the largest bucket first.
func (t *tally) write(w io.Writer, comm string, others int) {
	fmt.Fprintf(w, "%s: %d samples\n", comm, t.n)
	if t.bare > 0 {
		fmt.Fprintf(w, "  (%d samples without a call chain left out)\n", t.bare)
	}
	kernel := 0
	for _, k := range largestFirst(t.buckets, func(c *count) int { return c.samples }) {
		c := t.buckets[k]
		kernel += c.kernel
		fmt.Fprintf(w, "  %5.1f%%  (in system calls %4.1f%%)  %s\n", pct(c.samples, t.n), pct(c.kernel, t.n), k)
	}
	fmt.Fprintf(w, "  in system calls, all buckets: %.1f%%\n", pct(kernel, t.n))
	leaves := largestFirst(t.leaves, func(n int) int { return n })
	for _, k := range leaves[:min(max(others, 0), len(leaves))] {
		fmt.Fprintf(w, "        other, innermost %5.1f%%  %s\n", pct(t.leaves[k], t.n), k)
	}
}

// largestFirst returns m's keys by n of their values, largest first, ties
// by key.
func largestFirst[V any](m map[string]V, n func(V) int) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(n(m[b]), n(m[a])), strings.Compare(a, b))
	})
}

// pct is a as a percentage of n (0 when n is 0).
func pct(a, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(a) / float64(n)
}

// run tallies the samples of in by process name (only those of comms when
// it is not empty) and prints one table per name, in the order of comms
// or else by name.
func run(in io.Reader, out io.Writer, comms []string, others int) error {
	want := map[string]bool{}
	for _, c := range comms {
		want[c] = true
	}
	tallies := map[string]*tally{}
	err := parse(in, func(s sample) {
		if len(want) > 0 && !want[s.comm] {
			return
		}
		t := tallies[s.comm]
		if t == nil {
			t = newTally()
			tallies[s.comm] = t
		}
		t.add(s)
	})
	if err != nil {
		return err
	}
	order := comms
	if len(order) == 0 {
		order = slices.Sorted(maps.Keys(tallies))
	}
	for _, c := range order {
		if t := tallies[c]; t != nil {
			t.write(out, c, others)
		} else {
			fmt.Fprintf(out, "%s: no samples\n", c)
		}
	}
	return nil
}

func main() {
	comm := flag.String("comm", "", "comma-separated process names to report (default: every one)")
	others := flag.Int("other", 5, "how many innermost frames of the unsorted samples to list per process")
	flag.Parse()
	var comms []string
	if *comm != "" {
		comms = strings.Split(*comm, ",")
	}
	if err := run(os.Stdin, os.Stdout, comms, *others); err != nil {
		fmt.Fprintln(os.Stderr, "perfbuckets:", err)
		os.Exit(1)
	}
}
