package frontend

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// allowList validates Host and Origin headers against DNS rebinding.
type allowList struct {
	anyHost, anyOrigin bool
	hosts              map[string]bool // lower-case host or host:port
	origins            map[string]bool // lower-case scheme://host[:port]
}

func newAllowList(hosts, origins []string) (*allowList, error) {
	a := &allowList{hosts: map[string]bool{}, origins: map[string]bool{}}
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

func (a *allowList) hostOK(host string) bool {
	if a.anyHost {
		return true
	}
	host = strings.ToLower(host)
	if len(a.hosts) == 0 {
		return isLoopbackName(splitHost(host))
	}
	return a.hosts[host] || a.hosts[splitHost(host)]
}

func (a *allowList) originOK(origin string) bool {
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

// accepts reports whether the Accept header lists the media type (exactly,
// ignoring parameters and case; q=0 excludes it).
func accepts(r *http.Request, mediaType string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok && (q == "0" || q == "0.0" || q == "0.00" || q == "0.000") {
				continue
			}
			if strings.EqualFold(mt, mediaType) {
				return true
			}
		}
	}
	return false
}

func isJSONContentType(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && strings.EqualFold(mt, "application/json")
}
