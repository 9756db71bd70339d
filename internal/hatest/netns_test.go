//go:build ha

package hatest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/netns"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// TestTopology checks internal/netns itself: hosts reach each other and
// the root namespace reaches them; Cut silences a host both ways and Heal
// brings it back; Netem delays and drops what it should, and only that;
// a crashed run's leftovers are removed; everything is gone at cleanup.
func TestTopology(t *testing.T) {
	// A leftover of a "crashed" run: a namespace named after a pid that
	// does not run, with a process inside.
	dead := 0
	for pid := 30000; pid > 300; pid-- {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			dead = pid
			break
		}
	}
	leftover := fmt.Sprintf("mfha%dx1-zz", dead)
	if out, err := exec.Command("ip", "netns", "add", leftover).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", leftover, err, out)
	}
	sleeper := exec.Command("ip", "netns", "exec", leftover, "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	sleeperDone := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(sleeperDone) }()
	testutil.PollFor(t, 10*time.Second, "the leftover's process to be inside it", func() bool {
		out, _ := exec.Command("ip", "netns", "pids", leftover).Output()
		return strings.TrimSpace(string(out)) != ""
	})

	var names []string
	t.Run("topology", func(t *testing.T) {
		topo := netns.New(t)
		if _, err := os.Stat("/run/netns/" + leftover); !os.IsNotExist(err) {
			t.Errorf("the leftover namespace %s is still there", leftover)
		}
		select {
		case <-sleeperDone:
		case <-time.After(10 * time.Second):
			t.Errorf("the process inside the leftover namespace still runs")
			_ = sleeper.Process.Kill()
		}
		a, b := topo.Host("a"), topo.Host("b")
		for _, h := range []*netns.Host{a, b} {
			names = append(names, h.NS)
		}
		natsBin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
		redisBin := testenv.FindBinary(t, "redis-server", "apt-get install redis-server")
		a.Start("nats-server", natsBin, "-a", a.Addr, "-p", "4222")
		b.Start("redis-server", redisBin, "--bind", b.Addr, "--port", "6379", "--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", t.TempDir())
		natsAddr := a.Addr + ":4222"
		testenv.WaitTCP(t, natsAddr, 10*time.Second)
		testenv.WaitTCP(t, b.Addr+":6379", 10*time.Second)

		// dial times one TCP connection from the root namespace to a.
		dial := func() (time.Duration, error) {
			start := time.Now()
			c, err := net.DialTimeout("tcp", natsAddr, time.Second)
			if err == nil {
				c.Close()
			}
			return time.Since(start), err
		}
		// ping runs redis-cli PING on a against b, bounded.
		ping := func() (time.Duration, error) {
			start := time.Now()
			out, err := a.Command("timeout", "3", "redis-cli", "-h", b.Addr, "-p", "6379", "ping").CombinedOutput()
			if err == nil && !strings.Contains(string(out), "PONG") {
				err = fmt.Errorf("redis-cli: %s", out)
			}
			return time.Since(start), err
		}
		if _, err := ping(); err != nil {
			t.Fatalf("a does not reach b: %v", err)
		}
		// Loopback is up in the hosts.
		for _, h := range []*netns.Host{a, b} {
			if out, err := h.Command("ip", "link", "show", "lo").CombinedOutput(); err != nil || !strings.Contains(string(out), ",UP") {
				t.Errorf("%s's loopback: %s (%v)", h.Name, out, err)
			}
		}
		before, err := dial()
		if err != nil {
			t.Fatalf("the root namespace does not reach a: %v", err)
		}

		topo.Cut(a)
		if _, err := dial(); err == nil {
			t.Errorf("a was reachable from the root namespace while cut")
		}
		if _, err := ping(); err == nil {
			t.Errorf("a reached b while cut")
		}
		topo.Heal(a)
		var healed time.Duration
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := dial(); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a was still unreachable 10s after the heal")
			}
		}
		healed = 10*time.Second - time.Until(deadline)

		// Delay on a's link with b only: the root namespace is not slowed.
		topo.Netem(a, "delay 100ms", b)
		rootRTT, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		slow, err := ping()
		if err != nil {
			t.Fatalf("a to b with a delay of 100ms: %v", err)
		}
		st := topo.ClearNetem(a)
		if rootRTT > 90*time.Millisecond {
			t.Errorf("a connection from the root namespace took %s with a delay on a's link with b only", rootRTT)
		}
		// A connection, then a command: two round trips at least, 200ms each.
		if slow < 400*time.Millisecond {
			t.Errorf("redis-cli PING from a to b took %s with 100ms each way, want 400ms at least", slow)
		}
		fast, err := ping()
		if err != nil || fast > 300*time.Millisecond {
			t.Errorf("after ClearNetem: PING took %s (%v)", fast, err)
		}

		// Loss on everything of a's: about 30% of its packets dropped.
		topo.Netem(a, "loss 30%")
		var lossy []time.Duration
		for range 15 {
			d, err := dial()
			if err == nil {
				lossy = append(lossy, d)
			}
		}
		st2 := topo.ClearNetem(a)
		ratio := float64(st2.Dropped) / float64(max(st2.Packets, 1))
		if st2.Packets < 20 || ratio < 0.1 || ratio > 0.55 {
			t.Errorf("loss 30%%: %d of %d packets dropped (%.0f%%)", st2.Dropped, st2.Packets, 100*ratio)
		}
		t.Logf("netns: dial from the root namespace %s; a back %s after Heal; delay 100ms (a<->b only): root dial %s, PING a->b %s (%d packets), after clear %s; loss 30%%: %d of %d packets dropped, %d of 15 dials within 1s",
			before.Round(time.Microsecond), healed.Round(time.Millisecond), rootRTT.Round(time.Microsecond), slow.Round(time.Millisecond), st.Packets, fast.Round(time.Millisecond), st2.Dropped, st2.Packets, len(lossy))
	})
	// After the subtest's cleanup: nothing of it is left.
	for _, ns := range names {
		if _, err := os.Stat("/run/netns/" + ns); !os.IsNotExist(err) {
			t.Errorf("namespace %s is still there after cleanup", ns)
		}
	}
	out, _ := exec.Command("ip", "-o", "link", "show").CombinedOutput()
	if strings.Contains(string(out), fmt.Sprintf("mfha%dx", os.Getpid())) {
		t.Errorf("a link of this test is still there after cleanup:\n%s", out)
	}
}
