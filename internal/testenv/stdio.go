package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Stdio is `mcpfleet stdio` run as a subprocess, driven over its stdin and
// stdout pipes. Every stdout line is checked to be one JSON-RPC message
// (stdout must carry protocol messages only); stderr is collected.
type Stdio struct {
	tb     testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan StdioLine
	stderr *lockedBuffer
	exited chan struct{}
	err    error // the process's exit status, once exited is closed
	// backlog holds messages read while waiting for another one.
	backlog []StdioLine
	// statusTaken is set once WaitExit returned the exit status to the
	// test, which then owns its check.
	statusTaken bool
}

// StdioLine is one line the server wrote on stdout, decoded.
type StdioLine struct {
	Raw []byte
	Msg *protocol.Message
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartStdio runs the mcpfleet binary's stdio subcommand with args. When
// the test ends a process still running gets EOF on stdin (then SIGTERM,
// then SIGKILL), and the test fails unless it exited with status 0 (when
// the test did not take the status with WaitExit) and its stderr shows no
// panic, fatal runtime error or data race.
func StartStdio(tb testing.TB, args ...string) *Stdio {
	tb.Helper()
	bin := filepath.Join(Binaries(tb), "mcpfleet")
	cmd := exec.Command(bin, append([]string{"stdio"}, args...)...)
	s := &Stdio{tb: tb, cmd: cmd, lines: make(chan StdioLine, 1024), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting mcpfleet stdio: %v", err)
	}
	readDone := make(chan struct{})
	go func() { // ends at the process's EOF on stdout
		defer close(readDone)
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			raw := append([]byte(nil), sc.Bytes()...)
			msg, err := protocol.Decode(raw, 0)
			if err != nil {
				tb.Errorf("stdout carries a line that is not a JSON-RPC message: %q (%v)", raw, err)
				continue
			}
			s.lines <- StdioLine{Raw: raw, Msg: msg}
		}
	}()
	go func() { // ends when the process exits
		<-readDone
		s.err = cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		s.stop()
		if tb.Failed() {
			tb.Logf("--- stderr of mcpfleet stdio:\n%s", tail(s.stderr.String(), 40))
		}
	})
	return s
}

// Send writes one message (a JSON string, or a value to marshal) as a line.
func (s *Stdio) Send(msg any) {
	s.tb.Helper()
	var b []byte
	switch m := msg.(type) {
	case string:
		b = []byte(m)
	case []byte:
		b = m
	default:
		var err error
		if b, err = json.Marshal(m); err != nil {
			s.tb.Fatal(err)
		}
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		s.tb.Fatalf("writing to stdin: %v", err)
	}
}

// Request sends a request with id, method and params.
func (s *Stdio) Request(id any, method string, params any) {
	s.tb.Helper()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	s.Send(m)
}

// Notify sends a notification.
func (s *Stdio) Notify(method string, params any) {
	s.tb.Helper()
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	s.Send(m)
}

// CloseStdin closes the server's input (EOF).
func (s *Stdio) CloseStdin() { _ = s.stdin.Close() }

// Next returns the next message the server wrote, failing the test after
// timeout (a hang guard, stretched by HangGuard).
func (s *Stdio) Next(timeout time.Duration) StdioLine {
	s.tb.Helper()
	timeout = HangGuard(timeout)
	if len(s.backlog) > 0 {
		l := s.backlog[0]
		s.backlog = s.backlog[1:]
		return l
	}
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.tb.Fatalf("stdout closed while waiting for a message (exit: %v)", s.exitErr())
		}
		return l
	case <-time.After(timeout):
		s.tb.Fatalf("no message from mcpfleet stdio within %v", timeout)
	}
	return StdioLine{}
}

// Until returns the messages up to and including the first for which match
// is true; the messages after it stay queued. timeout is a hang guard
// (stretched by HangGuard).
func (s *Stdio) Until(timeout time.Duration, what string, match func(StdioLine) bool) []StdioLine {
	s.tb.Helper()
	timeout = HangGuard(timeout)
	deadline := time.Now().Add(timeout)
	var seen []StdioLine
	for {
		if len(s.backlog) > 0 {
			l := s.backlog[0]
			s.backlog = s.backlog[1:]
			seen = append(seen, l)
			if match(l) {
				return seen
			}
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			s.tb.Fatalf("waiting for %s: not seen within %v; got %s", what, timeout, rawLines(seen))
		}
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.tb.Fatalf("waiting for %s: stdout closed (exit: %v); got %s", what, s.exitErr(), rawLines(seen))
			}
			seen = append(seen, l)
			if match(l) {
				return seen
			}
		case <-time.After(left):
		}
	}
}

// Response waits for the response with id (given as JSON: 1, "a") and
// returns it and the messages written before it. Messages after it stay
// queued for Next.
func (s *Stdio) Response(id string, timeout time.Duration) (StdioLine, []StdioLine) {
	s.tb.Helper()
	seen := s.Until(timeout, "the response to "+id, func(l StdioLine) bool {
		return l.Msg.Kind() == protocol.KindResponse && string(l.Msg.ID.AppendJSON(nil)) == id
	})
	return seen[len(seen)-1], seen[:len(seen)-1]
}

// Push puts messages back in front of the queue (for a test that read
// past what it wanted).
func (s *Stdio) Push(ls ...StdioLine) { s.backlog = append(ls, s.backlog...) }

// Quiet collects what the server writes during d: a bounded wait for a
// test whose point is what does not arrive (d is not stretched).
func (s *Stdio) Quiet(d time.Duration) []StdioLine {
	var out []StdioLine
	out = append(out, s.backlog...)
	s.backlog = nil
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-deadline:
			return out
		}
	}
}

// WaitExit waits for the process to exit and returns its exit error; the
// test then owns the check of the status. timeout is a hang guard
// (stretched by HangGuard).
func (s *Stdio) WaitExit(timeout time.Duration) error {
	s.tb.Helper()
	timeout = HangGuard(timeout)
	select {
	case <-s.exited:
		s.statusTaken = true
		return s.err
	case <-time.After(timeout):
		s.tb.Fatalf("mcpfleet stdio did not exit within %v", timeout)
	}
	return nil
}

func (s *Stdio) exitErr() any {
	select {
	case <-s.exited:
		if s.err == nil {
			return "status 0"
		}
		return s.err
	default:
		return "still running"
	}
}

// stop ends the process at cleanup (EOF, then SIGTERM, then SIGKILL, each
// with a hang guard) and fails the test when it did not end well.
func (s *Stdio) stop() {
	s.tb.Helper()
	guard := HangGuard(10 * time.Second)
	ended := func() bool {
		select {
		case <-s.exited:
			return true
		case <-time.After(guard):
			return false
		}
	}
	forced := ""
	select {
	case <-s.exited:
	default:
		s.CloseStdin()
		if !ended() {
			forced = "EOF on stdin"
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			if !ended() {
				forced = "EOF on stdin and SIGTERM"
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
	}
	stderr := s.stderr.String()
	switch line := crashIn(stderr); {
	case line != "":
		s.tb.Errorf("testenv: mcpfleet stdio reported %q; its stderr ends:\n%s", line, tail(stderr, 80))
	case forced != "":
		s.tb.Errorf("testenv: mcpfleet stdio did not exit within %s of %s", guard, forced)
	case !s.statusTaken && s.err != nil:
		s.tb.Errorf("testenv: mcpfleet stdio ended with %v, want exit status 0", s.err)
	}
}

// Stderr returns what the process wrote on stderr so far.
func (s *Stdio) Stderr() string { return s.stderr.String() }

func rawLines(ls []StdioLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString("\n  ")
		b.Write(l.Raw)
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return b.String()
}
