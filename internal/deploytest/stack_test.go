package deploytest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// stack runs services of a compose file (see up for which) as
// processes on loopback: each replica a "container" with an address of its
// own (127.0.0.x), each container port of a service one free port on all
// of its replicas' addresses, service names resolved by a dnsServer for
// nginx and rewritten to addresses elsewhere (in environment values,
// arguments and mounted configuration files).
type stack struct {
	t     *testing.T
	c     *composeFile
	tmp   string
	bins  map[string]string // a path in the image (/usr/local/bin/frontend) → the binary built here
	dns   *dnsServer
	order []string // the services run, dependencies first

	mu     sync.Mutex
	ips    map[string][]string    // service → its replicas' addresses
	ports  map[string]map[int]int // service → container port → port on every replica address
	ctrs   map[string][]*container
	nextIP int
	downed sync.Once
}

type container struct {
	svc, name, ip string
	env           []string
	proc          *testenv.Proc
}

// up starts the services in dependency order, each after its
// dependencies' healthchecks pass (or, for a one-shot service, after it
// exited 0), and waits for its own; scale gives replica counts (default
// 1). With no targets it starts the services of no profile (`docker
// compose up`); with targets, those and what they depend on, of any
// profile (`docker compose up SERVICE...`). At cleanup the stack stops as
// `docker compose down` stops it: dependents first, SIGTERM,
// stop_grace_period to exit with status 0.
func up(t *testing.T, c *composeFile, bins map[string]string, scale map[string]int, targets ...string) *stack {
	t.Helper()
	s := &stack{t: t, c: c, tmp: t.TempDir(), bins: bins, dns: startDNS(t),
		ips: map[string][]string{}, ports: map[string]map[int]int{}, ctrs: map[string][]*container{}}
	s.add(scale, targets...)
	return s
}

// add starts more services as up does (targets and what they depend on
// that is not running yet) into a running stack.
func (s *stack) add(scale map[string]int, targets ...string) {
	t := s.t
	t.Helper()
	started := map[string]bool{}
	for _, name := range s.order {
		started[name] = true
	}
	var order []string
	for _, name := range startOrder(t, s.c, targets...) {
		if !started[name] {
			order = append(order, name)
		}
	}
	for _, name := range order {
		n := max(scale[name], 1)
		if len(s.c.Services[name].Ports) > 0 {
			if n != 1 {
				t.Fatalf("%s publishes ports: it cannot have %d replicas", name, n)
			}
			s.ips[name] = []string{"127.0.0.1"} // published: the host's address
		} else {
			for range n {
				s.ips[name] = append(s.ips[name], s.newIP())
			}
		}
		s.dns.Set(name, s.ips[name])
	}
	s.order = append(s.order, order...)
	for _, name := range order {
		for i, ip := range s.ips[name] {
			s.ctrs[name] = append(s.ctrs[name], s.start(name, fmt.Sprintf("%s-%d", name, i+1), ip))
		}
		for _, ctr := range s.ctrs[name] {
			if oneShot(s.c.Services[name]) {
				s.waitCompleted(ctr, 60*time.Second)
			} else {
				s.waitHealthy(ctr, 30*time.Second)
			}
		}
	}
	// Registered after the last process started, so it runs before their
	// own cleanups (once: a later add or restart registers it again).
	t.Cleanup(s.down)
}

// oneShot reports whether svc is a task that runs once and exits
// (`restart: "no"`), which its dependents wait for with the condition
// service_completed_successfully, rather than a service that stays up.
func oneShot(svc *service) bool { return svc.Restart == "no" }

// startOrder sorts the services to start, dependencies first: targets and
// what they depend on, or with no targets the services of no profile. A
// service may depend on services of no profile or of one of its own
// profiles only (compose refuses a dependency it would not enable).
func startOrder(t *testing.T, c *composeFile, targets ...string) []string {
	t.Helper()
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string)
	visit = func(name, from string) {
		svc, ok := c.Services[name]
		switch {
		case !ok && from == "":
			t.Fatalf("no service %s", name)
		case !ok:
			t.Fatalf("%s depends on %s, which is not a service", from, name)
		case from != "" && len(svc.Profiles) > 0 && !slices.ContainsFunc(svc.Profiles, func(p string) bool {
			return slices.Contains(c.Services[from].Profiles, p)
		}):
			t.Fatalf("%s (profiles %v) depends on %s, of profiles %v", from, c.Services[from].Profiles, name, svc.Profiles)
		case state[name] == 1:
			t.Fatalf("depends_on cycle through %s", name)
		case state[name] == 2:
			return
		}
		state[name] = 1
		for _, dep := range sortedKeys(svc.DependsOn) {
			visit(dep, name)
		}
		state[name] = 2
		order = append(order, name)
	}
	if len(targets) == 0 {
		for _, name := range sortedKeys(c.Services) {
			if len(c.Services[name].Profiles) == 0 {
				targets = append(targets, name)
			}
		}
	}
	for _, name := range targets {
		visit(name, "")
	}
	return order
}

func (s *stack) newIP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextIP++
	if s.nextIP > 200 {
		s.t.Fatal("out of loopback addresses")
	}
	return fmt.Sprintf("127.0.0.%d", 20+s.nextIP)
}

// port maps container port p of svc: a published port to its host port,
// any other to a port free on every replica address of svc.
func (s *stack) port(svc string, p int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ports[svc] == nil {
		s.ports[svc] = map[int]int{}
	}
	if hp, ok := s.ports[svc][p]; ok {
		return hp
	}
	hp := 0
	for _, pub := range s.c.Services[svc].Ports {
		parts := strings.Split(pub, ":")
		if len(parts) >= 2 && parts[len(parts)-1] == strconv.Itoa(p) {
			hp, _ = strconv.Atoi(parts[len(parts)-2])
		}
	}
	if hp == 0 {
		hp = freePortOn(s.t, s.ips[svc])
	}
	s.ports[svc][p] = hp
	return hp
}

// freePortOn returns a port that was free on every one of ips a moment ago.
func freePortOn(tb testing.TB, ips []string) int {
	tb.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0"))
		if err != nil {
			tb.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return p
		}
	}
	tb.Fatalf("no port free on all of %v", ips)
	return 0
}

// mapAddrs rewrites the host:port addresses in v as seen from self: a
// service name to that service's (single) replica, or, with keepNames,
// the name kept with the port mapped (nginx resolves it through the DNS
// stand-in); 0.0.0.0 (and, with loopback, 127.0.0.1 and localhost) to
// self's own address.
func (s *stack) mapAddrs(self *container, v string, loopback, keepNames bool) string {
	hosts := []string{"0.0.0.0"}
	if loopback {
		hosts = append(hosts, "127.0.0.1", "localhost")
	}
	for name := range s.c.Services {
		hosts = append(hosts, name)
	}
	sort.Slice(hosts, func(i, j int) bool { return len(hosts[i]) > len(hosts[j]) })
	for i := range hosts {
		hosts[i] = regexp.QuoteMeta(hosts[i])
	}
	re := regexp.MustCompile(`\b(` + strings.Join(hosts, "|") + `):(\d+)\b`)
	return re.ReplaceAllStringFunc(v, func(m string) string {
		host, ps, _ := strings.Cut(m, ":")
		p, _ := strconv.Atoi(ps)
		if host == "0.0.0.0" || host == "127.0.0.1" || host == "localhost" {
			return net.JoinHostPort(self.ip, strconv.Itoa(s.port(self.svc, p)))
		}
		s.mu.Lock()
		ips := s.ips[host]
		s.mu.Unlock()
		if keepNames {
			if len(ips) == 0 {
				return m // a service this stack does not run (named in a comment, say)
			}
			return net.JoinHostPort(host, strconv.Itoa(s.port(host, p)))
		}
		if len(ips) != 1 {
			s.t.Fatalf("%s: %q names %s, which has %d running replicas: only nginx may reach a service by its name", self.name, v, host, len(ips))
		}
		return net.JoinHostPort(ips[0], strconv.Itoa(s.port(host, p)))
	})
}

// program is the binary standing in for argv0 of an image.
func (s *stack) program(argv0 string) string {
	if strings.HasPrefix(argv0, "/usr/local/bin/") {
		if b := s.bins[argv0]; b != "" {
			return b
		}
		s.t.Fatalf("no binary built for the image's %s", argv0)
	}
	fix := map[string]string{
		"nats-server":  "go install github.com/nats-io/nats-server/v2@v2.15.2",
		"redis-server": "apt-get install redis-server", "redis-cli": "apt-get install redis-tools",
		"nginx": "apt-get install nginx-light", "wget": "apt-get install wget", "curl": "apt-get install curl",
		"sh": "apt-get install dash",
	}
	if _, ok := fix[argv0]; !ok {
		s.t.Fatalf("the test does not know how to run %q", argv0)
	}
	return testenv.FindBinary(s.t, argv0, fix[argv0])
}

// mount returns the host path mounted at target in svc ("" if none): a
// file of deploy/, or a directory standing for a named volume.
func (s *stack) mount(svc, target string) string {
	for _, v := range s.c.Services[svc].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || parts[1] != target {
			continue
		}
		if strings.HasPrefix(parts[0], ".") {
			return filepath.Join(deployDir(s.t), parts[0])
		}
		dir := filepath.Join(s.tmp, "volume-"+parts[0])
		if err := os.MkdirAll(dir, 0o700); err != nil {
			s.t.Fatal(err)
		}
		return dir
	}
	return ""
}

// start runs a container of svc named name at address ip.
func (s *stack) start(svc, name, ip string) *container {
	t := s.t
	t.Helper()
	sv := s.c.Services[svc]
	ctr := &container{svc: svc, name: name, ip: ip}
	ctr.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.tmp, "GOTRACEBACK=all"}
	for _, k := range sortedKeys(sv.Environment) {
		ctr.env = append(ctr.env, k+"="+s.mapAddrs(ctr, sv.Environment[k], false, false))
	}
	argv := append(append([]string{}, sv.Entrypoint...), sv.Command...)
	if len(argv) == 0 {
		switch {
		case strings.HasPrefix(sv.Image, "nginx:"):
			argv = []string{"nginx", "-g", "daemon off;"} // the image's CMD
		default:
			t.Fatalf("%s: no command, and the test does not know image %s's", svc, sv.Image)
		}
	}
	bin, args := s.program(argv[0]), argv[1:]
	dir := filepath.Join(s.tmp, ctr.name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	switch filepath.Base(argv[0]) {
	case "nats-server":
		// A mounted configuration file is loaded from a mapped copy.
		for j, a := range args {
			if src := s.mount(svc, a); src != "" {
				args[j] = s.mappedCopy(ctr, src, filepath.Join(dir, filepath.Base(a)))
			}
		}
	case "redis-server":
		// The image's defaults: port 6379, data in /data.
		data := s.mount(svc, "/data")
		if data == "" {
			data = dir
		}
		args = append(args, "--bind", ip, "--port", strconv.Itoa(s.port(svc, 6379)), "--dir", data)
		if slices.Contains(args, "--cluster-enabled") {
			// A Redis Cluster node: its bus is on port 16379 (6379 +
			// 10000), mapped like any port. In a container a node has one
			// address, which its peers see its connections come from;
			// here they come from 127.0.0.1 whatever the node binds, so it
			// announces its own address (as a node behind NAT does).
			args = append(args, "--cluster-port", strconv.Itoa(s.port(svc, 16379)), "--cluster-announce-ip", ip)
		}
	case "nginx":
		conf := s.nginxConf(ctr, dir)
		for j := range args {
			if j > 0 && args[j-1] == "-g" {
				args[j] += " pid " + filepath.Join(dir, "nginx.pid") + ";"
			}
		}
		args = append(args, "-c", conf, "-p", dir, "-e", "stderr")
	default: // an mcpfleet binary, or sh -c with a script
		for j, a := range args {
			args[j] = s.mapAddrs(ctr, a, false, false)
		}
	}
	ctr.proc = testenv.StartEnv(t, ctr.name, bin, ctr.env, args...)
	return ctr
}

// mappedCopy writes src with its addresses mapped for ctr to dst.
func (s *stack) mappedCopy(ctr *container, src, dst string) string {
	data, err := os.ReadFile(src)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte(s.mapAddrs(ctr, string(data), false, false)), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return dst
}

// nginxConf writes the mounted nginx.conf for ctr: addresses mapped (the
// frontends keep their service name, resolved by the DNS stand-in, which
// replaces docker's 127.0.0.11), pid and temporary files in dir, and
// `user root;` when the test runs as root (as startNginx in testenv).
func (s *stack) nginxConf(ctr *container, dir string) string {
	t := s.t
	src := s.mount(ctr.svc, "/etc/nginx/nginx.conf")
	if src == "" {
		t.Fatalf("%s mounts no /etc/nginx/nginx.conf", ctr.svc)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	conf := s.mapAddrs(ctr, string(data), true, true)
	conf = regexp.MustCompile(`(?m)^(\s*listen\s+)(\d+)(\s*;)`).ReplaceAllStringFunc(conf, func(m string) string {
		sub := regexp.MustCompile(`(\d+)(\s*;)`).FindStringSubmatch(m)
		p, _ := strconv.Atoi(sub[1])
		return strings.Replace(m, sub[0], net.JoinHostPort(ctr.ip, strconv.Itoa(s.port(ctr.svc, p)))+sub[2], 1)
	})
	resolver := regexp.MustCompile(`\bresolver\s+127\.0\.0\.11\b`)
	if !resolver.MatchString(conf) {
		t.Fatalf("%s: no `resolver 127.0.0.11` (docker's DNS)", src)
	}
	conf = resolver.ReplaceAllString(conf, "resolver "+s.dns.Addr())
	var temp strings.Builder
	for _, k := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temp, "\n  %s_temp_path %s;", k, filepath.Join(dir, k))
	}
	if !strings.Contains(conf, "\nhttp {") {
		t.Fatalf("%s: no http block", src)
	}
	conf = strings.Replace(conf, "\nhttp {", "\nhttp {"+temp.String(), 1)
	if os.Geteuid() == 0 {
		conf = "user root;\n" + conf
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
