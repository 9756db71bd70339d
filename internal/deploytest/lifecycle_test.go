package deploytest

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// health runs ctr's healthcheck as docker does (the CMD form, in the
// container's environment), mapped like the service, and returns its
// exit status and output.
func (s *stack) health(ctr *container) (int, string) {
	t := s.t
	hc := s.c.Services[ctr.svc].Healthcheck
	if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
		t.Fatalf("%s: want a healthcheck test of the CMD form, have %v", ctr.svc, hc)
	}
	argv := hc.Test[1:]
	var args []string
	if filepath.Base(argv[0]) == "redis-cli" {
		args = []string{"-h", ctr.ip, "-p", strconv.Itoa(s.port(ctr.svc, 6379))} // its default, 127.0.0.1:6379
	}
	for _, a := range argv[1:] {
		args = append(args, s.mapAddrs(ctr, a, true, false))
	}
	timeout, err := time.ParseDuration(hc.Timeout)
	if err != nil {
		t.Fatalf("%s: healthcheck timeout %q: %v", ctr.svc, hc.Timeout, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.program(argv[0]), args...)
	cmd.Env = ctr.env
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s: healthcheck %v: %v", ctr.name, argv, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// waitHealthy polls ctr's healthcheck until it exits 0.
func (s *stack) waitHealthy(ctr *container, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, out := s.health(ctr)
		if code == 0 {
			return
		}
		if ctr.proc.Exited() {
			s.t.Fatalf("%s exited (status %d) before its healthcheck passed:\n%s", ctr.name, ctr.proc.ExitCode(), ctr.proc.Log())
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: healthcheck still fails after %s (status %d): %s", ctr.name, within, code, out)
		}
		time.Sleep(100 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}

// waitCompleted waits for ctr, a one-shot service, to exit, which it must
// do with status 0 (compose's service_completed_successfully).
func (s *stack) waitCompleted(ctr *container, within time.Duration) {
	s.t.Helper()
	select {
	case <-ctr.proc.Done():
	case <-time.After(within):
		s.t.Fatalf("%s, a one-shot service, still runs after %s:\n%s", ctr.name, within, ctr.proc.Log())
	}
	if code := ctr.proc.ExitCode(); code != 0 {
		s.t.Fatalf("%s, a one-shot service, exited with status %d:\n%s", ctr.name, code, ctr.proc.Log())
	}
}

// restart replaces replica i of svc, killed, by a new container at a new
// address (as docker restarts a crashed container of a `restart:` policy,
// which may get another address), updates the DNS, waits for its
// healthcheck and returns it.
func (s *stack) restart(svc string, i int) *container {
	s.t.Helper()
	old := s.ctrs[svc][i]
	old.proc.Kill()
	ip := s.newIP()
	s.mu.Lock()
	for _, p := range s.ports[svc] {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		if err != nil {
			s.mu.Unlock()
			s.t.Fatalf("port %d is taken on %s: %v", p, ip, err)
		}
		ln.Close()
	}
	s.ips[svc] = append([]string(nil), s.ips[svc]...)
	s.ips[svc][i] = ip
	s.mu.Unlock()
	ctr := s.start(svc, old.name+"-restarted", ip)
	s.ctrs[svc][i] = ctr
	s.t.Cleanup(s.down) // before the new process's own cleanup
	s.waitHealthy(ctr, 30*time.Second)
	s.dns.Set(svc, s.ips[svc])
	return ctr
}

// running fails the test for every container that has exited, one-shot
// services aside.
func (s *stack) running() {
	s.t.Helper()
	for _, name := range s.order {
		if oneShot(s.c.Services[name]) {
			continue
		}
		for _, ctr := range s.ctrs[name] {
			if ctr.proc.Exited() {
				s.t.Errorf("%s exited (status %d):\n%s", ctr.name, ctr.proc.ExitCode(), ctr.proc.Log())
			}
		}
	}
}

// down stops the stack, once: dependents first, each service's replicas
// together, the stop signal (SIGTERM; nginx's image: SIGQUIT) then
// stop_grace_period (default 10 s) to exit 0.
// Registered as a cleanup after the last process started, it runs before
// their own cleanups (which would kill a frontend still in its lame duck).
func (s *stack) down() { s.downed.Do(s.stopAll) }

func (s *stack) stopAll() {
	for i := len(s.order) - 1; i >= 0; i-- {
		name := s.order[i]
		if oneShot(s.c.Services[name]) {
			continue // exited already, with status 0 (waitCompleted)
		}
		grace := 10 * time.Second
		if g := s.c.Services[name].StopGracePeriod; g != "" {
			grace, _ = time.ParseDuration(g)
		}
		sig := syscall.SIGTERM
		if strings.HasPrefix(s.c.Services[name].Image, "nginx:") {
			sig = syscall.SIGQUIT // the image's STOPSIGNAL: a graceful stop
		}
		for _, ctr := range s.ctrs[name] {
			_ = ctr.proc.Signal(sig)
		}
		timeout := time.After(grace)
		for _, ctr := range s.ctrs[name] {
			select {
			case <-ctr.proc.Done():
				if code := ctr.proc.ExitCode(); code != 0 {
					s.t.Errorf("%s: exit status %d after SIGTERM:\n%s", ctr.name, code, ctr.proc.Log())
				}
			case <-timeout:
				s.t.Errorf("%s did not stop within its stop_grace_period %s", ctr.name, grace)
				ctr.proc.Kill()
			}
		}
	}
}
