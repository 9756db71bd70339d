package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Protocol versions spoken by the load generator.
const (
	LegacyVersion = "2025-11-25"
	ModernVersion = "2026-07-28"
)

// Proto names a wire era.
type Proto string

// The two eras.
const (
	Legacy Proto = "legacy"
	Modern Proto = "modern"
)

// Bounds and defaults.
const (
	// MaxDuration caps warm-up plus measured time of one Run.
	MaxDuration = 10 * time.Minute
	// DefaultRequestTimeout bounds every HTTP exchange unless
	// Config.RequestTimeout says otherwise.
	DefaultRequestTimeout = 10 * time.Second
	// MaxConcurrency caps Config.Concurrency.
	MaxConcurrency = 4096
	// maxBody caps what is read of one reply.
	maxBody = 16 << 20
)

// ClientName is the clientInfo name the load generator announces.
const ClientName = "mcpfleet-bench"

// Config describes one load run.
type Config struct {
	// URLs are the MCP endpoints (loopback only); requests go round-robin
	// over them, one URL per request, so a legacy session initialized on
	// one frontend is then used on all.
	URLs []string
	// Alternate sends each request of a session (of a worker, when modern)
	// to the URL after the one its previous request went to: with two
	// frontends, every request lands on the other frontend than the last,
	// as behind a load balancer without sticky routing. Without it the
	// round-robin is over all requests, so a session's consecutive
	// requests may land on the same URL.
	Alternate bool
	// Proto is Legacy (default) or Modern.
	Proto Proto
	// Concurrency is the number of workers, each with one request in
	// flight at a time; zero means 1.
	Concurrency int
	// Duration is the measured time; zero means 10s.
	Duration time.Duration
	// Warmup runs before the measured window and is not counted.
	Warmup time.Duration
	// Sessions is the number of legacy sessions to initialize (zero: one
	// per worker). Workers share them round-robin. Ignored when modern.
	Sessions int
	// Tool and Args (a JSON object) are what every request calls; Tool
	// defaults to "echo" and Args to {"text":"hello"}.
	Tool string
	Args json.RawMessage
	// PIDs are server processes whose CPU time, RSS and threads are summed
	// over the measured window (Linux /proc).
	PIDs []int
	// PIDKinds, when set, has one entry per PID: the kind of process
	// ("frontend", "worker", "nats-server", ...); the result then has the
	// CPU per request of each kind beside the total. Empty entries are
	// counted as "other".
	PIDKinds []string
	// RedisURL, when set, is a Redis (loopback only) whose INFO
	// commandstats and stats are read before and after the measured
	// window: Redis commands per request.
	RedisURL string
	// Features is free text recorded with the result: what the server
	// was running with (e.g. "durable delivery on, tracing off").
	Features string
	// Progress, when set, receives one line per ProgressInterval (default
	// 1s) while the run goes on.
	Progress         io.Writer
	ProgressInterval time.Duration
	// RequestTimeout bounds each HTTP exchange; zero means 10s.
	RequestTimeout time.Duration
	// Label names the run in results.
	Label string
	// Round numbers the run among those of the same label, protocol and
	// concurrency (1, 2, ...), recorded in the result: the report pairs
	// round k of a configuration with round k of its reference. Zero: not
	// numbered (the report then numbers a configuration's runs in the
	// order they were recorded).
	Round int
}

// withDefaults validates c and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if err := CheckURLs(c.URLs); err != nil {
		return c, err
	}
	switch c.Proto {
	case "":
		c.Proto = Legacy
	case Legacy, Modern:
	default:
		return c, fmt.Errorf("loadgen: unknown protocol %q (want legacy or modern)", c.Proto)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Concurrency > MaxConcurrency {
		return c, fmt.Errorf("loadgen: concurrency %d is above the cap of %d", c.Concurrency, MaxConcurrency)
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Duration < 0 || c.Warmup < 0 {
		return c, errors.New("loadgen: negative duration")
	}
	if c.Duration+c.Warmup > MaxDuration {
		return c, fmt.Errorf("loadgen: warm-up plus duration (%s) is above the cap of %s", c.Duration+c.Warmup, MaxDuration)
	}
	if c.Sessions < 0 {
		return c, errors.New("loadgen: negative number of sessions")
	}
	if c.Sessions == 0 {
		c.Sessions = c.Concurrency
	}
	if c.Tool == "" {
		c.Tool = "echo"
	}
	if len(c.Args) == 0 {
		c.Args = json.RawMessage(`{"text":"hello"}`)
	}
	args, err := compactObject(c.Args)
	if err != nil {
		return c, fmt.Errorf("loadgen: tool arguments: %w", err)
	}
	c.Args = args
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	for _, p := range c.PIDs {
		if p <= 0 {
			return c, fmt.Errorf("loadgen: bad PID %d", p)
		}
	}
	if len(c.PIDKinds) > 0 && len(c.PIDKinds) != len(c.PIDs) {
		return c, fmt.Errorf("loadgen: %d PID kinds for %d PIDs", len(c.PIDKinds), len(c.PIDs))
	}
	if c.RedisURL != "" {
		if _, _, err := redisAddr(c.RedisURL); err != nil {
			return c, err
		}
	}
	return c, nil
}

// ParsePIDs reads a -pid flag: comma-separated PIDs, each optionally
// prefixed with its kind, as in "frontend:101,frontend:102,worker:103,
// nats-server:104,redis-server:105". It returns the PIDs and, when any
// entry has a kind, the kind of each ("" for those without).
func ParsePIDs(s string) ([]int, []string, error) {
	var pids []int
	var kinds []string
	anyKind := false
	for _, f := range SplitList(s) {
		kind, num, ok := strings.Cut(f, ":")
		if !ok {
			kind, num = "", f
		}
		if ok && !validKind(kind) {
			return nil, nil, fmt.Errorf("bad -pid entry %q: the kind must be letters, digits, '-' or '_'", f)
		}
		p, err := strconv.Atoi(num)
		if err != nil || p <= 0 {
			return nil, nil, fmt.Errorf("bad -pid entry %q", f)
		}
		anyKind = anyKind || kind != ""
		pids = append(pids, p)
		kinds = append(kinds, kind)
	}
	if !anyKind {
		kinds = nil
	}
	return pids, kinds, nil
}

func validKind(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// compactObject checks that raw is one JSON object and returns it compacted.
func compactObject(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	return b.Bytes(), nil
}

// CheckURLs accepts only non-empty lists of http:// URLs whose host is a
// loopback address (127.0.0.0/8, ::1) or "localhost": the load generator
// never sends traffic off this machine.
func CheckURLs(urls []string) error {
	if len(urls) == 0 {
		return errors.New("loadgen: no URL given")
	}
	for _, raw := range urls {
		if err := checkURL(raw); err != nil {
			return err
		}
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("loadgen: bad URL %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("loadgen: URL %q: only http:// URLs are supported", raw)
	}
	host := u.Hostname()
	if !isLoopback(host) {
		return fmt.Errorf("loadgen: refusing URL %q: only loopback hosts (127.0.0.1, ::1, localhost) may be benchmarked", raw)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
