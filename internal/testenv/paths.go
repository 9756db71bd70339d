package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// ModuleRoot returns the directory holding go.mod.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("testenv: getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FindBinary looks name up in PATH and in $(go env GOPATH)/bin.
func FindBinary(tb testing.TB, name, fix string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = string(trimNL(out))
		}
	}
	for _, dir := range []string{filepath.Join(gopath, "bin"), "/usr/local/bin", "/usr/bin", "/usr/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	tb.Fatalf("testenv: %s not found; install it with: %s (or run `make deps`)", name, fix)
	return ""
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// binaryBuild is one flavour's build of the binaries.
type binaryBuild struct {
	once sync.Once
	dir  string
	err  error
}

// builds holds the builds of this test process by flavour (see Flavour):
// a test process has one flavour, and the Go build cache shares the
// compiled packages of a flavour between test processes.
var builds sync.Map // flavour -> *binaryBuild

// Binaries builds cmd/mcpfleet, cmd/frontend and cmd/worker once per test
// process, in the flavour of the test binary (race-enabled when it is, see
// BuildFlags), and returns the directory holding them.
func Binaries(tb testing.TB) string {
	tb.Helper()
	v, _ := builds.LoadOrStore(Flavour(), &binaryBuild{})
	b := v.(*binaryBuild)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpfleet-testbin-"+Flavour()+"-")
		if err != nil {
			b.err = err
			return
		}
		args := append(append([]string{"build"}, BuildFlags()...), "-o", dir+string(os.PathSeparator), "./cmd/mcpfleet", "./cmd/frontend", "./cmd/worker")
		cmd := exec.Command("go", args...)
		cmd.Dir = ModuleRoot(tb)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{out: string(out), err: err}
			return
		}
		b.dir = dir
	})
	if b.err != nil {
		tb.Fatalf("testenv: building the binaries (%s): %v", Flavour(), b.err)
	}
	return b.dir
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

var (
	examplesMu sync.Mutex
	examples   = map[string]string{}
)

// BuildExample builds examples/<name>, its own Go module (with a replace
// to this checkout), once per test process in the flavour of the test
// binary (see BuildFlags), and returns the binary.
func BuildExample(tb testing.TB, name string) string {
	tb.Helper()
	examplesMu.Lock()
	defer examplesMu.Unlock()
	if bin := examples[name]; bin != "" {
		return bin
	}
	dir, err := os.MkdirTemp("", "mcpfleet-example-")
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", append(append([]string{"build"}, BuildFlags()...), "-o", bin, ".")...)
	cmd.Dir = filepath.Join(ModuleRoot(tb), "examples", name)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("testenv: building examples/%s: %v\n%s", name, err, out)
	}
	examples[name] = bin
	return bin
}
