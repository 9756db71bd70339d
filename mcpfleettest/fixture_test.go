package mcpfleettest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/mcpfleettest"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The server under test: what a server author would write.

type addIn struct {
	A     int `json:"a"`
	B     int `json:"b"`
	Steps int `json:"steps,omitempty"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type confirmIn struct {
	Action string `json:"action"`
}

type noteIn struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type regionIn struct {
	Region string `json:"region"`
}

// codeAccountLocked is the application error code of the "withdraw" tool.
const codeAccountLocked = -32050

func newTestServer(t *testing.T) (*mcp.Server, *mcpfleettest.Server) {
	t.Helper()
	srv := mcp.NewServer(protocol.Implementation{Name: "bank", Version: "1.0.0"}, &mcp.ServerOptions{ResourceSubscriptions: true})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mcp.AddTool(srv, &protocol.Tool{Name: "add", Description: "Adds, reporting progress."},
		func(ctx context.Context, req *mcp.Request, in addIn) (*protocol.CallToolResult, addOut, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := req.Progress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d", i)); err != nil {
					return nil, addOut{}, err
				}
			}
			_ = req.Log(ctx, protocol.LevelInfo, "add", "adding")
			return nil, addOut{Sum: in.A + in.B}, nil
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "confirm", Description: "Does action once the user confirms."},
		func(ctx context.Context, req *mcp.Request, in confirmIn) (*protocol.CallToolResult, any, error) {
			res, err := req.Elicit(ctx, &protocol.ElicitParams{
				Message:         "Really " + in.Action + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`),
			})
			if err != nil {
				return nil, nil, err
			}
			if res.Action != protocol.ElicitAccept || res.Content["confirm"] != true {
				return mcp.TextResult("not done: " + res.Action), nil, nil
			}
			return mcp.TextResult("done: " + in.Action), nil, nil
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "summarize", Description: "Asks the client's LLM."},
		func(ctx context.Context, req *mcp.Request, in noteIn) (*protocol.CallToolResult, any, error) {
			res, err := req.Sample(ctx, &protocol.CreateMessageParams{
				Messages:  []*protocol.SamplingMessage{{Role: "user", Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.TextContent{Text: "Summarize: " + in.Text}}}}},
				MaxTokens: 50,
			})
			if err != nil {
				return nil, nil, err
			}
			return mcp.TextResult("summary: " + text(res.Content.Blocks)), nil, nil
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *mcp.Request, _ struct{}) (*protocol.CallToolResult, any, error) {
			res, err := req.ListRoots(ctx)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return mcp.TextResult(strings.Join(uris, ",")), nil, nil
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "withdraw", Description: "Always fails with an application error."},
		func(ctx context.Context, req *mcp.Request, _ struct{}) (*protocol.CallToolResult, any, error) {
			return nil, nil, protocol.NewError(codeAccountLocked, "account locked")
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "where",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(ctx context.Context, req *mcp.Request, in regionIn) (*protocol.CallToolResult, any, error) {
			return mcp.TextResult("in " + in.Region), nil, nil
		}))

	var mu sync.Mutex
	notes := map[string]string{"a": "first"}
	must(srv.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "note://{name}", Name: "note", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			txt, ok := notes[vars["name"]]
			if !ok {
				return nil, mcp.ErrResourceNotFound
			}
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{{URI: uri, MimeType: "text/plain", Text: txt}}}, nil
		}))
	must(mcp.AddTool(srv, &protocol.Tool{Name: "set_note", Description: "Writes a note (resources/updated)."},
		func(ctx context.Context, req *mcp.Request, in noteIn) (*protocol.CallToolResult, any, error) {
			mu.Lock()
			notes[in.Name] = in.Text
			mu.Unlock()
			if err := req.NotifyResourceUpdated(ctx, "note://"+in.Name); err != nil {
				return nil, nil, err
			}
			return mcp.TextResult("saved"), nil, nil
		}))
	must(srv.AddPrompt(&protocol.Prompt{Name: "greet", Arguments: []*protocol.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.Request, args map[string]string) (*protocol.GetPromptResult, error) {
			return &protocol.GetPromptResult{Messages: []*protocol.PromptMessage{{Role: "user", Content: &protocol.TextContent{Text: "Greet " + args["name"]}}}}, nil
		}))
	srv.SetCompletionHandler(func(ctx context.Context, req *mcp.Request, p *protocol.CompleteParams) (*protocol.Completion, error) {
		var out []string
		for _, n := range []string{"Ada", "Alan", "Grace"} {
			if strings.HasPrefix(n, p.Argument.Value) {
				out = append(out, n)
			}
		}
		return &protocol.Completion{Values: out}, nil
	})
	return srv, mcpfleettest.NewServer(t, srv, nil)
}

// text joins the text blocks of content.
func text(blocks []protocol.Content) string {
	var b strings.Builder
	for _, c := range blocks {
		if t, ok := c.(*protocol.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// forEachEra runs f as a subtest per era.
func forEachEra(t *testing.T, f func(t *testing.T, era protocol.Era)) {
	for _, era := range mcpfleettest.Eras() {
		t.Run(era.String(), func(t *testing.T) { f(t, era) })
	}
}

// testContext bounds a test's waits.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
