package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Projects is an in-memory store of the deleted projects (a test double:
// a real server keeps them where every worker can reach them).
type Projects struct {
	mu      sync.Mutex
	deleted []string
}

// Delete records the deletion of name.
func (p *Projects) Delete(ctx context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, name)
	return nil
}

// Deleted returns the projects deleted so far, in order.
func (p *Projects) Deleted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deleted)
}

// Want is what a server does, in one era, where the three versions differ.
type Want struct {
	// Version is the protocol version the session negotiates.
	Version string
	// Sampling, Elicitation: summarize and delete_project work. False: the
	// call fails (a tool error or a JSON-RPC error) and the client was not
	// asked.
	Sampling, Elicitation bool
	// AllProgress: every progress notification arrives before the result.
	// False: at least one does.
	AllProgress bool
	// PromptArgsChecked: prompts/get without a required argument is a
	// JSON-RPC error, before the handler runs.
	PromptArgsChecked bool
	// NotFoundCode is the JSON-RPC code of a read of a missing resource.
	NotFoundCode int64
}

// Run serves every topic of the guide once in each era of want (by era
// name) against the MCP endpoint url; the server was built on projects.
func Run(t *testing.T, url string, projects *Projects, want map[string]Want) {
	for _, era := range Eras {
		w, ok := want[era.Name]
		if !ok {
			continue
		}
		era.Version = w.Version
		t.Run(era.Name, func(t *testing.T) { run(t, url, projects, era, w) })
	}
}

func run(t *testing.T, url string, projects *Projects, era Era, want Want) {
	r := &Recorder{}
	cs := Connect(t, url, era, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The typed tool: structured output, a tool error, a schema violation.
	res := Call(t, cs, "word_count", map[string]any{"text": "alpha beta\ngamma", "minLength": 5}, nil)
	var out struct{ Words, Lines int }
	Structured(t, res, &out)
	if res.IsError || out.Words != 2 || out.Lines != 2 {
		t.Errorf("word_count: isError %v, %+v (%s), want 2 words, 2 lines", res.IsError, out, Text(res.Content))
	}
	if res := Call(t, cs, "word_count", map[string]any{"text": " "}, nil); !res.IsError || Text(res.Content) == "" {
		t.Errorf("word_count of an empty text: isError %v %q, want a tool error", res.IsError, Text(res.Content))
	}
	if res := Call(t, cs, "word_count", map[string]any{"minLength": 1}, nil); !res.IsError {
		t.Errorf("word_count without text: %q, want a tool error", Text(res.Content))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "word_count" && tool.OutputSchema == nil {
			t.Error("word_count has no output schema")
		}
	}

	// A resource, a resource template, and a missing resource.
	for uri, text := range map[string]string{"projects://index": "alpha\nbeta", "projects://alpha/readme": "# alpha"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != text {
			t.Errorf("read %s: %v %v, want %q", uri, err, rr, text)
		}
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "projects://_secret/readme"})
	if code := errorCode(err); code != want.NotFoundCode {
		t.Errorf("read of a missing resource: %v (code %d), want code %d", err, code, want.NotFoundCode)
	}

	// The prompt, with and without its required argument.
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "code_review", Arguments: map[string]string{"code": "x := 1"}})
	if err != nil || len(pr.Messages) != 1 || Text([]mcp.Content{pr.Messages[0].Content}) != "Please review this code:\n\nx := 1" {
		t.Errorf("code_review: %v %v", err, pr)
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "code_review"})
	if got := err != nil; got != want.PromptArgsChecked {
		t.Errorf("code_review without its argument: error %v, want an error: %v", err, want.PromptArgsChecked)
	}

	// Sampling from inside a tool.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "summarize", Arguments: map[string]any{"text": "a long text"}})
	_, sampled, _ := r.Counts()
	switch {
	case want.Sampling && (err != nil || res.IsError || Text(res.Content) != Summary || sampled != 1):
		t.Errorf("summarize: %v %s, sampled %d times; want %q, once", err, result(res), sampled, Summary)
	case !want.Sampling && ((err == nil && !res.IsError) || sampled != 0):
		t.Errorf("summarize: %v %s, sampled %d times; want a failure", err, result(res), sampled)
	}

	// Elicitation from inside a tool: declined keeps, confirmed deletes,
	// once, although a 2026-07-28 call runs the handler twice.
	before := len(projects.Deleted())
	wantText := map[bool]string{false: "kept beta", true: "deleted alpha"}
	for _, confirm := range []bool{false, true} {
		r.SetConfirm(confirm)
		name := map[bool]string{false: "beta", true: "alpha"}[confirm]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_project", Arguments: map[string]any{"name": name}})
		ok := err == nil && !res.IsError && Text(res.Content) == wantText[confirm]
		if ok != want.Elicitation {
			t.Errorf("delete_project %s (confirm %v): %v %s", name, confirm, err, result(res))
		}
	}
	elicited, _, _ := r.Counts()
	deleted := projects.Deleted()[before:]
	if want.Elicitation && (elicited != 2 || !slices.Equal(deleted, []string{"alpha"})) {
		t.Errorf("the client was asked %d times (want 2); deleted %q (want alpha, once)", elicited, deleted)
	}
	if !want.Elicitation && (elicited != 0 || len(deleted) != 0) {
		t.Errorf("the client was asked %d times (want 0); deleted %q (want none)", elicited, deleted)
	}

	// Progress from a long tool.
	res = Call(t, cs, "reindex", map[string]any{"steps": 3}, mcp.Meta{"progressToken": "reindex-" + era.Name})
	if got := Text(res.Content); got != "reindexed in 3 steps" {
		t.Errorf("reindex: %q", got)
	}
	wait := time.Second // for the notifications that may be lost
	if want.AllProgress {
		wait = 10 * time.Second
	}
	p := r.WaitProgress(3, wait)
	if len(p) == 0 || (want.AllProgress && len(p) != 3) || p[0].Progress != 1 || p[0].Total != 3 || p[0].ProgressToken != "reindex-"+era.Name {
		t.Errorf("%d progress notifications, want 3 from 1/3 (all: %v)", len(p), want.AllProgress)
		for _, n := range p {
			t.Logf("  %+v", n)
		}
	}
}

func result(res *mcp.CallToolResult) string {
	if res == nil {
		return "no result"
	}
	return fmt.Sprintf("isError %v %q", res.IsError, Text(res.Content))
}

// errorCode is the JSON-RPC error code in err (0 if none).
func errorCode(err error) int64 {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
