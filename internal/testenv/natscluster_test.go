package testenv

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/nats-io/nats.go"
)

// A message published on one node reaches a subscriber on another; with
// a node killed the two others still route to each other; the node
// restarted on its ports rejoins, and a client of the list of all nodes
// reaches the cluster.
func TestNATSCluster(t *testing.T) {
	c := StartNATSCluster(t, 3)
	if len(c.Nodes) != 3 || len(c.URLs) != 3 || c.URL() != strings.Join(c.URLs, ",") {
		t.Fatalf("nodes %d, URLs %q, URL() %q", len(c.Nodes), c.URLs, c.URL())
	}
	conn := func(url, name string) *nats.Conn {
		t.Helper()
		nc, err := nats.Connect(url, nats.Name(name), nats.Timeout(HangGuard(5*time.Second)))
		if err != nil {
			t.Fatalf("connecting to %s: %v", url, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	sub, err := conn(c.URLs[2], "subscriber").SubscribeSync("natscluster.test")
	if err != nil {
		t.Fatal(err)
	}
	// routed checks that what pub publishes reaches the subscriber on node
	// 3: the subscription's interest reaches the other nodes
	// asynchronously, so the publisher publishes until one message gets
	// through, then the rest of what arrived is drained.
	routed := func(what string, pub *nats.Conn) {
		t.Helper()
		testutil.PollFor(t, HangGuard(10*time.Second), what, func() bool {
			if err := pub.Publish("natscluster.test", []byte(what)); err != nil {
				t.Fatalf("publishing on %s: %v", pub.ConnectedUrl(), err)
			}
			_ = pub.Flush()
			m, err := sub.NextMsg(20 * time.Millisecond)
			return err == nil && string(m.Data) == what
		})
		for {
			if _, err := sub.NextMsg(50 * time.Millisecond); err != nil {
				return
			}
		}
	}
	routed("node 1 to node 3", conn(c.URLs[0], "publisher 1"))
	if got := c.Clients(t, 2); len(got) != 1 || got[0] != "subscriber" {
		t.Errorf("node 3's clients: %q, want the subscriber only", got)
	}

	// Node 2 killed: nodes 1 and 3 still route to each other.
	c.Nodes[1].Kill()
	c.WaitRouted(t)
	routed("node 1 to node 3 without node 2", conn(c.URLs[0], "publisher 1b"))

	// Restarted, node 2 rejoins on the same ports.
	url2 := c.URLs[1]
	c.Restart(t, 1)
	if c.URLs[1] != url2 || c.Nodes[1].Exited() {
		t.Fatalf("restarted node 2: URL %s (was %s), exited %v", c.URLs[1], url2, c.Nodes[1].Exited())
	}
	routed("node 2 (restarted) to node 3", conn(url2, "publisher 2"))

	// A client given every node's URL reaches the cluster through one.
	routed("a client of the whole list", conn(c.URL(), "publisher list"))
}
