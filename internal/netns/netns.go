//go:build linux

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// namePrefix starts the name of every namespace and link a Topology
// creates: namePrefix, the test process's pid, "x", a counter.
const namePrefix = "mfha"

// leftoverRE matches the names of namespaces and links of a Topology and
// captures the pid of the test process that made them.
var leftoverRE = regexp.MustCompile(`^` + namePrefix + `([0-9]+)x[0-9]+`)

// topologies counts the Topologies of this test process (part of their
// names).
var topologies atomic.Int32

// Topology is a set of hosts on one bridge, and the root namespace's
// address on it (RootAddr), from which the test process reaches the
// hosts.
type Topology struct {
	tb testing.TB
	// name starts every name the topology creates.
	name string
	// subnet is the first three octets of the /24 ("10.231.N").
	subnet string
	// bridgeNS is the namespace holding the bridge (br0) and the hosts'
	// bridge ports.
	bridgeNS string
	// rootLink is the root namespace's end of its veth pair.
	rootLink string
	// RootAddr is the root namespace's address on the bridge: the source
	// address of the test process's connections to the hosts.
	RootAddr string
	ip       string

	mu    sync.Mutex
	hosts []*Host
}

// Host is one network namespace on the bridge.
type Host struct {
	// Name is the host's name in the test ("nats1", "fe1", ...).
	Name string
	// Addr is the host's IPv4 address (on eth0).
	Addr string
	// NS is the namespace's name (`ip netns exec NS ...`).
	NS string
	// port is the host's bridge port (a veth in the bridge namespace).
	port string
	topo *Topology

	mu     sync.Mutex
	impair *impairment
}

// hostNameRE is what a host's name may be.
var hostNameRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// New builds an empty topology: the bridge, and the root namespace's
// address on it. Everything is removed at the test's cleanup (register
// New before starting processes in its hosts, so that they are stopped
// first).
func New(tb testing.TB) *Topology {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatalf("netns: network namespaces need root (euid %d)", os.Geteuid())
	}
	tp := &Topology{tb: tb, ip: testenv.FindBinary(tb, "ip", "apt-get install iproute2")}
	tp.removeLeftovers()
	tp.name = fmt.Sprintf("%s%dx%d", namePrefix, os.Getpid(), topologies.Add(1))
	tp.subnet = tp.pickSubnet()
	tp.bridgeNS = tp.name + "-br"
	tp.rootLink = tp.name
	tp.RootAddr = tp.subnet + ".254"
	tb.Cleanup(tp.remove)
	tp.mustIP("netns", "add", tp.bridgeNS)
	tp.mustIP("-n", tp.bridgeNS, "link", "set", "lo", "up")
	tp.mustIP("-n", tp.bridgeNS, "link", "add", "br0", "type", "bridge")
	tp.mustIP("-n", tp.bridgeNS, "link", "set", "br0", "up")
	tp.mustIP("link", "add", tp.rootLink, "type", "veth", "peer", "name", "root", "netns", tp.bridgeNS)
	tp.mustIP("-n", tp.bridgeNS, "link", "set", "root", "master", "br0", "up")
	tp.mustIP("addr", "add", tp.RootAddr+"/24", "dev", tp.rootLink)
	tp.mustIP("link", "set", tp.rootLink, "up")
	return tp
}

// Subnet returns the topology's /24 ("10.231.N.0/24").
func (tp *Topology) Subnet() string { return tp.subnet + ".0/24" }

// pickSubnet returns the first three octets of a 10.231.N.0/24 that no
// address or route of the root namespace touches.
func (tp *Topology) pickSubnet() string {
	used := tp.mustIP("-4", "addr") + tp.mustIP("-4", "route", "show", "table", "all")
	start := os.Getpid() % 200
	for i := range 250 {
		n := (start+i)%250 + 1
		s := fmt.Sprintf("10.231.%d", n)
		if !strings.Contains(used, s+".") {
			return s
		}
	}
	tp.tb.Fatalf("netns: every 10.231.N.0/24 is in use in the root namespace:\n%s", used)
	return ""
}

// Host adds a host named name (lowercase letters and digits) and returns
// it; its address is the next one of the subnet (.1, .2, ...).
func (tp *Topology) Host(name string) *Host {
	tp.tb.Helper()
	if !hostNameRE.MatchString(name) {
		tp.tb.Fatalf("netns: host name %q: want lowercase letters and digits, starting with a letter", name)
	}
	tp.mu.Lock()
	for _, h := range tp.hosts {
		if h.Name == name {
			tp.mu.Unlock()
			tp.tb.Fatalf("netns: a host %q already exists", name)
		}
	}
	k := len(tp.hosts) + 1
	if k > 250 {
		tp.mu.Unlock()
		tp.tb.Fatalf("netns: at most 250 hosts")
	}
	h := &Host{Name: name, Addr: fmt.Sprintf("%s.%d", tp.subnet, k), NS: tp.name + "-" + name, port: fmt.Sprintf("p%d", k), topo: tp}
	tp.hosts = append(tp.hosts, h)
	tp.mu.Unlock()
	tp.mustIP("netns", "add", h.NS)
	tp.mustIP("-n", h.NS, "link", "set", "lo", "up")
	tp.mustIP("-n", tp.bridgeNS, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	tp.mustIP("-n", tp.bridgeNS, "link", "set", h.port, "master", "br0", "up")
	tp.mustIP("-n", h.NS, "addr", "add", h.Addr+"/24", "dev", "eth0")
	tp.mustIP("-n", h.NS, "link", "set", "eth0", "up")
	return h
}

// Hosts returns the hosts, in the order they were added.
func (tp *Topology) Hosts() []*Host {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]*Host(nil), tp.hosts...)
}

// Start runs bin with args inside the host (`ip netns exec`), as
// testenv.Start does: its output is captured, it is stopped at cleanup
// and its end is checked. `ip netns exec` execs bin in place, so the
// process (its pid, its signals) is bin itself.
func (h *Host) Start(name, bin string, args ...string) *testenv.Proc {
	h.topo.tb.Helper()
	return h.StartEnv(name, bin, append(os.Environ(), "GOTRACEBACK=all"), args...)
}

// StartEnv is Start with the process's whole environment (see
// testenv.StartEnv).
func (h *Host) StartEnv(name, bin string, env []string, args ...string) *testenv.Proc {
	h.topo.tb.Helper()
	return testenv.StartEnv(h.topo.tb, name, h.topo.ip, env, append([]string{"netns", "exec", h.NS, bin}, args...)...)
}

// Command returns a command that runs bin with args inside the host
// (not started; for short commands whose output the test reads).
func (h *Host) Command(bin string, args ...string) *exec.Cmd {
	return exec.Command(h.topo.ip, append([]string{"netns", "exec", h.NS, bin}, args...)...)
}

// Cut takes the host's bridge port down: from then on nothing the host
// sends reaches anyone and nothing reaches it, without an error on either
// side (a silent partition: its own link goes without carrier, its
// connections hang until a timeout or a ping notices).
func (tp *Topology) Cut(h *Host) {
	tp.tb.Helper()
	tp.mustIP("-n", tp.bridgeNS, "link", "set", h.port, "down")
}

// Heal brings the host's bridge port back up (the link forwards at once:
// the bridge runs no spanning tree).
func (tp *Topology) Heal(h *Host) {
	tp.tb.Helper()
	tp.mustIP("-n", tp.bridgeNS, "link", "set", h.port, "up")
}

// ip runs ip with args and returns its output and error.
func (tp *Topology) runIP(args ...string) (string, error) {
	out, err := exec.Command(tp.ip, args...).CombinedOutput()
	return string(out), err
}

// mustIP runs ip with args and returns its output; a failure fails the
// test with the command and its output.
func (tp *Topology) mustIP(args ...string) string {
	tp.tb.Helper()
	out, err := tp.runIP(args...)
	if err != nil {
		tp.tb.Fatalf("netns: ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// remove deletes everything the topology created: it runs at cleanup,
// after the processes started in its hosts were stopped, and reports each
// failure without stopping (so the rest is still removed).
func (tp *Topology) remove() {
	tp.mu.Lock()
	hosts := tp.hosts
	tp.mu.Unlock()
	for _, h := range hosts {
		h.stopImpairment(false)
	}
	var failed []string
	try := func(args ...string) {
		if out, err := tp.runIP(args...); err != nil {
			failed = append(failed, fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out)))
		}
	}
	if tp.linkExists(tp.rootLink) {
		try("link", "del", tp.rootLink)
	}
	names := append([]string{tp.bridgeNS}, func() (ns []string) {
		for _, h := range hosts {
			ns = append(ns, h.NS)
		}
		return ns
	}()...)
	for _, ns := range names {
		if !nsExists(ns) {
			continue
		}
		tp.killIn(ns)
		try("netns", "del", ns)
	}
	for _, ns := range names {
		if nsExists(ns) {
			failed = append(failed, "namespace "+ns+" is still there")
		}
	}
	if tp.linkExists(tp.rootLink) {
		failed = append(failed, "link "+tp.rootLink+" is still there")
	}
	if len(failed) > 0 {
		tp.tb.Errorf("netns: removing the topology %s:\n%s", tp.name, strings.Join(failed, "\n"))
	}
}

// killIn SIGKILLs the processes still inside namespace ns (none, once
// the test's processes were stopped; a crashed test's otherwise).
func (tp *Topology) killIn(ns string) {
	out, err := tp.runIP("netns", "pids", ns)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (tp *Topology) linkExists(name string) bool {
	_, err := tp.runIP("link", "show", "dev", name)
	return err == nil
}

func nsExists(ns string) bool {
	_, err := os.Stat("/run/netns/" + ns)
	return err == nil
}

// removeLeftovers deletes the namespaces and links a test process that
// no longer runs left behind (it crashed, or was killed at its timeout),
// and the processes still inside those namespaces.
func (tp *Topology) removeLeftovers() {
	tp.tb.Helper()
	dead := func(name string) bool {
		m := leftoverRE.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() {
			return false
		}
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return os.IsNotExist(err)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if dead(e.Name()) {
				tp.killIn(e.Name())
				if out, err := tp.runIP("netns", "del", e.Name()); err != nil {
					tp.tb.Fatalf("netns: removing the leftover namespace %s: %v\n%s", e.Name(), err, out)
				}
				tp.tb.Logf("netns: removed the leftover namespace %s", e.Name())
			}
		}
	}
	out := tp.mustIP("-o", "link", "show")
	for _, line := range strings.Split(out, "\n") {
		// "5: mfha123x1@if3: <...": the name is the second field, up to '@'.
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if dead(name) {
			if out, err := tp.runIP("link", "del", name); err != nil && tp.linkExists(name) {
				tp.tb.Fatalf("netns: removing the leftover link %s: %v\n%s", name, err, out)
			}
			tp.tb.Logf("netns: removed the leftover link %s", name)
		}
	}
}
