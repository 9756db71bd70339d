package testenv

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// Proc is a child process started by a test. At cleanup a process still
// running is stopped with SIGTERM, and the test fails (with the tail of
// the process's output) unless the process ended as expected: exit status
// 0, or the one declared with ExpectExit, or any status after a kill the
// test made (Kill, Signal with SIGKILL) or declared (ExpectCrash); and in
// every case no panic, fatal runtime error or data race in its output.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	restart func(tb testing.TB) *Proc
	mu      sync.Mutex
	log     strings.Builder
	done    chan struct{}
	// fate is what the test declared or did about how the process ends;
	// guarded by mu.
	fate procFate
}

// procFate is how a process is expected to end.
type procFate struct {
	killed    bool          // SIGKILLed by the test: any status
	termed    bool          // the test sent SIGTERM or SIGINT itself
	undrained time.Duration // still running this long after the test's SIGTERM
	crash     bool          // ExpectCrash: any status
	forced    time.Duration // Stop had to kill it after this long
	exitCode  int           // the expected exit status otherwise
}

// Log returns what the process wrote so far (stdout and stderr).
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL and waits for the process to exit. The kill is
// declared: the process's exit status is not checked at cleanup.
func (p *Proc) Kill() {
	p.markKilled()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *Proc) markKilled() {
	p.mu.Lock()
	p.fate.killed = true
	p.mu.Unlock()
}

// ExpectCrash declares that the process may end in any way (a crash the
// test provokes, a kill by someone else): its exit status is not checked
// at cleanup; its output still must not show a panic or a data race.
func (p *Proc) ExpectCrash() {
	p.mu.Lock()
	p.fate.crash = true
	p.mu.Unlock()
}

// ExpectExit declares the exit status the process is to end with (0
// unless declared).
func (p *Proc) ExpectExit(code int) {
	p.mu.Lock()
	p.fate.exitCode = code
	p.mu.Unlock()
}

// Stop sends SIGTERM and waits up to timeout (stretched by HangGuard),
// then kills. A process that needed the kill fails the check at cleanup.
func (p *Proc) Stop(timeout time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(HangGuard(timeout)):
		p.mu.Lock()
		p.fate.forced = HangGuard(timeout)
		p.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// ExitCode is the process's exit status once it has ended (-1 when a
// signal ended it, or while it runs).
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Done is closed when the process has ended and all its output is in Log.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start runs bin with args; the output is captured and shown on failure.
// Its environment is the test process's without the OTEL_* variables
// (hermeticEnv).
func Start(tb testing.TB, name, bin string, args ...string) *Proc {
	tb.Helper()
	return StartEnv(tb, name, bin, hermeticEnv(), args...)
}

// hermeticEnv is the environment of the processes tests start: the test
// process's, with GOTRACEBACK=all and without any OTEL_* variable, so that
// no process exports spans unless its test says so (an OTLP endpoint set
// where the tests run would otherwise reach every process).
func hermeticEnv() []string {
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, "GOTRACEBACK=all")
}

// StartEnv is Start with the process's whole environment: env
// ("KEY=value" entries) and nothing of the test process's.
func StartEnv(tb testing.TB, name, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	p := &Proc{Name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	// A child of the process that keeps the output pipe open must not
	// hold the test up once the process itself has ended.
	p.cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("testenv: starting %s: %v", name, err)
	}
	// Done is closed only once the whole output is in the log: a test
	// that reads Log after Done sees every line the process wrote.
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text())
			p.log.WriteByte('\n')
			p.mu.Unlock()
		}
		// A line past the buffer ends the scan; the rest is drained
		// so that the process never blocks on its output.
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = p.cmd.Wait()
		pw.Close()
		<-logged
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stopAtCleanup()
		p.checkEnd(tb)
		if tb.Failed() {
			tb.Logf("--- output of %s:\n%s", name, tail(p.Log(), 60))
		}
	})
	return p
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// WaitLog waits until the process output matches re and returns the first
// submatch (or the whole match). timeout is a hang guard (stretched by
// HangGuard); an exit of the process ends the wait at once.
func (p *Proc) WaitLog(tb testing.TB, re *regexp.Regexp, timeout time.Duration) string {
	tb.Helper()
	timeout = HangGuard(timeout)
	var m []string
	if testutil.WaitFor(timeout, func() bool {
		m = re.FindStringSubmatch(p.Log())
		return m != nil || p.Exited()
	}) && m != nil {
		if len(m) > 1 {
			return m[1]
		}
		return m[0]
	}
	tb.Fatalf("testenv: %s did not log %v within %s; output:\n%s", p.Name, re, timeout, tail(p.Log(), 40))
	return ""
}

// FreePort returns a loopback port that was free a moment ago, and that
// no earlier call of this process returned. It is below the kernel's
// ephemeral range (32768 and up on Linux): a port the kernel hands out
// (listen on :0) may be taken by any outgoing connection before the
// program it is meant for binds it, which made nats-server nodes fail to
// bind their route ports now and then.
func FreePort(tb testing.TB) int {
	tb.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if freePorts.picked[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		freePorts.picked[p] = true
		return p
	}
	tb.Fatal("testenv: no free loopback port in 20000-31999")
	return 0
}

// freePorts are the ports FreePort returned.
var freePorts = struct {
	sync.Mutex
	picked map[int]bool
}{picked: map[int]bool{}}

// WaitTCP waits until addr accepts connections; timeout is a hang guard
// (stretched by HangGuard).
func WaitTCP(tb testing.TB, addr string, timeout time.Duration) {
	tb.Helper()
	timeout = HangGuard(timeout)
	if !testutil.WaitFor(timeout, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		tb.Fatalf("testenv: %s did not accept connections within %s", addr, timeout)
	}
}

// StartNATSServer runs a real nats-server binary on a free port and returns
// its process and client URL.
func StartNATSServer(tb testing.TB) (*Proc, string) {
	tb.Helper()
	bin := FindBinary(tb, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	port := FreePort(tb)
	conf := filepath.Join(tb.TempDir(), "nats.conf")
	// Bodies up to the frontend's 4 MiB cap must fit in one message.
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%d\nmax_payload: 8MB\n", port)), 0o600); err != nil {
		tb.Fatal(err)
	}
	return startNATSConf(tb, "nats-server", bin, conf, port)
}

// startNATSConf runs nats-server with configuration file conf, whose
// client port is port, and waits until it accepts connections.
func startNATSConf(tb testing.TB, name, bin, conf string, port int) (*Proc, string) {
	tb.Helper()
	p := Start(tb, name, bin, "-c", conf)
	p.restart = func(tb testing.TB) *Proc { q, _ := startNATSConf(tb, name, bin, conf, port); return q }
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	WaitTCP(tb, addr, 10*time.Second)
	return p, "nats://" + addr
}

// Restart starts the server again with the same configuration (same port,
// same data) after it was stopped or killed, and returns the new process.
func (p *Proc) Restart(tb testing.TB) *Proc {
	tb.Helper()
	if p.restart == nil {
		tb.Fatalf("testenv: %s cannot be restarted", p.Name)
	}
	if !p.Exited() {
		p.Stop(5 * time.Second)
	}
	return p.restart(tb)
}

// StartRedisServer runs a real redis-server on a free port with append-only
// persistence in a temporary directory (so data survives Restart) and
// returns its process and URL.
func StartRedisServer(tb testing.TB) (*Proc, string) {
	tb.Helper()
	bin := FindBinary(tb, "redis-server", "apt-get install redis-server")
	return startRedisDir(tb, bin, tb.TempDir(), FreePort(tb))
}

func startRedisDir(tb testing.TB, bin, dir string, port int) (*Proc, string) {
	tb.Helper()
	p := Start(tb, "redis-server", bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	p.restart = func(tb testing.TB) *Proc { q, _ := startRedisDir(tb, bin, dir, port); return q }
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	WaitTCP(tb, addr, 10*time.Second)
	return p, "redis://" + addr + "/0"
}

var ServingRE = regexp.MustCompile(`msg="mcpfleet serving" url=(\S+)`)

// AdminRE matches the log line of a process's admin listener (text logs).
var AdminRE = regexp.MustCompile(`msg="admin http serving" url=(\S+)`)

// AdminURL returns the base URL (http://host:port) of the process's admin
// listener (/healthz, /readyz, /metrics), waiting until it is logged. The
// processes StartMCPFleet, StartFrontend and StartWorker start have one
// on a port of their own unless their args say --admin-listen off.
func (p *Proc) AdminURL(tb testing.TB) string {
	tb.Helper()
	return p.WaitLog(tb, AdminRE, 20*time.Second)
}

// adminArgs are the flags every mcpfleet process a test starts gets
// first: an admin listener on a port of its own (the serve role's default
// address is one fixed port, which processes started side by side cannot
// share), which args given after may change.
var adminArgs = []string{"--admin-listen", "127.0.0.1:0"}

// StartMCPFleet runs the all-in-one binary with extra args on a free port
// (its admin listener too: AdminURL) and returns the process and the MCP
// endpoint URL.
func StartMCPFleet(tb testing.TB, args ...string) (*Proc, string) {
	tb.Helper()
	bin := filepath.Join(Binaries(tb), "mcpfleet")
	p := Start(tb, "mcpfleet", bin, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, adminArgs...), args...)...)
	return p, p.WaitLog(tb, ServingRE, 20*time.Second)
}

// StartFrontend runs a frontend process (with an admin listener:
// AdminURL) and returns it and its endpoint URL.
func StartFrontend(tb testing.TB, natsURL, redisURL string, args ...string) (*Proc, string) {
	tb.Helper()
	return StartFrontendEnv(tb, nil, natsURL, redisURL, args...)
}

// StartFrontendEnv is StartFrontend with env ("KEY=value" entries) added
// to the process's environment.
func StartFrontendEnv(tb testing.TB, env []string, natsURL, redisURL string, args ...string) (*Proc, string) {
	tb.Helper()
	bin := filepath.Join(Binaries(tb), "frontend")
	// Text logs: the tests read them with regular expressions.
	// No lame-duck delay unless a test asks for one (--drain-delay in
	// args): nothing here routes by readiness.
	p := StartEnv(tb, "frontend", bin, append(hermeticEnv(), env...), append(append([]string{"--listen", "127.0.0.1:0", "--nats-url", natsURL, "--redis-url", redisURL, "--log-format", "text", "--drain-delay", "0"}, adminArgs...), args...)...)
	return p, p.WaitLog(tb, ServingRE, 20*time.Second)
}

var workerRE = regexp.MustCompile(`msg="worker serving"`)

// StateKey is the requestState key of the workers tests start (one per
// test process: every worker of a test's cluster shares it).
var StateKey = base64.StdEncoding.EncodeToString(mcp.RandomStateKey())

// StartWorker runs a worker process (with StateKey) and waits until it
// serves.
func StartWorker(tb testing.TB, natsURL string, args ...string) *Proc {
	tb.Helper()
	return StartWorkerCommand(tb, []string{filepath.Join(Binaries(tb), "worker")}, natsURL, args...)
}

// StartWorkerCommand runs command (a binary and its first arguments: an
// example's binary and "worker", say) as a worker on natsURL with
// StateKey, an admin listener (AdminURL) and args, and waits until it
// serves.
func StartWorkerCommand(tb testing.TB, command []string, natsURL string, args ...string) *Proc {
	tb.Helper()
	return StartWorkerCommandEnv(tb, command, nil, natsURL, args...)
}

// StartWorkerCommandEnv is StartWorkerCommand with env ("KEY=value"
// entries) added to the process's environment.
func StartWorkerCommandEnv(tb testing.TB, command, env []string, natsURL string, args ...string) *Proc {
	tb.Helper()
	full := append(append(append(command[1:len(command):len(command)], "--nats-url", natsURL, "--log-format", "text", "--state-key", StateKey), adminArgs...), args...)
	p := StartEnv(tb, "worker", command[0], append(hermeticEnv(), env...), full...)
	p.WaitLog(tb, workerRE, 20*time.Second)
	return p
}

// Signal sends sig to the process. SIGKILL is a declared kill, as with
// Kill; after SIGTERM or SIGINT the process is to exit with status 0 (or
// the one declared with ExpectExit).
func (p *Proc) Signal(sig os.Signal) error {
	switch sig {
	case syscall.SIGKILL:
		p.markKilled()
	case syscall.SIGTERM, syscall.SIGINT:
		p.mu.Lock()
		p.fate.termed = true
		p.mu.Unlock()
	}
	return p.cmd.Process.Signal(sig)
}
