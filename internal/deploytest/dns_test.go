package deploytest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer stands in for docker's embedded DNS (127.0.0.11): it answers
// A queries for the service names with the addresses of their running
// replicas, NXDOMAIN for other names, and nothing for other types.
type dnsServer struct {
	conn  *net.UDPConn
	mu    sync.Mutex
	names map[string][]netip.Addr // "frontend." → replicas
}

func startDNS(tb testing.TB) *dnsServer {
	tb.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	d := &dnsServer{conn: conn, names: map[string][]netip.Addr{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.serve()
	}()
	tb.Cleanup(func() {
		conn.Close()
		<-done
	})
	return d
}

// Addr is the server's address, host:port.
func (d *dnsServer) Addr() string { return d.conn.LocalAddr().String() }

// Set makes name resolve to addrs (none: NXDOMAIN).
func (d *dnsServer) Set(name string, addrs []string) {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[strings.ToLower(name)+"."] = as
}

// Resolver is a Go resolver asking this server only (Prometheus's
// dns_sd_configs do what it does).
func (d *dnsServer) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.Addr())
	}}
}

func (d *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if out := d.answer(buf[:n]); out != nil {
			_, _ = d.conn.WriteToUDP(out, from)
		}
	}
}

func (d *dnsServer) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	d.mu.Lock()
	addrs, known := d.names[strings.ToLower(q.Name.String())]
	d.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known || len(addrs) == 0 {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA {
		for _, a := range addrs {
			res := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 1}
			if b.AResource(res, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
