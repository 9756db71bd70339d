package migrating_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guide is the document whose code this module holds.
const guide = "../migrating.md"

// topics are the guide's topics: each of the three packages has the
// function, and the guide shows it from each.
var topics = []struct{ topic, fn string }{
	{"typed tool", "AddTypedTool"},
	{"resource and resource template", "AddResources"},
	{"prompt", "AddPrompt"},
	{"sampling", "AddSamplingTool"},
	{"elicitation", "AddElicitationTool"},
	{"progress", "AddProgressTool"},
	{"serving", "Serve"},
}

// packages are the three versions of the server, by directory.
var packages = []string{"gosdk", "mcpgo", "mcpfleet"}

// serving names the serving function of each package, where it is not
// Serve: mcpfleet's is Main, which hands the server to mcpfleet.Main.
var serving = map[string]string{"mcpfleet": "Main"}

var sourceComment = regexp.MustCompile(`^<!-- from docs/migrating/(\S+) -->$`)

// block is one fenced code block of the guide.
type block struct {
	line   int    // of the opening fence
	lang   string // the fence's info string
	source string // the file named by the comment before it, relative to this module ("" if none)
	code   string // the lines between the fences, each ending in \n
}

// readGuide returns the guide's fenced code blocks.
func readGuide(t *testing.T) []block {
	t.Helper()
	b, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		if m := sourceComment.FindStringSubmatch(lines[i]); m != nil && (i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "```")) {
			t.Errorf("%s:%d: the source comment is not on the line before a code fence", guide, i+1)
		}
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		blk := block{line: i + 1, lang: strings.TrimPrefix(lines[i], "```")}
		if i > 0 {
			if m := sourceComment.FindStringSubmatch(lines[i-1]); m != nil {
				blk.source = m[1]
			}
		}
		var code strings.Builder
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			code.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: the code block is not closed", guide, blk.line)
		}
		blk.code = code.String()
		blocks = append(blocks, blk)
	}
	return blocks
}

// TestGuideBlocks checks that every Go block of the guide names its source
// and that every block that names one is a contiguous run of whole lines
// of that file.
func TestGuideBlocks(t *testing.T) {
	blocks := readGuide(t)
	if len(blocks) == 0 {
		t.Fatal("no code blocks in the guide")
	}
	for _, b := range blocks {
		if b.source == "" {
			if b.lang == "go" {
				t.Errorf("%s:%d: a go block without a <!-- from docs/migrating/FILE --> comment on the line before", guide, b.line)
			}
			continue
		}
		src, err := os.ReadFile(filepath.FromSlash(b.source))
		if err != nil {
			t.Errorf("%s:%d: %v", guide, b.line, err)
			continue
		}
		if strings.TrimSpace(b.code) == "" || !strings.Contains("\n"+string(src), "\n"+b.code) {
			t.Errorf("%s:%d: the block is not an excerpt of docs/migrating/%s (whole lines, verbatim):\n%s", guide, b.line, b.source, b.code)
		}
	}
}

// TestTopics checks that each package has every topic's function, and
// that the guide shows each of them.
func TestTopics(t *testing.T) {
	shown := map[string]string{} // package → the code of its blocks
	for _, b := range readGuide(t) {
		if pkg, _, ok := strings.Cut(b.source, "/"); ok {
			shown[pkg] += b.code
		}
	}
	for _, pkg := range packages {
		funcs := topLevelFuncs(t, pkg)
		for _, tp := range topics {
			fn := tp.fn
			if tp.topic == "serving" && serving[pkg] != "" {
				fn = serving[pkg]
			}
			if !funcs[fn] {
				t.Errorf("package %s has no func %s (the %s topic)", pkg, fn, tp.topic)
			}
			if !strings.Contains(shown[pkg], fmt.Sprintf("func %s(", fn)) {
				t.Errorf("the guide shows no func %s of package %s (the %s topic)", fn, pkg, tp.topic)
			}
		}
	}
}

// topLevelFuncs returns the names of the functions declared in dir's
// non-test Go files.
func topLevelFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = true
			}
		}
	}
	return funcs
}
