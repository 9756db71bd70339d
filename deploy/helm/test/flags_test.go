package helmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The binaries the chart's containers run, built from this checkout: the
// project image's frontend and worker (cmd/), and the notes example (a
// user's server, one binary with every role) for the custom values.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir = filepath.Join(helmHome, "bin")
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			buildErr = err
			return
		}
		for _, b := range []struct{ dir, out string }{
			{root, binDir + string(filepath.Separator)}, // ./cmd/frontend ./cmd/worker
			{filepath.Join(root, "examples", "notes"), filepath.Join(binDir, "notes")},
		} {
			args := []string{"build", "-o", b.out}
			if b.dir == root {
				args = append(args, "./cmd/frontend", "./cmd/worker")
			} else {
				args = append(args, ".")
			}
			cmd := exec.Command("go", args...)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), b.dir, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

var (
	helpMu    sync.Mutex
	helpCache = map[string]map[string]bool{}
	helpFlag  = regexp.MustCompile(`(?m)^\s+--([a-z0-9][a-z0-9-]*)\b`)
)

// roleFlags runs `<binary> <role> -h` and returns the flags it lists.
func roleFlags(t *testing.T, binary, role string) map[string]bool {
	t.Helper()
	key := binary + " " + role
	helpMu.Lock()
	defer helpMu.Unlock()
	if f, ok := helpCache[key]; ok {
		return f
	}
	path := filepath.Join(binaries(t), binary)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the chart runs %s, which the test does not build: %v", binary, err)
	}
	cmd := exec.Command(path, role, "-h")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + helmHome} // no MCPFLEET_* of the caller's
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s -h: %v\n%s", binary, role, err, out)
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("%s %s -h lists %d flags:\n%s", binary, role, len(flags), out)
	}
	helpCache[key] = flags
	return flags
}

var roles = []string{"serve", "worker", "frontend", "stdio"}

// program is the binary and role a container runs: the command's file
// name, and the first of its further arguments that is a role, else the
// binary's default role (the shipped frontend and worker default to
// theirs; every other mcpfleet.Main binary to serve).
func program(c *corev1.Container) (binary, role string) {
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(argv) == 0 {
		return "", ""
	}
	binary = filepath.Base(argv[0])
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") {
			break
		}
		if slices.Contains(roles, a) {
			return binary, a
		}
	}
	switch binary {
	case "frontend", "worker":
		return binary, binary
	}
	return binary, "serve"
}

// envFlag is the flag whose environment twin is name
// (MCPFLEET_SESSION_TTL is session-ttl).
func envFlag(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, "MCPFLEET_")), "_", "-")
}

// TestFlagsExistInBinaries: every --flag in a container's command and
// arguments, and every MCPFLEET_* variable of its environment, is a flag
// that `<binary> <role> -h` of the real binary lists (the variable being
// its twin, MCPFLEET_ + the name in upper snake case). The help is read
// now, from binaries built from this checkout, so the check follows the
// flags as they change.
func TestFlagsExistInBinaries(t *testing.T) {
	renders := map[string]*rendered{
		"default": render(t, chartDir, kubeRecent, nil, "stateKey.value="+testStateKey),
		"custom":  render(t, chartDir, kubeRecent, []string{writeValues(t, customValues)}),
		// --redis-mode sentinel, as MCPFLEET_REDIS_MODE.
		"ha": render(t, stubbedChart(t), kubeRecent, []string{haValuesFile}, "stateKey.value="+testStateKey),
	}
	for _, name := range keys(renders) {
		r := renders[name]
		for _, dname := range keys(r.deployments) {
			d := r.deployments[dname]
			for _, c := range d.Spec.Template.Spec.Containers {
				binary, role := program(&c)
				t.Run(fmt.Sprintf("%s/%s/%s-%s", name, c.Name, binary, role), func(t *testing.T) {
					missing, checked := unknownFlags(&c, roleFlags(t, binary, role))
					if checked < 4 {
						t.Errorf("only %d MCPFLEET_* variables checked", checked)
					}
					if len(missing) > 0 {
						t.Errorf("%s: `%s %s -h` does not list what the chart passes: %s",
							d.Name, binary, role, strings.Join(missing, ", "))
					}
				})
			}
		}
	}
}

// unknownFlags lists the --flags of c's command and arguments, and the
// MCPFLEET_* variables of its environment, that are not in flags; checked
// counts the variables.
func unknownFlags(c *corev1.Container, flags map[string]bool) (missing []string, checked int) {
	argv := append(slices.Clone(c.Command[1:]), c.Args...)
	for _, a := range argv {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		f, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[f] {
			missing = append(missing, "argument --"+f)
		}
	}
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "MCPFLEET_") {
			continue
		}
		checked++
		if f := envFlag(e.Name); !flags[f] || "MCPFLEET_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_")) != e.Name {
			missing = append(missing, e.Name+" (--"+f+")")
		}
	}
	return missing, checked
}

// TestUnknownFlags: the cross-check's own check finds a flag, or a
// variable, that the help does not list, and takes what it lists.
func TestUnknownFlags(t *testing.T) {
	flags := map[string]bool{"nats-url": true, "session-ttl": true, "tools": true}
	c := &corev1.Container{
		Command: []string{"/usr/local/bin/notes", "worker"},
		Args:    []string{"--tools=x", "--bogus", "value", "--session-ttl", "1h"},
		Env: []corev1.EnvVar{
			{Name: "MCPFLEET_NATS_URL", Value: "nats://x:4222"},
			{Name: "MCPFLEET_SESSION_TTL", Value: "1h"},
			{Name: "MCPFLEET_NO_SUCH_FLAG", Value: "1"},
			{Name: "MCPFLEET_nats_url", Value: "lower case is not a twin"},
			{Name: "OTHER", Value: "not a flag's twin, not checked"},
		},
	}
	missing, checked := unknownFlags(c, flags)
	want := []string{"argument --bogus", "MCPFLEET_NO_SUCH_FLAG (--no-such-flag)", "MCPFLEET_nats_url (--nats-url)"}
	if !slices.Equal(missing, want) || checked != 4 {
		t.Errorf("unknownFlags: %q (%d checked), want %q (4 checked)", missing, checked, want)
	}
	if b, r := program(c); b != "notes" || r != "worker" {
		t.Errorf("program: %s %s, want notes worker", b, r)
	}
	if b, r := program(&corev1.Container{Command: []string{"/usr/local/bin/frontend"}}); b != "frontend" || r != "frontend" {
		t.Errorf("program: %s %s, want frontend frontend", b, r)
	}
	if b, r := program(&corev1.Container{Command: []string{"/usr/local/bin/notes"}, Args: []string{"--x", "worker"}}); b != "notes" || r != "serve" {
		t.Errorf("program: %s %s, want notes serve (a role after a flag is a flag's value)", b, r)
	}
}
