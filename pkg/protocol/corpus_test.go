package protocol_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzDecode/seed-* from the Decode tables")

const corpusDir = "testdata/fuzz/FuzzDecode"

// corpusSeeds are the Decode table cases by corpus file name.
func corpusSeeds(t testing.TB) map[string]string {
	t.Helper()
	seeds := map[string]string{}
	add := func(prefix, name, in string) {
		slug := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			}
			return '-'
		}, name)
		if _, dup := seeds[prefix+slug]; dup {
			t.Fatalf("two Decode table cases are named %q", name)
		}
		seeds[prefix+slug] = in
	}
	for _, tc := range decodeOKCases() {
		add("seed-ok-", tc.name, tc.in)
	}
	for _, tc := range decodeBadCases() {
		add("seed-bad-", tc.name, tc.in)
	}
	return seeds
}

// readCorpusFile parses a "go test fuzz v1" file holding one []byte.
func readCorpusFile(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: want a go test fuzz v1 header and one value, got %q", path, raw)
	}
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	if !ok || !strings.HasSuffix(lit, ")") {
		t.Fatalf("%s: want a []byte value, got %q", path, lines[1])
	}
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// TestFuzzDecodeCorpus checks that every Decode table case is committed as
// a seed file, so `go test -fuzz` starts from them even without f.Add, and
// that every committed file (seeds and regressions) parses.
func TestFuzzDecodeCorpus(t *testing.T) {
	seeds := corpusSeeds(t)
	if *updateCorpus {
		if err := os.MkdirAll(corpusDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, in := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
			if err := os.WriteFile(filepath.Join(corpusDir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatalf("reading the corpus: %v (regenerate with go test -run TestFuzzDecodeCorpus -update-corpus)", err)
	}
	files := map[string]string{}
	for _, e := range entries {
		files[e.Name()] = string(readCorpusFile(t, filepath.Join(corpusDir, e.Name())))
	}
	for name, in := range seeds {
		t.Run(name, func(t *testing.T) {
			got, ok := files[name]
			if !ok {
				t.Fatalf("%s/%s is missing (regenerate with -update-corpus)", corpusDir, name)
			}
			if got != in {
				t.Errorf("%s/%s = %q, want %q (regenerate with -update-corpus)", corpusDir, name, got, in)
			}
		})
	}
	for name := range files {
		if _, ok := seeds[name]; !ok && strings.HasPrefix(name, "seed-") {
			t.Errorf("%s/%s matches no table case; delete it or regenerate", corpusDir, name)
		}
	}
}
