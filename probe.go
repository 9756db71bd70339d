package mcpfleet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// runProbe is the probe command: it GETs /readyz ("ready", the default)
// or /healthz ("live") on the admin listener and exits 0 on 200, 1
// otherwise (2 on a usage error). It is the healthcheck of an image with
// no shell or HTTP client (distroless): the address comes from
// --admin-listen or, as in the container's environment, from
// MCPFLEET_ADMIN_LISTEN; a wildcard host (0.0.0.0, ::, none) is probed on
// loopback.
func (a *App) runProbe(ctx context.Context, args []string) int {
	stdout, stderr := a.out()
	name := a.name() + " probe"
	check, path := "ready", "/readyz"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		check, args = args[0], args[1:]
	}
	switch check {
	case "ready":
	case "live":
		path = "/healthz"
	default:
		fmt.Fprintf(stderr, "%s: want ready or live, not %q\n", name, check)
		return 2
	}
	var addr string
	var timeout time.Duration
	f := newFlags(name)
	f.in(groupProcess)
	f.str(&addr, "admin-listen", "", "ADDR", "the admin address of the process to probe (its --admin-listen; usually from MCPFLEET_ADMIN_LISTEN)")
	f.dur(&timeout, "timeout", 2*time.Second, "how long the probe may take")
	if err := f.parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s [ready|live] [flags]\n\nExits 0 when the process's %s answers 200: a healthcheck for images without a shell.\n", name, path)
		f.usage(stdout)
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if adminAddr(addr) == "" {
		fmt.Fprintf(stderr, "%s: no admin address: set --admin-listen or %s, as the probed process has (the probed process needs one: it serves /readyz and /healthz only there)\n", name, EnvName("admin-listen"))
		return 2
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --admin-listen %q: %v\n", name, addr, err)
		return 2
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + path
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", name, url, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "%s: %s: HTTP %d %s\n", name, url, resp.StatusCode, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "%s", body)
	return 0
}
