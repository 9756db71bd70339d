package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// NATSCluster is a NATS cluster of real nats-server processes on loopback:
// every node has its own client port and a route to every other node.
//
// The nodes do not advertise their client URLs to clients (no_advertise):
// a client knows only the URLs it was given, so the test decides which
// nodes a client can reach (directly, or through a relay it can cut) and
// where it can reconnect after a loss.
type NATSCluster struct {
	// Nodes holds each node's process; Restart replaces a node's entry.
	Nodes []*Proc
	// URLs holds each node's client URL (nats://127.0.0.1:port), the same
	// across restarts.
	URLs []string
	// monitor holds each node's monitoring endpoint (http://127.0.0.1:port).
	monitor []string
}

// natsClusterName is the cluster name of every NATSCluster.
const natsClusterName = "mcpfleet-test"

// StartNATSCluster starts an n-node NATS cluster (n >= 1) and waits until
// it is formed: every node has a route to each of the n-1 others. Each
// node's configuration is that of StartNATSServer (loopback, max_payload
// 8MB) plus a monitoring port and a cluster block naming every other
// node's route port; a node restarted with Restart keeps all its ports.
func StartNATSCluster(tb testing.TB, n int) *NATSCluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("testenv: a NATS cluster of %d nodes", n)
	}
	bin := FindBinary(tb, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	client, monitor, route := make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		client[i], monitor[i], route[i] = FreePort(tb), FreePort(tb), FreePort(tb)
	}
	c := &NATSCluster{}
	dir := tb.TempDir()
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", route[j]))
			}
		}
		// Bodies up to the frontend's 4 MiB cap must fit in one message.
		conf := fmt.Sprintf(`server_name: node%d
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
max_payload: 8MB
cluster {
  name: %s
  listen: 127.0.0.1:%d
  no_advertise: true
  routes: [%s]
}
`, i+1, client[i], monitor[i], natsClusterName, route[i], strings.Join(routes, ", "))
		path := filepath.Join(dir, fmt.Sprintf("node%d.conf", i+1))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			tb.Fatal(err)
		}
		p, url := startNATSConf(tb, fmt.Sprintf("nats-server node%d", i+1), bin, path, client[i])
		c.Nodes = append(c.Nodes, p)
		c.URLs = append(c.URLs, url)
		c.monitor = append(c.monitor, fmt.Sprintf("http://127.0.0.1:%d", monitor[i]))
	}
	c.WaitRouted(tb)
	return c
}

// URL returns the client URLs of every node, comma-separated: what
// --nats-url takes for a cluster.
func (c *NATSCluster) URL() string { return strings.Join(c.URLs, ",") }

// Restart starts node i again after it was stopped or killed (see
// Proc.Restart; it is stopped first if it still runs), on the same ports,
// and waits until the cluster is formed again.
func (c *NATSCluster) Restart(tb testing.TB, i int) *Proc {
	tb.Helper()
	c.Nodes[i] = c.Nodes[i].Restart(tb)
	c.WaitRouted(tb)
	return c.Nodes[i]
}

// WaitRouted waits until every running node has a route to every other
// running node (a killed node is left out); the wait is bounded (a hang
// guard, stretched by HangGuard).
func (c *NATSCluster) WaitRouted(tb testing.TB) {
	tb.Helper()
	var live []int
	for i, p := range c.Nodes {
		if !p.Exited() {
			live = append(live, i)
		}
	}
	for _, i := range live {
		testutil.PollFor(tb, HangGuard(20*time.Second), fmt.Sprintf("node%d of the NATS cluster to route to %d other nodes", i+1, len(live)-1), func() bool {
			return c.routedPeers(tb, i) == len(live)-1
		})
	}
}

// routedPeers is the number of other nodes node i has a route to (a node
// may have several route connections to one peer: route pooling).
func (c *NATSCluster) routedPeers(tb testing.TB, i int) int {
	tb.Helper()
	var routez struct {
		Routes []struct {
			RemoteID string `json:"remote_id"`
		} `json:"routes"`
	}
	if !c.monitorGet(tb, i, "/routez", &routez) {
		return -1
	}
	peers := map[string]struct{}{}
	for _, r := range routez.Routes {
		peers[r.RemoteID] = struct{}{}
	}
	return len(peers)
}

// Clients returns the names of the client connections node i has now (an
// unnamed connection is ""), from its monitoring endpoint (/connz): which
// processes are connected to that node.
func (c *NATSCluster) Clients(tb testing.TB, i int) []string {
	tb.Helper()
	var connz struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if !c.monitorGet(tb, i, "/connz", &connz) {
		tb.Fatalf("testenv: node%d of the NATS cluster does not answer /connz", i+1)
	}
	names := make([]string, 0, len(connz.Connections))
	for _, cn := range connz.Connections {
		names = append(names, cn.Name)
	}
	return names
}

// monitorGet decodes the JSON answer of node i's monitoring endpoint path
// into v; false when the node does not answer (not up yet).
func (c *NATSCluster) monitorGet(tb testing.TB, i int, path string, v any) bool {
	tb.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(c.monitor[i] + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatalf("testenv: node%d %s: %v", i+1, path, err)
	}
	return true
}
