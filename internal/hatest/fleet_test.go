//go:build ha

package hatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/netns"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The ports every host uses (each host has its own address).
const (
	natsPort    = 4222
	routePort   = 6222
	monitorPort = 8222
	redisPort   = 6379
	httpPort    = 8080
	adminPort   = 9090
)

// fleet is the cluster of the package doc, one process per host.
type fleet struct {
	t        *testing.T
	topo     *netns.Topology
	nats     []*netns.Host
	natsP    []*testenv.Proc
	natsURL  string // every node's client URL, comma-separated
	redis    *netns.Host
	redisP   *testenv.Proc
	redisURL string
	fe       []*netns.Host
	feP      []*testenv.Proc
	feURL    []string // http://addr:8080/mcp
	wk       []*netns.Host
	wkP      []*testenv.Proc
}

// fleetOptions shape startFleet.
type fleetOptions struct {
	// natsConf is added to each nats-server's configuration (top level),
	// after the ping settings of deploy/nats.conf.
	natsConf string
	// bus is added to the frontends' and workers' command lines (the NATS
	// connection's options).
	bus []string
}

var workerServingRE = regexp.MustCompile(`msg="worker serving"`)

// startFleet builds the topology and starts every process, each on its
// host, and waits until the NATS cluster is formed and every frontend and
// worker serves.
func startFleet(t *testing.T, o fleetOptions) *fleet {
	t.Helper()
	bins := testenv.Binaries(t) // before the topology: a build failure leaves nothing behind
	natsBin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	redisBin := testenv.FindBinary(t, "redis-server", "apt-get install redis-server")
	f := &fleet{t: t, topo: netns.New(t)}
	if os.Getenv("HATEST_VERBOSE") != "" {
		// Runs once the processes were stopped: their whole logs.
		t.Cleanup(func() {
			for _, p := range append(append(append([]*testenv.Proc{}, f.natsP...), f.feP...), f.wkP...) {
				t.Logf("--- %s:\n%s", p.Name, p.Log())
			}
		})
	}
	for i := range 3 {
		f.nats = append(f.nats, f.topo.Host(fmt.Sprintf("nats%d", i+1)))
	}
	f.redis = f.topo.Host("redis")
	for i := range 2 {
		f.fe = append(f.fe, f.topo.Host(fmt.Sprintf("fe%d", i+1)))
	}
	for i := range 2 {
		f.wk = append(f.wk, f.topo.Host(fmt.Sprintf("w%d", i+1)))
	}

	dir := t.TempDir()
	natsConf := deployPings(t) + o.natsConf
	var urls []string
	for _, h := range f.nats {
		urls = append(urls, fmt.Sprintf("nats://%s:%d", h.Addr, natsPort))
	}
	f.natsURL = strings.Join(urls, ",")
	for i, h := range f.nats {
		var routes []string
		for j, o := range f.nats {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://%s:%d", o.Addr, routePort))
			}
		}
		// As testenv.StartNATSCluster, on the host's address.
		conf := fmt.Sprintf(`server_name: %s
listen: %s:%d
http: %s:%d
max_payload: 8MB
%s
cluster {
  name: mcpfleet-ha
  listen: %s:%d
  no_advertise: true
  routes: [%s]
}
`, h.Name, h.Addr, natsPort, h.Addr, monitorPort, natsConf, h.Addr, routePort, strings.Join(routes, ", "))
		path := filepath.Join(dir, h.Name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		f.natsP = append(f.natsP, h.Start("nats-server "+h.Name, natsBin, "-c", path))
	}
	redisDir := filepath.Join(dir, "redis")
	if err := os.Mkdir(redisDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f.redisP = f.redis.Start("redis-server", redisBin, "--bind", f.redis.Addr, "--port", fmt.Sprint(redisPort), "--dir", redisDir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no")
	f.redisURL = fmt.Sprintf("redis://%s:%d/0", f.redis.Addr, redisPort)
	for _, h := range f.nats {
		testenv.WaitTCP(t, fmt.Sprintf("%s:%d", h.Addr, natsPort), 10*time.Second)
	}
	testenv.WaitTCP(t, fmt.Sprintf("%s:%d", f.redis.Addr, redisPort), 10*time.Second)
	f.waitRouted()

	for i, h := range f.wk {
		args := append([]string{"--nats-url", f.natsURL, "--log-format", "text", "--state-key", testenv.StateKey, "--fixture", "conformance",
			"--id", h.Name, "--admin-listen", fmt.Sprintf("%s:%d", h.Addr, adminPort)}, o.bus...)
		p := h.Start(fmt.Sprintf("worker %s", h.Name), filepath.Join(bins, "worker"), args...)
		p.WaitLog(t, workerServingRE, 20*time.Second)
		f.wkP = append(f.wkP, p)
		_ = i
	}
	for _, h := range f.fe {
		addr := fmt.Sprintf("%s:%d", h.Addr, httpPort)
		// --keepalive 1s: a GET stream that goes silent for a few seconds
		// is dead, and the clients here take it so (see follower).
		args := append([]string{"--listen", addr, "--nats-url", f.natsURL, "--redis-url", f.redisURL, "--log-format", "text",
			"--drain-delay", "0", "--allowed-hosts", addr, "--keepalive", "1s", "--id", h.Name,
			"--admin-listen", fmt.Sprintf("%s:%d", h.Addr, adminPort)}, o.bus...)
		p := h.Start(fmt.Sprintf("frontend %s", h.Name), filepath.Join(bins, "frontend"), args...)
		url := p.WaitLog(t, testenv.ServingRE, 20*time.Second)
		f.feP = append(f.feP, p)
		f.feURL = append(f.feURL, url)
	}
	// Every frontend sees both workers (pool announcements) before the
	// test begins: a tools/list through each lists echo.
	for i, u := range f.feURL {
		cl := testenv.NewClient(t, u)
		cl.Initialize(nil)
		testutil.PollFor(t, testenv.HangGuard(10*time.Second), fmt.Sprintf("fe%d to route tools", i+1), func() bool {
			return strings.Contains(string(cl.Call("l", "tools/list", nil)), `"echo"`)
		})
	}
	return f
}

// deployPings returns the ping settings of deploy/nats.conf (the lines
// that set ping_interval and ping_max), so the cluster here finds dead
// clients and routes as the shipped configuration does.
func deployPings(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "deploy", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "ping_interval:") || strings.HasPrefix(line, "ping_max:") {
			out = append(out, line)
		}
	}
	if len(out) != 2 {
		t.Fatalf("deploy/nats.conf: want its ping_interval and ping_max lines, found %q", out)
	}
	return strings.Join(out, "\n") + "\n"
}

// monitorGet decodes nats node i's monitoring endpoint path into v; false
// when the node does not answer.
func (f *fleet) monitorGet(i int, path string, v any) bool {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://%s:%d%s", f.nats[i].Addr, monitorPort, path))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(resp.Body).Decode(v) == nil
}

// routedPeers is the number of other nodes node i has a route to (-1 when
// it does not answer).
func (f *fleet) routedPeers(i int) int {
	var routez struct {
		Routes []struct {
			RemoteID string `json:"remote_id"`
		} `json:"routes"`
	}
	if !f.monitorGet(i, "/routez", &routez) {
		return -1
	}
	peers := map[string]struct{}{}
	for _, r := range routez.Routes {
		peers[r.RemoteID] = struct{}{}
	}
	return len(peers)
}

// waitRouted waits until every node has a route to the two others.
func (f *fleet) waitRouted() {
	f.t.Helper()
	for i := range f.nats {
		testutil.PollFor(f.t, testenv.HangGuard(20*time.Second), fmt.Sprintf("%s to route to the other nodes", f.nats[i].Name), func() bool {
			return f.routedPeers(i) == len(f.nats)-1
		})
	}
}

// clientsOf returns the hosts (by name) with a client connection to NATS
// node i, from its /connz (a connection's IP is its host's address).
func (f *fleet) clientsOf(i int) []string {
	var connz struct {
		Connections []struct {
			IP string `json:"ip"`
		} `json:"connections"`
	}
	if !f.monitorGet(i, "/connz", &connz) {
		return nil
	}
	var names []string
	for _, c := range connz.Connections {
		for _, h := range f.topo.Hosts() {
			if h.Addr == c.IP {
				names = append(names, h.Name)
			}
		}
	}
	return names
}

// nodeOf returns the index of the NATS node host name is connected to
// (-1: none).
func (f *fleet) nodeOf(name string) int {
	for i := range f.nats {
		for _, n := range f.clientsOf(i) {
			if n == name {
				return i
			}
		}
	}
	return -1
}

// placement describes which node each frontend and worker is on.
func (f *fleet) placement() string {
	var parts []string
	for i, h := range f.nats {
		parts = append(parts, fmt.Sprintf("%s: %s", h.Name, strings.Join(f.clientsOf(i), " ")))
	}
	return strings.Join(parts, "; ")
}

// metric reads an unlabelled sample from the /metrics at base (http://host:port);
// -1 when it cannot be read.
func metric(base, name string) float64 {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.WriteString(string(buf[:n]))
		if err != nil {
			break
		}
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+-]+)$`)
	m := re.FindStringSubmatch(b.String())
	if m == nil {
		return -1
	}
	var v float64
	fmt.Sscan(m[1], &v)
	return v
}

// feAdmin is frontend i's admin base URL (its metrics).
func (f *fleet) feAdmin(i int) string { return fmt.Sprintf("http://%s:%d", f.fe[i].Addr, adminPort) }

// wkAdmin is worker i's admin base URL.
func (f *fleet) wkAdmin(i int) string { return fmt.Sprintf("http://%s:%d", f.wk[i].Addr, adminPort) }
