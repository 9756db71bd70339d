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

func redisInfo(ctx context.Context, redisURL, section string) (string, error) {
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "tcp") {
		return "", fmt.Errorf("loadgen: bad Redis URL %q (want redis://127.0.0.1:6379)", redisURL)
	}
	if !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("loadgen: refusing Redis URL %q: only loopback hosts", redisURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return "", fmt.Errorf("loadgen: connecting to Redis: %w", err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	br := bufio.NewReader(c)
	if pw, ok := u.User.Password(); ok {
		user := u.User.Username()
		cmd := []string{"AUTH", pw}
		if user != "" {
			cmd = []string{"AUTH", user, pw}
		}
		if _, err := redisCmd(c, br, cmd...); err != nil {
			return "", err
		}
	}
	return redisCmd(c, br, "INFO", section)
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
