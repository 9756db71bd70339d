package mcpfleet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/architecture.md is the map of the house: it names every package
// under pkg/ and internal/ that holds non-test code, so a new package
// cannot arrive without its one job written down.
func TestArchitectureDocNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"pkg", "internal/httpx"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() == "testdata" {
				return err
			}
			if !hasCode(t, path) {
				return nil
			}
			if !strings.Contains(string(doc), "`"+filepath.ToSlash(path)+"`") {
				t.Errorf("docs/architecture.md does not name the package %s", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hasCode reports whether dir holds a non-test Go file.
func hasCode(t *testing.T, dir string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
