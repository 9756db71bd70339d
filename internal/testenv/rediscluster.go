package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// RedisCluster is a Redis Cluster of six real redis-server processes on
// loopback: three masters with one replica each, made by
// `redis-cli --cluster create --cluster-replicas 1`. Every node runs in a
// directory of its own with append-only persistence (appendfsync
// everysec: what a node SIGKILLed may lose is its last second of writes,
// as in production) and a cluster-node-timeout of 2 s, so a master killed
// is failed over by its replica within a few seconds.
type RedisCluster struct {
	// Nodes holds each node's process; Restart replaces an entry.
	Nodes []*Proc
	// Addrs holds each node's address (127.0.0.1:port), the same across
	// restarts.
	Addrs []string
	nodes []*redisNode
	admin *redisAdmin
	// replicaOf[m] is the replica of master m when KillMaster killed it.
	replicaOf map[int]int
}

// redisClusterNodeTimeout is the cluster-node-timeout of a RedisCluster,
// in milliseconds: a node silent this long is failing.
const redisClusterNodeTimeout = 2000

// StartRedisCluster starts a RedisCluster and waits until it is healthy
// (see WaitHealthy). The redis-server and redis-cli binaries are those
// of scripts/deps.sh (the Debian packages); the test fails naming the
// fix when one is missing.
func StartRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	cli := FindBinary(tb, "redis-cli", "apt-get install redis-tools")
	c := &RedisCluster{admin: newRedisAdmin(tb), replicaOf: map[int]int{}}
	for i := range 6 {
		port, bus := FreePort(tb), FreePort(tb)
		n := newRedisNode(tb, fmt.Sprintf("redis-server cluster node%d", i+1), port, fmt.Sprintf(`save ""
appendonly yes
appendfsync everysec
repl-diskless-sync-delay 0
cluster-enabled yes
cluster-port %d
cluster-config-file nodes.conf
cluster-node-timeout %d
`, bus, redisClusterNodeTimeout))
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.addr)
		c.Nodes = append(c.Nodes, n.start(tb))
	}
	guard := HangGuard(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, c.Addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: redis-cli --cluster create (bounded by %v): %v\n%s", guard, err, out)
	}
	c.WaitHealthy(tb)
	return c
}

// URL returns the cluster's URL in the form of redis.ParseClusterURL
// (what --redis-url takes with --redis-mode cluster): every node as a
// seed.
func (c *RedisCluster) URL() string {
	return "redis://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
}

// clusterNode is a line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	flags            []string
	slots            bool // serves slots
}

func (n clusterNode) is(flag string) bool { return slices.Contains(n.flags, flag) }

// view returns node i's CLUSTER NODES by node index (nil if it does not
// answer), with mine the line flagged myself.
func (c *RedisCluster) view(i int) map[int]clusterNode {
	text := c.admin.text(c.Addrs[i], "cluster", "nodes")
	if text == "" {
		return nil
	}
	v := map[int]clusterNode{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := clusterNode{id: f[0], addr: strings.SplitN(f[1], "@", 2)[0], flags: strings.Split(f[2], ","), master: f[3], slots: len(f) > 8}
		if j := slices.Index(c.Addrs, n.addr); j >= 0 {
			v[j] = n
		}
	}
	return v
}

func (c *RedisCluster) live() []int {
	var live []int
	for i, p := range c.Nodes {
		if !p.Exited() {
			live = append(live, i)
		}
	}
	return live
}

// unhealthy returns why the live nodes are not a healthy cluster, or "":
// each says cluster_state:ok with all 16384 slots served, all agree on
// which live node is a master (with slots) and which a replica, no live
// node is a master without slots, and each live replica's link to its
// master is up. The nodes in dead lists (killed) must be flagged fail by
// every live node and serve no slot.
func (c *RedisCluster) unhealthy(dead ...int) string {
	live := c.live()
	views := map[int]map[int]clusterNode{}
	for _, i := range live {
		info := c.admin.text(c.Addrs[i], "cluster", "info")
		if infoField(info, "cluster_state") != "ok" || infoField(info, "cluster_slots_ok") != "16384" {
			return fmt.Sprintf("node%d: cluster_state %q, slots ok %q", i+1, infoField(info, "cluster_state"), infoField(info, "cluster_slots_ok"))
		}
		if views[i] = c.view(i); views[i] == nil {
			return fmt.Sprintf("node%d: no CLUSTER NODES", i+1)
		}
	}
	for _, i := range live {
		self := views[i][i]
		if self.is("master") != self.slots {
			return fmt.Sprintf("node%d: master %v but serving slots %v", i+1, self.is("master"), self.slots)
		}
		for _, j := range live {
			if o := views[j][i]; o.is("master") != self.is("master") || o.master != self.master || o.is("fail") {
				return fmt.Sprintf("node%d sees node%d as %v (master %s), which says %v (master %s)", j+1, i+1, o.flags, o.master, self.flags, self.master)
			}
		}
		if !self.is("master") {
			if s := infoField(c.admin.text(c.Addrs[i], "info", "replication"), "master_link_status"); s != "up" {
				return fmt.Sprintf("node%d: replica with master_link_status %q", i+1, s)
			}
		}
	}
	for _, d := range dead {
		for _, j := range live {
			if o := views[j][d]; !o.is("fail") || o.slots {
				return fmt.Sprintf("node%d sees the dead node%d as %v, serving slots %v", j+1, d+1, o.flags, o.slots)
			}
		}
	}
	return ""
}

// WaitHealthy waits until the running nodes are a healthy cluster: each
// says cluster_state:ok and serves its part of 16384 slots, they agree
// on which is a master and which a replica, and every replica is in sync
// with its master. The wait is bounded (a hang guard, stretched by
// HangGuard).
func (c *RedisCluster) WaitHealthy(tb testing.TB) {
	tb.Helper()
	c.wait(tb, "the Redis Cluster to be healthy")
}

func (c *RedisCluster) wait(tb testing.TB, what string, dead ...int) {
	tb.Helper()
	var why string
	if !testutil.WaitFor(HangGuard(60*time.Second), func() bool { why = c.unhealthy(dead...); return why == "" }) {
		tb.Fatalf("testenv: timed out after %v waiting for %s: %s", HangGuard(60*time.Second), what, why)
	}
}

// Masters returns the indices (into Nodes) of the masters, as the first
// running node sees them, in index order.
func (c *RedisCluster) Masters(tb testing.TB) []int {
	tb.Helper()
	live := c.live()
	if len(live) == 0 {
		tb.Fatal("testenv: no node of the Redis Cluster runs")
	}
	var masters []int
	for i, n := range c.view(live[0]) {
		if n.is("master") && n.slots && !n.is("fail") {
			masters = append(masters, i)
		}
	}
	slices.Sort(masters)
	return masters
}

// KillMaster SIGKILLs the i-th of Masters (0, 1 or 2) and returns its
// index into Nodes. Its replica takes over (see WaitFailover).
func (c *RedisCluster) KillMaster(tb testing.TB, i int) int {
	tb.Helper()
	masters := c.Masters(tb)
	if i < 0 || i >= len(masters) {
		tb.Fatalf("testenv: KillMaster(%d) of %d masters", i, len(masters))
	}
	m := masters[i]
	v := c.view(m)
	for j, n := range v {
		if n.master == v[m].id {
			c.replicaOf[m] = j
		}
	}
	c.Nodes[m].Kill()
	return m
}

// WaitFailover waits until the cluster is healthy again without node
// (killed by KillMaster): every running node flags it as failed, its
// replica serves its slots, every slot is served. It returns the index of
// the promoted replica. The wait is bounded (a hang guard).
func (c *RedisCluster) WaitFailover(tb testing.TB, node int) int {
	tb.Helper()
	c.wait(tb, fmt.Sprintf("the failover of node%d", node+1), node)
	r, ok := c.replicaOf[node]
	if !ok {
		tb.Fatalf("testenv: node%d was not killed by KillMaster", node+1)
	}
	return r
}

// Restart starts node i again after it was killed or stopped, on the
// same ports with the same data and cluster configuration (a former
// master comes back as a replica of the one that replaced it), and waits
// until the cluster is healthy with it.
func (c *RedisCluster) Restart(tb testing.TB, i int) *Proc {
	tb.Helper()
	c.Nodes[i] = c.Nodes[i].Restart(tb)
	c.WaitHealthy(tb)
	return c.Nodes[i]
}
