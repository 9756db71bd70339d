package clienttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scenarioResult is one JSON line a client script prints.
type scenarioResult struct {
	Client   string `json:"client"`
	Version  string `json:"version"`
	Era      string `json:"era"`
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
	Ms       int64  `json:"ms"`
}

// nodeRun is the outcome of one Node process.
type nodeRun struct {
	Stdout, Stderr string
	Err            error // the exit error, or a deadline
	Took           time.Duration
}

// runNode runs node with args (cwd: the client tree, so nothing resolves
// from elsewhere; HOME: home, so no client reads or writes the user's
// configuration) under deadline. The process gets its own process group,
// which is killed when the deadline passes.
func runNode(e *nodeEnv, home string, deadline time.Duration, args ...string) *nodeRun {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Node, args...)
	cmd.Dir = e.ClientsDir
	cmd.Env = append(os.Environ(), "MCPFLEET_CLIENTS_DIR="+e.ClientsDir, "NO_COLOR=1", "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after the %s deadline: %w", deadline, ctx.Err())
	}
	return &nodeRun{Stdout: out.String(), Stderr: errb.String(), Err: err, Took: time.Since(start)}
}

// clientRun is one script run: the scenarios it reported.
type clientRun struct {
	Client, Version, Era string
	Results              []scenarioResult
}

// runScript runs tools/clients/<script> against url in era, reports every
// scenario as a subtest, checks that exactly the expected scenarios ran,
// and returns what was reported.
func runScript(t *testing.T, e *nodeEnv, script, client, pkg, url, era string, want []string) *clientRun {
	t.Helper()
	r := runNode(e, t.TempDir(), 90*time.Second, filepath.Join(e.Scripts, script), url, era)
	t.Logf("%s %s against %s: %s", script, era, url, r.Took.Round(time.Millisecond))
	run := &clientRun{Client: client, Version: e.Versions[pkg], Era: era}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var junk []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var res scenarioResult
		if err := json.Unmarshal([]byte(line), &res); err != nil || res.Scenario == "" {
			junk = append(junk, line)
			continue
		}
		run.Results = append(run.Results, res)
	}
	allOK := true
	for _, res := range run.Results {
		res := res
		if res.Client != client || res.Era != era || res.Version != run.Version {
			t.Errorf("%s: line reports client %q %q era %q, want %q %q era %q", res.Scenario, res.Client, res.Version, res.Era, client, run.Version, era)
		}
		allOK = allOK && res.OK
		t.Run(res.Scenario, func(t *testing.T) {
			if !res.OK {
				t.Errorf("%s %s %s: %s", client, era, res.Scenario, res.Detail)
				return
			}
			t.Logf("ok (%d ms) %s", res.Ms, res.Detail)
		})
	}
	checkScenarioSet(t, run.Results, want)
	exitOK := r.Err == nil
	var ee *exec.ExitError
	if !exitOK && !errors.As(r.Err, &ee) {
		t.Errorf("%s %s: %v", script, era, r.Err)
	}
	if exitOK != allOK || len(junk) > 0 || (!exitOK && len(run.Results) == 0) {
		t.Errorf("%s %s: exit %v with %d scenarios (all ok: %v); stray output %q\nstderr:\n%s", script, era, r.Err, len(run.Results), allOK, junk, tail(r.Stderr, 40))
	} else if t.Failed() {
		t.Logf("stderr of %s %s:\n%s", script, era, tail(r.Stderr, 40))
	}
	return run
}

// checkScenarioSet fails unless results name exactly want, each once.
func checkScenarioSet(t *testing.T, results []scenarioResult, want []string) {
	t.Helper()
	got := map[string]int{}
	for _, r := range results {
		got[r.Scenario]++
	}
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("scenario %q reported %d times, want once", w, got[w])
		}
		delete(got, w)
	}
	for s := range got {
		t.Errorf("unexpected scenario %q", s)
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// result returns the named scenario's result, if it was reported.
func (r *clientRun) result(name string) (scenarioResult, bool) {
	for _, res := range r.Results {
		if res.Scenario == name {
			return res, true
		}
	}
	return scenarioResult{}, false
}
