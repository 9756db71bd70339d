package testenv

import (
	"regexp"
	"testing"
	"time"
)

// crashRE matches what a Go program writes when it panics, dies of a
// fatal runtime error or (race-enabled) detects a data race, at the start
// of a line: a log line quoting a recovered panic does not match.
var crashRE = regexp.MustCompile(`(?m)^(panic: |fatal error: |WARNING: DATA RACE)`)

// crashIn returns the line of out where a panic, a fatal error or a data
// race is reported, or "".
func crashIn(out string) string {
	loc := crashRE.FindStringIndex(out)
	if loc == nil {
		return ""
	}
	end := loc[1]
	for end < len(out) && out[end] != '\n' {
		end++
	}
	return out[loc[0]:end]
}

// stopAtCleanup stops the process if it still runs: a process the test
// already sent SIGTERM to is given time to finish (a second signal would
// cut its drain short), then it gets SIGTERM (again), then SIGKILL.
func (p *Proc) stopAtCleanup() {
	if p.Exited() {
		return
	}
	p.mu.Lock()
	termed := p.fate.termed
	p.mu.Unlock()
	if termed {
		guard := HangGuard(10 * time.Second)
		select {
		case <-p.done:
			return
		case <-time.After(guard):
			p.mu.Lock()
			p.fate.undrained = guard
			p.mu.Unlock()
		}
	}
	p.Stop(10 * time.Second)
}

// checkEnd fails the test when the process (ended) did not end as
// expected (see Proc): it runs at cleanup, after the process was stopped.
func (p *Proc) checkEnd(tb testing.TB) {
	tb.Helper()
	out := p.Log()
	if line := crashIn(out); line != "" {
		tb.Errorf("testenv: %s reported %q; its output ends:\n%s", p.Name, line, tail(out, 80))
		return
	}
	p.mu.Lock()
	fate := p.fate
	p.mu.Unlock()
	switch {
	case fate.killed || fate.crash:
	case fate.undrained > 0:
		tb.Errorf("testenv: %s still ran %s after the test's SIGTERM; its output ends:\n%s", p.Name, fate.undrained, tail(out, 40))
	case fate.forced > 0:
		tb.Errorf("testenv: %s did not exit within %s of SIGTERM and was killed; its output ends:\n%s", p.Name, fate.forced, tail(out, 40))
	case p.ExitCode() != fate.exitCode:
		tb.Errorf("testenv: %s ended with %s, want exit status %d; its output ends:\n%s", p.Name, p.cmd.ProcessState, fate.exitCode, tail(out, 40))
	}
}
