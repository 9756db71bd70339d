package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/loadgen"
)

const benchUsage = `usage: mcpfleet bench [flags]                 load: tools/call at -c concurrency for -d
       mcpfleet bench -scale KIND [flags]     idle sessions / listen streams / fan-out
       mcpfleet bench report [flags] FILE...  table, scale figures and targets from -jsonl files

Load (like redis-benchmark or nats bench), loopback URLs only:
  mcpfleet bench -url http://127.0.0.1:8080/mcp -proto legacy -c 64 -d 10s
  mcpfleet bench -url http://127.0.0.1:8081/mcp,http://127.0.0.1:8082/mcp -proto modern -pid 1234,1235
  mcpfleet bench -url U1,U2 -alternate -pid frontend:11,frontend:12,worker:13,nats-server:14,redis-server:15 -redis redis://127.0.0.1:6379
Scale (-scale sessions | listens | fanout, -n items):
  mcpfleet bench -scale sessions -n 1000 -url U -pid P -redis redis://127.0.0.1:6379
  mcpfleet bench -scale listens -n 10000 -url U -pid P     (raise ulimit -n first)
  mcpfleet bench -scale fanout -n 10000 -events 20 -url U1,U2

Flags:
`

// runBench is `mcpfleet bench`; it returns the exit code: 0 when the run
// completed (request errors are reported, not fatal), 1 when it could not
// run, 2 on bad usage.
func runBench(args []string) int {
	if len(args) > 0 && args[0] == "report" {
		return runBenchReport(args[1:])
	}
	fs := flag.NewFlagSet("mcpfleet bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	var (
		urls     = fs.String("url", "http://127.0.0.1:8080/mcp", "MCP endpoint(s), comma-separated; requests go round-robin over them (loopback only)")
		proto    = fs.String("proto", "legacy", "legacy (2025-11-25: initialize + Mcp-Session-Id) or modern (2026-07-28: per-request _meta)")
		conc     = fs.Int("c", 16, "concurrent clients, each with one request in flight")
		dur      = fs.Duration("d", 10*time.Second, "measured duration (warm-up plus duration at most "+loadgen.MaxDuration.String()+")")
		warm     = fs.Duration("warmup", time.Second, "warm-up before the measured window, not counted")
		sessions = fs.Int("sessions", 0, "legacy sessions to initialize, shared round-robin by the clients (0: one per client)")
		tool     = fs.String("tool", "echo", "tool to call")
		toolArgs = fs.String("args", `{"text":"hello"}`, "tool arguments (a JSON object)")
		pids     = fs.String("pid", "", "server PIDs, comma-separated: CPU per request, RSS and threads summed over them (Linux /proc); an entry KIND:PID (frontend:123) also gives the CPU per request of each kind")
		alt      = fs.Bool("alternate", false, "send each request of a session (of a client, when modern) to the next URL of -url after the one its last request went to: with two URLs, always the other frontend (no sticky routing)")
		features = fs.String("features", "", "what the server runs with, recorded in the result and noted by the report (e.g. \"durable delivery on, tracing off\")")
		asJSON   = fs.Bool("json", false, "print one JSON object instead of the summary")
		jsonl    = fs.String("jsonl", "", "also append the JSON result as one line to `FILE` (read by mcpfleet bench report)")
		quiet    = fs.Bool("quiet", false, "no progress line on stderr")
		label    = fs.String("label", "", "name of this configuration in the results")
		round    = fs.Int("round", 0, "number of this run among those of the same -label, -proto and -c (1, 2, ...): the report pairs round k with round k of mcp-go (0: runs are numbered in the order recorded)")
		timeout  = fs.Duration("timeout", loadgen.DefaultRequestTimeout, "timeout of every HTTP exchange")
		scale    = fs.String("scale", "", "instead of load: sessions (idle legacy sessions), listens (idle listen streams) or fanout (resources/updated to many listen streams)")
		n        = fs.Int("n", 0, "scale: number of sessions or streams (default 1000 sessions, 10000 streams)")
		events   = fs.Int("events", 20, "fanout: touch_resource events")
		uri      = fs.String("uri", loadgen.DefaultFanOutURI, "listens/fanout: resource URI the streams subscribe to")
		metrics  = fs.String("metrics", "", "scale: Prometheus URLs whose go_goroutines are compared: the processes' admin listeners, e.g. http://127.0.0.1:9090/metrics (default: none, goroutines not measured)")
		redisURL = fs.String("redis", "", "Redis URL (redis://127.0.0.1:6379, loopback only): load: INFO commandstats and stats before and after the window, Redis commands per request; sessions: used_memory compared")
		settle   = fs.Duration("settle", 2*time.Second, "scale: pause before the 'after' sample")
		warmSess = fs.Int("warmup-sessions", 0, "sessions: idle sessions opened before the 'before' sample (0: as many as -n; -1: none)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "mcpfleet bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	pidList, pidKinds, err := loadgen.ParsePIDs(*pids)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfleet bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var res interface{ WriteText(io.Writer) }
	if *scale != "" {
		sc := loadgen.ScaleConfig{URLs: loadgen.SplitList(*urls), N: *n, PIDs: pidList, MetricsURLs: loadgen.SplitList(*metrics),
			RedisURL: *redisURL, Settle: *settle, WarmupSessions: *warmSess, RequestTimeout: *timeout, URI: *uri, Events: *events, Label: *label}
		switch *scale {
		case "sessions":
			var r *loadgen.SessionsResult
			if r, err = loadgen.MeasureIdleSessions(ctx, sc); r != nil {
				res = r
			}
		case "listens":
			var r *loadgen.ListensResult
			if r, err = loadgen.MeasureIdleListens(ctx, sc); r != nil {
				res = r
			}
		case "fanout":
			var r *loadgen.FanOutResult
			if r, err = loadgen.MeasureFanOut(ctx, sc); r != nil {
				res = r
			}
		default:
			fmt.Fprintf(os.Stderr, "mcpfleet bench: unknown -scale %q (want sessions, listens or fanout)\n", *scale)
			return 2
		}
	} else {
		cfg := loadgen.Config{URLs: loadgen.SplitList(*urls), Proto: loadgen.Proto(*proto), Concurrency: *conc, Duration: *dur,
			Warmup: *warm, Sessions: *sessions, Tool: *tool, Args: json.RawMessage(*toolArgs), PIDs: pidList, PIDKinds: pidKinds,
			RedisURL: *redisURL, Alternate: *alt, Features: *features, RequestTimeout: *timeout, Label: *label, Round: *round}
		if !*quiet {
			cfg.Progress = os.Stderr
		}
		var r *loadgen.Result
		r, err = loadgen.Run(ctx, cfg)
		if r != nil {
			res = r
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfleet bench:", err)
		if res == nil {
			return 1
		}
	}
	if res == nil {
		return 1
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		fmt.Fprintln(os.Stderr, "mcpfleet bench:", jerr)
		return 1
	}
	if *asJSON {
		fmt.Println(string(b))
	} else {
		res.WriteText(os.Stdout)
	}
	if *jsonl != "" {
		f, ferr := os.OpenFile(*jsonl, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if ferr == nil {
			_, ferr = f.Write(append(b, '\n'))
			if cerr := f.Close(); ferr == nil {
				ferr = cerr
			}
		}
		if ferr != nil {
			fmt.Fprintln(os.Stderr, "mcpfleet bench:", ferr)
			return 1
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// runBenchReport is `mcpfleet bench report FILE...`: the load table with
// ratios, the scale figures and the targets, from -jsonl files.
func runBenchReport(args []string) int {
	fs := flag.NewFlagSet("mcpfleet bench report", flag.ContinueOnError)
	var o loadgen.ReportOptions
	fs.StringVar(&o.Ref, "ref", "mcp-go", "label the ratios are relative to")
	fs.StringVar(&o.AllInOne, "aio", "mcpfleet-aio", "label of mcpfleet's all-in-one runs")
	fs.StringVar(&o.Cluster, "cluster", "mcpfleet-cluster", "label of mcpfleet's cluster runs (one frontend, one worker)")
	fs.StringVar(&o.Cluster2, "cluster2", "mcpfleet-cluster-2fe2w", "label of the runs on 2 frontends and 2 workers, requests alternating between the frontends")
	fs.IntVar(&o.Concurrency, "c", 64, "concurrency the targets and the chart are evaluated at")
	targets := fs.Bool("targets", true, "print the targets with PASS/FAIL")
	svg := fs.String("svg", "", "also write the chart (req/s and CPU µs/request of each configuration, legacy and modern) as SVG to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mcpfleet bench report [flags] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	all := &loadgen.Records{}
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpfleet bench report:", err)
			return 1
		}
		recs, err := loadgen.ReadRecords(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcpfleet bench report: %s: %v\n", path, err)
			return 1
		}
		all.Loads = append(all.Loads, recs.Loads...)
		all.Sessions = append(all.Sessions, recs.Sessions...)
		all.Listens = append(all.Listens, recs.Listens...)
		all.FanOuts = append(all.FanOuts, recs.FanOuts...)
	}
	w := os.Stdout
	if len(all.Loads) > 0 {
		fmt.Fprintln(w, "== throughput and latency (echo tool; CPU = server processes' CPU time / successful requests)")
		all.WriteTable(w, o)
		all.WriteNotes(w)
		fmt.Fprintln(w)
	}
	if all.HasBreakdown() {
		fmt.Fprintln(w, "== CPU µs per request by process, and Redis per request (cluster runs)")
		all.WriteBreakdown(w, o)
		fmt.Fprintln(w)
	}
	if len(all.Sessions)+len(all.Listens)+len(all.FanOuts) > 0 {
		fmt.Fprintln(w, "== scale")
		all.WriteScale(w)
		fmt.Fprintln(w)
	}
	if *targets {
		fmt.Fprintln(w, "== targets")
		all.WriteTargets(w, o)
	}
	if *svg != "" && len(all.Loads) == 0 {
		fmt.Fprintf(w, "\nchart: not written, no load results\n")
	} else if *svg != "" {
		if err := writeChart(*svg, all, o); err != nil {
			fmt.Fprintln(os.Stderr, "mcpfleet bench report:", err)
			return 1
		}
		fmt.Fprintf(w, "\nchart: %s\n", *svg)
	}
	return 0
}

func writeChart(path string, recs *loadgen.Records, o loadgen.ReportOptions) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := recs.WriteSVG(f, o); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
