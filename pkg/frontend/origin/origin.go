// Package origin guards the MCP endpoint against DNS rebinding and lets
// browsers of allowed origins call it: the Host and Origin allow lists,
// and CORS (the headers of every answer to an allowed origin, and the
// preflight).
package origin

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// List validates Host and Origin headers against DNS rebinding.
type List struct {
	anyHost, anyOrigin bool
	hosts              map[string]bool // lower-case host or host:port
	origins            map[string]bool // lower-case scheme://host[:port]
}

// New returns the list of hosts (host or host:port, "*" for any; empty:
// loopback names on any port) and origins (scheme://host[:port], "*" for
// any; empty: loopback origins), or an error naming a malformed entry.
func New(hosts, origins []string) (*List, error) {
	a := &List{hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "*" {
			a.anyHost = true
			continue
		}
		if h == "" || strings.ContainsAny(h, "/ ") {
			return nil, fmt.Errorf("allowed host %q is not a host or host:port", h)
		}
		a.hosts[h] = true
	}
	for _, o := range origins {
		o = strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
		if o == "*" {
			a.anyOrigin = true
			continue
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("allowed origin %q is not scheme://host[:port]", o)
		}
		a.origins[o] = true
	}
	return a, nil
}

func isLoopbackName(host string) bool {
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return false
}

func splitHost(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// HostOK reports whether a Host header value is allowed.
func (a *List) HostOK(host string) bool {
	if a.anyHost {
		return true
	}
	host = strings.ToLower(host)
	if len(a.hosts) == 0 {
		return isLoopbackName(splitHost(host))
	}
	return a.hosts[host] || a.hosts[splitHost(host)]
}

// OriginOK reports whether an Origin header value is allowed (an absent
// Origin is).
func (a *List) OriginOK(origin string) bool {
	if origin == "" || a.anyOrigin {
		return true
	}
	origin = strings.ToLower(strings.TrimRight(origin, "/"))
	if len(a.origins) == 0 {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return false
		}
		return isLoopbackName(splitHost(u.Host))
	}
	return a.origins[origin]
}
