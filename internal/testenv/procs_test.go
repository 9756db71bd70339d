package testenv

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// recTB records the failures and cleanups of the Proc under test instead
// of failing the real test.
type recTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recTB) Helper()             {}
func (r *recTB) Logf(string, ...any) {}
func (r *recTB) Cleanup(f func())    { r.cleanups = append(r.cleanups, f) }
func (r *recTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}
func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recTB) finish() []string {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.errs
}

// The check at cleanup: exit status 0 after SIGTERM, a declared status or
// kill, and never a panic or a data race in the output.
func TestProcEndChecked(t *testing.T) {
	const (
		termZero = `trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done`
		termDies = `echo up; exec sleep 60`
	)
	for _, tc := range []struct {
		name, script string
		act          func(*Proc)
		wantErr      string
	}{
		{name: "status 0 after SIGTERM", script: termZero},
		{name: "killed by SIGTERM", script: termDies, wantErr: "want exit status 0"},
		{name: "declared kill", script: termDies, act: (*Proc).Kill},
		{name: "declared crash", script: termDies, act: (*Proc).ExpectCrash},
		{name: "undeclared status", script: `echo up; exit 3`, wantErr: "want exit status 0"},
		{name: "declared status", script: `echo up; exit 3`, act: func(p *Proc) { p.ExpectExit(3) }},
		{name: "panic", script: `echo up; echo 'panic: boom'; exit 2`, act: (*Proc).ExpectCrash, wantErr: "reported"},
		{name: "data race", script: `echo up; echo 'WARNING: DATA RACE'; exec sleep 60`, act: (*Proc).Kill, wantErr: "reported"},
		{name: "fatal error", script: `echo up; echo 'fatal error: concurrent map writes'; exit 2`, wantErr: "reported"},
		{name: "a quoted panic", script: `echo 'level=ERROR msg="handler" err="panic: boom"'; ` + termZero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recTB{TB: t}
			p := Start(r, "sh", "/bin/sh", "-c", tc.script)
			p.WaitLog(t, upRE, defaultWait)
			if tc.act != nil {
				tc.act(p)
			}
			errs := r.finish()
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("failed the test: %q", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.wantErr)):
				t.Errorf("failures %q, want one with %q", errs, tc.wantErr)
			}
		})
	}
}

var upRE = regexp.MustCompile(`(?m)^up$`)

const defaultWait = 10 * time.Second

// Once Done is closed, Log holds the whole output, up to the last line
// written right before the exit (a one-shot service's result, read by
// the test that waited for it to end).
func TestProcDoneHasWholeLog(t *testing.T) {
	for i := range 100 {
		p := Start(t, "sh", "/bin/sh", "-c", `echo first; echo last`)
		select {
		case <-p.Done():
		case <-time.After(defaultWait):
			t.Fatalf("run %d: sh still runs after %s", i, defaultWait)
		}
		if got := p.Log(); got != "first\nlast\n" {
			t.Fatalf("run %d: Log after Done = %q, want both lines", i, got)
		}
	}
}
