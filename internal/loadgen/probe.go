package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Goroutines reads the go_goroutines gauge from a Prometheus /metrics URL
// (loopback only).
func Goroutines(ctx context.Context, metricsURL string) (int64, error) {
	v, err := ScrapeGauge(ctx, metricsURL, "go_goroutines")
	return int64(v), err
}

// ScrapeGauge reads one unlabelled metric from a Prometheus text
// exposition (loopback only).
func ScrapeGauge(ctx context.Context, metricsURL, name string) (float64, error) {
	if err := checkURL(metricsURL); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return 0, err
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("loadgen: scraping %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("loadgen: scraping %s: HTTP %d", metricsURL, resp.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("loadgen: %s has no %s metric", metricsURL, name)
}

// RedisUsedMemory returns used_memory from `INFO memory` of the Redis at
// redisURL (redis://host:port[/db], loopback only), speaking RESP
// directly.
func RedisUsedMemory(ctx context.Context, redisURL string) (int64, error) {
	info, err := redisInfo(ctx, redisURL, "memory")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("loadgen: INFO memory of %s has no used_memory", redisURL)
}

// redisAddr checks a Redis URL (redis://host:port[/db], loopback only)
// and returns its address and URL.
func redisAddr(redisURL string) (string, *url.URL, error) {
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "tcp") {
		return "", nil, fmt.Errorf("loadgen: bad Redis URL %q (want redis://127.0.0.1:6379)", redisURL)
	}
	if !isLoopback(u.Hostname()) {
		return "", nil, fmt.Errorf("loadgen: refusing Redis URL %q: only loopback hosts", redisURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	return host, u, nil
}

func redisInfo(ctx context.Context, redisURL, section string) (string, error) {
	out, _, err := redisInfos(ctx, redisURL, section)
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// redisInfos sends INFO for each section in turn on one connection
// (after AUTH when the URL has a password, which it reports).
func redisInfos(ctx context.Context, redisURL string, sections ...string) ([]string, bool, error) {
	host, u, err := redisAddr(redisURL)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, false, fmt.Errorf("loadgen: connecting to Redis: %w", err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	br := bufio.NewReader(c)
	pw, auth := u.User.Password()
	if auth {
		user := u.User.Username()
		cmd := []string{"AUTH", pw}
		if user != "" {
			cmd = []string{"AUTH", user, pw}
		}
		if _, err := redisCmd(c, br, cmd...); err != nil {
			return nil, auth, err
		}
	}
	var out []string
	for _, sec := range sections {
		v, err := redisCmd(c, br, "INFO", sec)
		if err != nil {
			return nil, auth, err
		}
		out = append(out, v)
	}
	return out, auth, nil
}

// RedisCounters are a Redis server's cumulative counters at one moment.
type RedisCounters struct {
	// Calls counts the commands run, by command (INFO commandstats, the
	// "cmdstat_" prefix dropped, lower case; commands run by scripts
	// included).
	Calls map[string]int64
	// Processed is total_commands_processed (INFO stats).
	Processed int64
	// Reads is total_reads_processed (INFO stats): the read events of
	// client connections, about one per round trip (a pipeline's commands
	// may share one).
	Reads int64
	// auth is set when the sample sent AUTH first.
	auth bool
}

// ReadRedisCounters reads INFO stats, then INFO commandstats, on one
// connection to the Redis at redisURL (loopback only).
func ReadRedisCounters(ctx context.Context, redisURL string) (RedisCounters, error) {
	out, auth, err := redisInfos(ctx, redisURL, "stats", "commandstats")
	if err != nil {
		return RedisCounters{}, err
	}
	rc := RedisCounters{Calls: map[string]int64{}, auth: auth}
	for _, line := range strings.Split(out[0], "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "total_commands_processed":
			rc.Processed, _ = strconv.ParseInt(v, 10, 64)
		case "total_reads_processed":
			rc.Reads, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	for _, line := range strings.Split(out[1], "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				rc.Calls[strings.ToLower(strings.TrimPrefix(name, "cmdstat_"))] = n
			}
		}
	}
	return rc, nil
}

// Sub returns what Redis did between the sample before (taken with
// ReadRedisCounters) and a (a later one), without the samples' own
// commands: the INFO commands (and AUTH) between the two, and their read
// events (the connection's close among them).
func (a RedisCounters) Sub(before RedisCounters) RedisCounters {
	d := RedisCounters{Calls: map[string]int64{}}
	for k, v := range a.Calls {
		if n := v - before.Calls[k]; n != 0 {
			d.Calls[k] = n
		}
	}
	// Each sample is INFO stats then INFO commandstats, and Redis counts
	// a command once it has run: the window holds the second INFO of the
	// sample before and the first of this one (commandstats and
	// total_commands_processed alike), this one's AUTH, and the reads of
	// the second INFO before, of that connection's close, of this AUTH
	// and of this first INFO.
	own := map[string]int64{"info": 2}
	reads := int64(3)
	if a.auth {
		own["auth"] = 1
		reads++
	}
	var ownTotal int64
	for k, n := range own {
		ownTotal += n
		if d.Calls[k] -= n; d.Calls[k] <= 0 {
			delete(d.Calls, k)
		}
	}
	d.Processed = max(a.Processed-before.Processed-ownTotal, 0)
	d.Reads = max(a.Reads-before.Reads-reads, 0)
	return d
}

// Total is the sum of Calls.
func (a RedisCounters) Total() int64 {
	var n int64
	for _, v := range a.Calls {
		n += v
	}
	return n
}

// redisCmd sends one command and reads a simple or bulk string reply.
func redisCmd(c net.Conn, br *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", fmt.Errorf("loadgen: Redis: %s", line[1:])
	case strings.HasPrefix(line, "$"), strings.HasPrefix(line, "="):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 || n > 16<<20 {
			return "", fmt.Errorf("loadgen: Redis: bad reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("loadgen: Redis: unexpected reply %q", line)
}
