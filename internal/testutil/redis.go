package testutil

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedisURLEnv names the environment variable that points the tests at an
// existing Redis instead of a private redis-server.
const RedisURLEnv = "MCPFLEET_TEST_REDIS_URL"

// Bounds of starting and stopping a redis-server.
const (
	redisStartTimeout = 10 * time.Second
	redisStopTimeout  = 5 * time.Second
	redisStartTries   = 3 // a free port can be taken before the server binds it
)

// StartRedis returns the URL (redis://127.0.0.1:PORT/0) of a real Redis for
// tb. Unless $MCPFLEET_TEST_REDIS_URL is set (then that URL is returned),
// it starts a private redis-server without persistence on a free loopback
// port, with its files in tb.TempDir(), waits until it answers PING, and
// stops it in tb.Cleanup.
//
// Each call starts its own server, so tests may call it in parallel; a test
// that needs one server for many subtests calls it once and gives each
// subtest its own [UniquePrefix] (which also keeps tests apart on a shared
// $MCPFLEET_TEST_REDIS_URL server). If redis-server is not installed the
// test fails, naming the fix; it is never skipped.
func StartRedis(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv(RedisURLEnv); u != "" {
		return u
	}
	bin := redisServerPath()
	if bin == "" {
		tb.Fatalf("testutil: redis-server not found in PATH, /usr/bin or /usr/local/bin: " +
			"run `make deps` or `apt-get install redis-server` (or set " + RedisURLEnv + ")")
	}
	dir := tb.TempDir()
	var errs []error
	for try := 1; try <= redisStartTries; try++ {
		addr, err := startRedis(tb, bin, dir, try)
		if err == nil {
			return "redis://" + addr + "/0"
		}
		errs = append(errs, err)
	}
	tb.Fatalf("testutil: cannot start redis-server: %v", errors.Join(errs...))
	return ""
}

// UniquePrefix returns a Redis key prefix no other test uses: a sanitised
// form of tb.Name() (for reading keys while debugging) and a random suffix.
// It contains no braces, so it cannot displace a key's hash tag.
func UniquePrefix(tb testing.TB) string {
	tb.Helper()
	name := strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r|0x20 >= 'a' && r|0x20 <= 'z') {
			return r
		}
		return '_'
	}, tb.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:" + name + ":" + hex.EncodeToString(b[:])
}

// redisServerPath finds the redis-server binary, or returns "".
func redisServerPath() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts one redis-server and waits until it answers. On
// success, the server is registered for stopping in tb.Cleanup.
func startRedis(tb testing.TB, bin, dir string, try int) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, fmt.Sprintf("redis-%d.log", try))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile

	p, err := start(cmd)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", bin, err)
	}
	deadline := time.Now().Add(redisStartTimeout)
	for {
		if err := ping(addr); err == nil {
			break
		} else if time.Now().After(deadline) {
			p.stop()
			return "", fmt.Errorf("%s did not answer PING within %v: %w; log: %s", addr, redisStartTimeout, err, readLog(logPath))
		}
		select {
		case <-p.exited:
			return "", fmt.Errorf("redis-server on %s exited: %v; log: %s", addr, p.err, readLog(logPath))
		case <-time.After(10 * time.Millisecond):
		}
	}
	tb.Cleanup(p.stop)
	return addr, nil
}

// process is a started server and the goroutine that waits for it.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result; read after exited is closed
}

// start starts cmd. The process is started and waited for from a goroutine
// locked to its OS thread: on Linux the child gets SIGKILL when that
// thread ends (see setDeathSignal), so a test binary killed by a timeout
// does not leave servers behind, and the thread lives as long as the
// child.
func start(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread exits with the goroutine, after the
		// child has.
		runtime.LockOSThread()
		setDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop terminates the server, politely first.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(redisStopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// ping sends one RESP PING to addr and checks for PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// readLog returns the tail of a server log for an error message.
func readLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	const limit = 2000
	if len(b) > limit {
		b = b[len(b)-limit:]
	}
	return strings.TrimSpace(string(b))
}
