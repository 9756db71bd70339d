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

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries builds cmd/mcpfleet, cmd/frontend and cmd/worker once per test
// process and returns the directory holding them.
func Binaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpfleet-testbin-")
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/mcpfleet", "./cmd/frontend", "./cmd/worker")
		cmd.Dir = ModuleRoot(tb)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
			return
		}
		buildDir = dir
	})
	if buildErr != nil {
		tb.Fatalf("testenv: building the binaries: %v", buildErr)
	}
	return buildDir
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
// to this checkout), once per test process and returns the binary.
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
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(ModuleRoot(tb), "examples", name)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("testenv: building examples/%s: %v\n%s", name, err, out)
	}
	examples[name] = bin
	return bin
}
