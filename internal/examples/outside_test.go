package examples

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outsideMain is a server author's whole program, in a module of its own
// outside the repository, importing only the root package, pkg/mcp and
// pkg/protocol.
const outsideMain = `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

type CountIn struct {
	To int ` + "`" + `json:"to" jsonschema:"count up to this"` + "`" + `
}

type CountOut struct {
	Counted int    ` + "`" + `json:"counted"` + "`" + `
	By      string ` + "`" + `json:"by"` + "`" + `
}

func main() {
	srv := mcp.NewServer(protocol.Implementation{Name: "outside", Version: "0.0.1"}, nil)
	err := mcp.AddTool(srv, &protocol.Tool{Name: "count", Description: "Counts, reporting progress"},
		func(ctx context.Context, req *mcp.Request, in CountIn) (*protocol.CallToolResult, CountOut, error) {
			for i := 1; i <= in.To; i++ {
				if err := req.Progress(ctx, float64(i), float64(in.To), fmt.Sprint(i)); err != nil {
					return nil, CountOut{}, err
				}
			}
			return nil, CountOut{Counted: in.To, By: "outside"}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	mcpfleet.Main(srv)
}
`

// buildOutside writes the program into a new module in a temporary
// directory, with a replace to this checkout, and builds it.
func buildOutside(t *testing.T) string {
	t.Helper()
	root := testenv.ModuleRoot(t)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "examples", "hello", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"main.go": outsideMain, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "outside")
	for _, args := range [][]string{
		{"mod", "init", "example.com/outside"},
		{"mod", "edit", "-replace", "github.com/mcpfleet/mcpfleet=" + root},
		{"mod", "tidy"},
		append(append([]string{"build"}, testenv.BuildFlags()...), "-o", bin, "."),
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	return bin
}

// countWithProgress calls count and checks the result and the progress.
func countWithProgress(t *testing.T, cs *mcp.ClientSession, e *events, tok string) {
	t.Helper()
	var out struct {
		Counted int
		By      string
	}
	structured(t, call(t, cs, "count", map[string]any{"to": 3}, mcp.Meta{"progressToken": tok}), &out)
	if out.Counted != 3 || out.By != "outside" {
		t.Errorf("count: %+v", out)
	}
	e.wait(t, "3 progress notifications", func() bool {
		n := 0
		for _, p := range e.progress {
			if fmt.Sprint(p.ProgressToken) == tok {
				n++
			}
		}
		return n == 3
	})
}

// A module outside the repository that calls mcpfleet.Main answers its
// own tools as serve, as workers behind the project's frontend binary
// (both eras, with progress), and over stdio.
func TestOutsideModule(t *testing.T) {
	bin := buildOutside(t)
	t.Run("serve", func(t *testing.T) {
		p := testenv.Start(t, "outside", bin, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
		url := p.WaitLog(t, testenv.ServingRE, 20*time.Second)
		for _, era := range eras {
			e := &events{}
			countWithProgress(t, connect(t, url, era.opts, e), e, "serve-"+era.name)
		}
	})
	t.Run("workers", func(t *testing.T) {
		url := cluster(t, []string{bin, "worker"}).ProxyURL
		for _, era := range eras {
			e := &events{}
			cs := connect(t, url, era.opts, e)
			if v := cs.InitializeResult().ProtocolVersion; v != era.want {
				t.Fatalf("negotiated %s, want %s", v, era.want)
			}
			if v := cs.InitializeResult().ServerInfo; v == nil || v.Name != "outside" {
				t.Errorf("serverInfo %+v", v)
			}
			countWithProgress(t, cs, e, "cluster-"+era.name)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		e := &events{}
		cs := connectStdio(t, bin, e)
		countWithProgress(t, cs, e, "stdio")
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "count" }) {
			t.Errorf("tools/list over stdio: %v %+v", err, tools)
		}
	})
}
