package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what one Run measured. Latencies are of successful requests
// completed inside the measured window.
type Result struct {
	Kind  string `json:"kind"` // "load"
	Label string `json:"label,omitempty"`
	// Round is Config.Round.
	Round      int      `json:"round,omitempty"`
	Proto      Proto    `json:"proto"`
	Negotiated string   `json:"negotiated"`
	URLs       []string `json:"urls"`
	// Alternate is set when each session's requests alternated over the
	// URLs (Config.Alternate).
	Alternate bool `json:"alternate,omitempty"`
	// Features is Config.Features: what the server ran with.
	Features    string `json:"features,omitempty"`
	Tool        string `json:"tool"`
	Concurrency int    `json:"c"`
	// Sessions is the number of legacy sessions in use (0 when modern).
	Sessions   int              `json:"sessions"`
	InitErrors map[string]int64 `json:"init_errors,omitempty"`
	DurationS  float64          `json:"dur_s"`
	OK         int64            `json:"ok"`
	Errors     int64            `json:"errors"`
	// ErrorsByKind counts errors by kind (see the Kind constants);
	// ErrorSamples keeps the first message of each kind.
	ErrorsByKind map[string]int64  `json:"errors_by_kind,omitempty"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	RPS          float64           `json:"rps"`
	P50Ms        float64           `json:"p50_ms"`
	P90Ms        float64           `json:"p90_ms"`
	P99Ms        float64           `json:"p99_ms"`
	MaxMs        float64           `json:"max_ms"`
	MeanMs       float64           `json:"mean_ms"`
	// JSONResponses and SSEResponses split OK by the reply's Content-Type.
	JSONResponses int64   `json:"json_resps"`
	SSEResponses  int64   `json:"sse_resps"`
	LoadgenCPUS   float64 `json:"loadgen_cpu_s"`
	// Server is set when PIDs were given.
	Server *ServerStats `json:"server,omitempty"`
	// Redis is set when a Redis URL was given.
	Redis *RedisStats `json:"redis,omitempty"`
}

// RedisStats is what a Redis did during the measured window, without the
// load generator's own INFO commands.
type RedisStats struct {
	URL string `json:"url"`
	// Commands is the number of commands Redis ran (INFO commandstats;
	// commands run inside scripts count too); Calls splits it by command.
	Commands       int64            `json:"commands"`
	CommandsPerReq float64          `json:"commands_per_req"`
	Calls          map[string]int64 `json:"calls,omitempty"`
	// Reads is total_reads_processed: read events of client connections,
	// about one per round trip.
	Reads       int64   `json:"reads"`
	ReadsPerReq float64 `json:"reads_per_req"`
}

// ServerStats are the server processes' figures over the measured window,
// summed over the PIDs.
type ServerStats struct {
	PIDs []int   `json:"pids"`
	CPUS float64 `json:"cpu_s"`
	// CPUUsPerReq is the servers' CPU time divided by the successful
	// requests of the window, in microseconds.
	CPUUsPerReq  float64 `json:"cpu_us_per_req"`
	RSSBeforeMiB float64 `json:"rss_before_MiB"`
	RSSAfterMiB  float64 `json:"rss_after_MiB"`
	Threads      int     `json:"threads"`
	// SwitchesPerReq is the processes' context switches over the window
	// (ProcSample.Switches) per successful request: how often a thread
	// of theirs stopped, to wait or preempted.
	SwitchesPerReq float64 `json:"switches_per_req"`
	// Kinds splits the figures by kind of process (Config.PIDKinds), in
	// the order the kinds first appear.
	Kinds []KindStats `json:"kinds,omitempty"`
}

// KindStats are the figures of the processes of one kind.
type KindStats struct {
	Kind        string  `json:"kind"`
	PIDs        []int   `json:"pids"`
	CPUS        float64 `json:"cpu_s"`
	CPUUsPerReq float64 `json:"cpu_us_per_req"`
	RSSAfterMiB float64 `json:"rss_after_MiB"`
	// SwitchesPerReq is as ServerStats.SwitchesPerReq, for these
	// processes.
	SwitchesPerReq float64 `json:"switches_per_req"`
}

// Kind returns the figures of kind, or nil.
func (s *ServerStats) Kind(kind string) *KindStats {
	if s == nil {
		return nil
	}
	for i := range s.Kinds {
		if s.Kinds[i].Kind == kind {
			return &s.Kinds[i]
		}
	}
	return nil
}

// phases of a run.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// shard is a share of the run's statistics, guarded by its mutex; workers
// spread over a few shards so recording stays cheap.
type shard struct {
	mu      sync.Mutex
	hist    Histogram
	sse     int64 // successes answered with an SSE stream
	errs    map[string]int64
	samples map[string]string
}

func (s *shard) recordErr(e *CallError) {
	s.mu.Lock()
	if s.errs == nil {
		s.errs, s.samples = map[string]int64{}, map[string]string{}
	}
	s.errs[e.Kind]++
	if _, ok := s.samples[e.Kind]; !ok {
		s.samples[e.Kind] = e.Msg
	}
	s.mu.Unlock()
}

// Run runs the load described by cfg and returns what it measured. It
// fails when the configuration is invalid, a PID cannot be read, or no
// legacy session could be initialized; request errors are counted in the
// Result instead.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(cfg.PIDs) > 0 {
		if _, err := SampleProcs(cfg.PIDs); err != nil {
			return nil, err
		}
	}
	// A hard bound on everything, whatever the caller's context says.
	ctx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration+2*cfg.RequestTimeout+2*time.Minute)
	defer cancel()

	if cfg.RedisURL != "" {
		if _, err := ReadRedisCounters(ctx, cfg.RedisURL); err != nil {
			return nil, err
		}
	}
	cl := newClient(cfg.URLs, cfg.Concurrency+16, cfg.RequestTimeout)
	cl.alternate = cfg.Alternate
	defer cl.close()
	res := &Result{Kind: "load", Label: cfg.Label, Round: cfg.Round, Proto: cfg.Proto, URLs: cfg.URLs, Tool: cfg.Tool, Concurrency: cfg.Concurrency,
		Alternate: cfg.Alternate, Features: cfg.Features}

	var sessions []*session
	if cfg.Proto == Legacy {
		var ierrs map[string]int64
		var sample string
		sessions, ierrs, sample = initSessions(ctx, cl, cfg.Sessions, min(cfg.Sessions, 16))
		if len(sessions) == 0 {
			return nil, fmt.Errorf("loadgen: no legacy session could be initialized (%s): %s", kindsString(ierrs), sample)
		}
		res.Sessions, res.InitErrors = len(sessions), ierrs
		res.Negotiated = sessions[0].version[0]
	} else {
		res.Negotiated = ModernVersion
	}

	k := newCall(cfg.Proto, cfg.Tool, cfg.Args)
	var (
		phase   atomic.Int32
		nextID  atomic.Int64
		liveOK  atomic.Int64 // successes of the current phase, for progress
		liveErr atomic.Int64
		wg      sync.WaitGroup
	)
	shards := make([]*shard, min(cfg.Concurrency, 16))
	for i := range shards {
		shards[i] = &shard{}
	}
	for w := 0; w < cfg.Concurrency; w++ {
		mine := workerSessions(sessions, w, cfg.Concurrency)
		sh := shards[w%len(shards)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn := &conn{next: uint64(w)}
			for i := 0; phase.Load() != phaseStop && ctx.Err() == nil; i++ {
				var s *session
				if len(mine) > 0 {
					s = mine[i%len(mine)]
				}
				t0 := time.Now()
				isSSE, cerr := cl.do(ctx, cn, k, s, nextID.Add(1))
				d := time.Since(t0)
				ph := phase.Load()
				if ph == phaseStop || (cerr != nil && cerr.Kind == "canceled") {
					break
				}
				if cerr != nil {
					liveErr.Add(1)
					if ph == phaseMeasure {
						sh.recordErr(cerr)
					}
					continue
				}
				liveOK.Add(1)
				if ph == phaseMeasure {
					sh.mu.Lock()
					sh.hist.Record(d)
					if isSSE {
						sh.sse++
					}
					sh.mu.Unlock()
				}
			}
		}()
	}

	stopProgress := startProgress(cfg, &phase, &liveOK, &liveErr)
	sleep(ctx, cfg.Warmup)

	var p0 []ProcSample
	var perr, rerr error
	var r0, r1 RedisCounters
	if cfg.RedisURL != "" {
		r0, rerr = ReadRedisCounters(ctx, cfg.RedisURL)
	}
	if len(cfg.PIDs) > 0 {
		p0, perr = sampleEach(cfg.PIDs)
	}
	l0 := selfCPU()
	liveOK.Store(0)
	liveErr.Store(0)
	t0 := time.Now()
	phase.Store(phaseMeasure)
	sleep(ctx, cfg.Duration)
	phase.Store(phaseStop)
	el := time.Since(t0)
	var p1 []ProcSample
	if len(cfg.PIDs) > 0 && perr == nil {
		p1, perr = sampleEach(cfg.PIDs)
	}
	lcpu := selfCPU() - l0
	if cfg.RedisURL != "" && rerr == nil {
		r1, rerr = ReadRedisCounters(ctx, cfg.RedisURL)
	}
	stopProgress()
	wg.Wait()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}

	var h Histogram
	for _, sh := range shards {
		h.Merge(&sh.hist)
		res.SSEResponses += sh.sse
		for kind, n := range sh.errs {
			if res.ErrorsByKind == nil {
				res.ErrorsByKind, res.ErrorSamples = map[string]int64{}, map[string]string{}
			}
			res.ErrorsByKind[kind] += n
			res.Errors += n
			if _, ok := res.ErrorSamples[kind]; !ok {
				res.ErrorSamples[kind] = sh.samples[kind]
			}
		}
	}
	res.OK = int64(h.Count())
	res.JSONResponses = res.OK - res.SSEResponses
	res.DurationS = el.Seconds()
	res.RPS = float64(res.OK) / el.Seconds()
	res.P50Ms, res.P90Ms, res.P99Ms = ms(h.Quantile(0.50)), ms(h.Quantile(0.90)), ms(h.Quantile(0.99))
	res.MaxMs, res.MeanMs = ms(h.Max()), ms(h.Mean())
	res.LoadgenCPUS = lcpu.Seconds()
	if cfg.RedisURL != "" && rerr == nil {
		res.Redis = redisStats(cfg.RedisURL, r1.Sub(r0), res.OK)
	}
	if len(cfg.PIDs) > 0 {
		if perr != nil {
			return res, fmt.Errorf("loadgen: sampling the server processes: %w", perr)
		}
		res.Server = serverStats(cfg.PIDs, cfg.PIDKinds, p0, p1, res.OK)
	}
	if rerr != nil {
		return res, fmt.Errorf("loadgen: reading the Redis counters: %w", rerr)
	}
	return res, nil
}

func redisStats(u string, d RedisCounters, ok int64) *RedisStats {
	rs := &RedisStats{URL: u, Commands: d.Total(), Calls: d.Calls, Reads: d.Reads}
	if ok > 0 {
		rs.CommandsPerReq = float64(rs.Commands) / float64(ok)
		rs.ReadsPerReq = float64(rs.Reads) / float64(ok)
	}
	return rs
}

// serverStats sums the samples of each PID taken before (p0) and after
// (p1) the window, in total and by kind.
func serverStats(pids []int, kinds []string, p0, p1 []ProcSample, ok int64) *ServerStats {
	perReq := func(cpu time.Duration) float64 {
		if ok <= 0 {
			return 0
		}
		return float64(cpu.Microseconds()) / float64(ok)
	}
	cpuOf := func(ticks int64) time.Duration {
		return time.Duration(ticks) * time.Second / time.Duration(clockTicks())
	}
	var b, a ProcSample
	for i := range pids {
		b.add(p0[i])
		a.add(p1[i])
	}
	switchesPerReq := func(n int64) float64 {
		if ok <= 0 {
			return 0
		}
		return float64(n) / float64(ok)
	}
	// Switches of each PID over the window. A thread that ended in it took
	// its count with it: a process's figure never goes below zero.
	sws := make([]int64, len(pids))
	var sw int64
	for i := range pids {
		sws[i] = max(p1[i].Switches-p0[i].Switches, 0)
		sw += sws[i]
	}
	cpu := cpuOf(a.CPUTicks - b.CPUTicks)
	st := &ServerStats{PIDs: pids, CPUS: cpu.Seconds(), CPUUsPerReq: perReq(cpu), RSSBeforeMiB: mib(b.RSS), RSSAfterMiB: mib(a.RSS), Threads: a.Threads,
		SwitchesPerReq: switchesPerReq(sw)}
	if len(kinds) == 0 {
		return st
	}
	ticks := map[string]int64{}
	rss := map[string]int64{}
	switches := map[string]int64{}
	for i, p := range pids {
		k := kinds[i]
		if k == "" {
			k = "other"
		}
		ks := st.Kind(k)
		if ks == nil {
			st.Kinds = append(st.Kinds, KindStats{Kind: k})
			ks = &st.Kinds[len(st.Kinds)-1]
		}
		ks.PIDs = append(ks.PIDs, p)
		ticks[k] += p1[i].CPUTicks - p0[i].CPUTicks
		rss[k] += p1[i].RSS
		switches[k] += sws[i]
	}
	for i := range st.Kinds {
		ks := &st.Kinds[i]
		c := cpuOf(ticks[ks.Kind])
		ks.CPUS, ks.CPUUsPerReq, ks.RSSAfterMiB = c.Seconds(), perReq(c), mib(rss[ks.Kind])
		ks.SwitchesPerReq = switchesPerReq(switches[ks.Kind])
	}
	return st
}

// workerSessions returns the sessions worker w uses in turn: every
// Concurrency-th one starting at w, or one shared session when there are
// fewer sessions than workers.
func workerSessions(all []*session, w, conc int) []*session {
	if len(all) == 0 {
		return nil
	}
	if len(all) < conc {
		return []*session{all[w%len(all)]}
	}
	var mine []*session
	for i := w; i < len(all); i += conc {
		mine = append(mine, all[i])
	}
	return mine
}

// initSessions initializes n legacy sessions with par parallel clients.
// It returns the sessions, the errors by kind and the first error message.
func initSessions(ctx context.Context, cl *client, n, par int) ([]*session, map[string]int64, string) {
	var (
		mu     sync.Mutex
		out    = make([]*session, 0, n)
		errs   map[string]int64
		sample string
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	for range max(par, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn := &conn{}
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				s, cerr := cl.initialize(ctx, cn)
				mu.Lock()
				if cerr != nil {
					if errs == nil {
						errs = map[string]int64{}
						sample = cerr.Error()
					}
					errs[cerr.Kind]++
				} else {
					out = append(out, s)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, errs, sample
}

// startProgress writes a line every interval until the returned func is
// called.
func startProgress(cfg Config, phase *atomic.Int32, ok, errs *atomic.Int64) func() {
	if cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(cfg.ProgressInterval)
		defer t.Stop()
		start := time.Now()
		var lastOK int64
		lastPhase := phaseWarmup
		last := start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				ph := phase.Load()
				n := ok.Load()
				if ph != lastPhase {
					lastOK, lastPhase = 0, ph
				}
				rate := float64(n-lastOK) / now.Sub(last).Seconds()
				lastOK, last = n, now
				what := "warm-up"
				if ph == phaseMeasure {
					what = "measuring"
				}
				fmt.Fprintf(cfg.Progress, "bench %s: %5.1fs of %s  ok=%d errors=%d  %.0f req/s\n",
					what, now.Sub(start).Seconds(), cfg.Warmup+cfg.Duration, n, errs.Load(), rate)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// kindsString formats a count by kind as "k1=n1 k2=n2", sorted by kind.
func kindsString(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// WriteText writes the human summary of r: the RESULT line, then the
// errors by kind with their first message.
func (r *Result) WriteText(w io.Writer) {
	sid := ""
	if r.Proto == Legacy {
		sid = fmt.Sprintf(" sessions=%d", r.Sessions)
	}
	fmt.Fprintf(w, "RESULT label=%s proto=%s negotiated=%s tool=%s c=%d%s dur_s=%.1f ok=%d errors=%d rps=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f json_resps=%d sse_resps=%d loadgen_cpu_s=%.2f",
		orDash(r.Label), r.Proto, r.Negotiated, r.Tool, r.Concurrency, sid, r.DurationS, r.OK, r.Errors, r.RPS,
		r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, r.JSONResponses, r.SSEResponses, r.LoadgenCPUS)
	if s := r.Server; s != nil {
		fmt.Fprintf(w, " server_cpu_s=%.2f server_cpu_us_per_req=%.0f server_rss_MiB=%.1f->%.1f server_threads=%d server_switches_per_req=%.2f",
			s.CPUS, s.CPUUsPerReq, s.RSSBeforeMiB, s.RSSAfterMiB, s.Threads, s.SwitchesPerReq)
		for _, k := range s.Kinds {
			fmt.Fprintf(w, " cpu_us_per_req[%s]=%.0f", k.Kind, k.CPUUsPerReq)
		}
		for _, k := range s.Kinds {
			fmt.Fprintf(w, " switches_per_req[%s]=%.2f", k.Kind, k.SwitchesPerReq)
		}
	}
	if rs := r.Redis; rs != nil {
		fmt.Fprintf(w, " redis_commands=%d redis_commands_per_req=%.2f redis_reads_per_req=%.2f", rs.Commands, rs.CommandsPerReq, rs.ReadsPerReq)
	}
	if r.Alternate {
		fmt.Fprint(w, " alternate=true")
	}
	fmt.Fprintln(w)
	if len(r.InitErrors) > 0 {
		fmt.Fprintf(w, "INIT-ERRORS %s\n", kindsString(r.InitErrors))
	}
	if len(r.ErrorsByKind) > 0 {
		fmt.Fprintf(w, "ERRORS %s\n", kindsString(r.ErrorsByKind))
		keys := make([]string, 0, len(r.ErrorSamples))
		for k := range r.ErrorSamples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, r.ErrorSamples[k])
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
