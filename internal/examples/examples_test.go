// Package examples tests the example servers of examples/, each its own
// Go module built against this checkout: through nginx to 2 frontends
// (the project's frontend binary) and 2 workers running the example,
// driven by the official Go SDK client in both protocol eras, and as the
// all-in-one and over stdio.
package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eras are the client's two modes: 2025-11-25 pinned (initialize and a
// session), or its default 2026-07-28 (server/discover, per-request
// _meta, subscriptions/listen, multi-round input).
var eras = []struct {
	name string
	opts *mcp.ClientSessionOptions
	want string
}{
	{"legacy", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25"},
	{"modern", nil, "2026-07-28"},
}

// events collects what the client's handlers saw.
type events struct {
	mu        sync.Mutex
	progress  []*mcp.ProgressNotificationParams
	updated   []string
	acks      []mcp.NotificationSubscriptions
	getOpen   bool
	elicited  []string
	sampled   int
	confirmOK bool // the elicitation answer: confirm true or false
}

func (e *events) with(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
}

// wait polls cond (under the lock) until it holds, within a generous
// hang guard.
func (e *events) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ok bool
		e.with(func() { ok = cond() })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}

// watchGET is a RoundTripper that notes when the client's GET stream is
// open (legacy: change notifications arrive on it).
type watchGET struct{ e *events }

func (w watchGET) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		w.e.with(func() { w.e.getOpen = true })
	}
	return resp, err
}

// connect connects the Go SDK client to url in one era.
func connect(t *testing.T, url string, opts *mcp.ClientSessionOptions, e *events) *mcp.ClientSession {
	t.Helper()
	var logs bytes.Buffer
	var lmu sync.Mutex
	c := mcp.NewClient(&mcp.Implementation{Name: "examples-test", Version: "1.0"}, &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &lmu, b: &logs}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			var ok bool
			e.with(func() { e.elicited = append(e.elicited, req.Params.Message); ok = e.confirmOK })
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": ok}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			e.with(func() { e.sampled++ })
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "A one-line summary."}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			e.with(func() { e.progress = append(e.progress, req.Params) })
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			e.with(func() { e.updated = append(e.updated, req.Params.URI) })
		},
	})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
				e.with(func() { e.acks = append(e.acks, p.Notifications) })
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: watchGET{e}}, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, opts)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			lmu.Lock()
			t.Logf("Go SDK log:\n%s", logs.String())
			lmu.Unlock()
		}
	})
	return cs
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// call calls a tool and returns its result, failing on an error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: isError: %s", name, text(res))
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structuredContent into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || json.Unmarshal(b, v) != nil {
		t.Fatalf("structuredContent %v: %v", res.StructuredContent, err)
	}
}

// cluster starts nats-server, redis-server, 2 workers running
// command, 2 frontends and nginx (nginx's MCP URL is ProxyURL).
func cluster(t *testing.T, command []string, workerArgs ...string) *testenv.Cluster {
	t.Helper()
	return testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true, WorkerCommand: command, WorkerArgs: workerArgs})
}

func TestHello(t *testing.T) {
	bin := testenv.BuildExample(t, "hello")
	greet := func(t *testing.T, cs *mcp.ClientSession) {
		if got := text(call(t, cs, "greet", map[string]any{"name": "Ada"}, nil)); got != "Hello, Ada!" {
			t.Errorf("greet: %q", got)
		}
	}
	t.Run("cluster", func(t *testing.T) {
		url := cluster(t, []string{bin, "worker"}).ProxyURL
		for _, era := range eras {
			t.Run(era.name, func(t *testing.T) {
				cs := connect(t, url, era.opts, &events{})
				if v := cs.InitializeResult().ProtocolVersion; v != era.want {
					t.Fatalf("negotiated %s, want %s", v, era.want)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var names []string
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tool.Name)
				}
				if !slices.Equal(names, []string{"greet"}) {
					t.Errorf("tools %v, want [greet]", names)
				}
				greet(t, cs)
			})
		}
	})
	t.Run("serve", func(t *testing.T) {
		p := testenv.Start(t, "hello", bin, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
		url := p.WaitLog(t, testenv.ServingRE, 20*time.Second)
		for _, era := range eras {
			greet(t, connect(t, url, era.opts, &events{}))
		}
	})
	t.Run("stdio", func(t *testing.T) {
		greet(t, connectStdio(t, bin, &events{}))
	})
}

// connectStdio starts bin's stdio role under the Go SDK client's command
// transport (2025-11-25), its progress fed to e; closed at cleanup.
func connectStdio(t *testing.T, bin string, e *events) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "examples-test", Version: "1.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			e.with(func() { e.progress = append(e.progress, req.Params) })
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "stdio")}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestNotes(t *testing.T) {
	bin := testenv.BuildExample(t, "notes")
	_, notesRedis := testenv.StartRedisServer(t)
	c := cluster(t, []string{bin, "worker"}, "--notes-redis-url", notesRedis)
	url := c.ProxyURL
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			e := &events{}
			cs := connect(t, url, era.opts, e)
			if v := cs.InitializeResult().ProtocolVersion; v != era.want {
				t.Fatalf("negotiated %s, want %s", v, era.want)
			}
			legacy := era.name == "legacy"

			// Typed tools with structured output; the notes live in Redis,
			// so whichever worker serves the next call sees them.
			var n struct{ ID, Title, Body string }
			structured(t, call(t, cs, "add_note", map[string]any{"title": "Groceries " + era.name, "body": "milk", "tags": []string{"home"}}, nil), &n)
			if n.ID == "" || n.Title != "Groceries "+era.name {
				t.Fatalf("add_note: %+v", n)
			}
			var list struct{ Notes []struct{ ID string } }
			for i := 0; i < 4; i++ { // both workers, whatever the balancing
				structured(t, call(t, cs, "list_notes", map[string]any{"tag": "home"}, nil), &list)
				if !slices.ContainsFunc(list.Notes, func(x struct{ ID string }) bool { return x.ID == n.ID }) {
					t.Fatalf("list_notes %d does not have note %s: %+v", i, n.ID, list)
				}
			}

			// A subscription to the note's resource hears of an append
			// made through another frontend and worker.
			uri := "notes://" + n.ID
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if legacy {
				e.wait(t, "the GET stream", func() bool { return e.getOpen })
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			if !legacy {
				e.wait(t, "the listen acknowledgement of "+uri, func() bool {
					return slices.ContainsFunc(e.acks, func(a mcp.NotificationSubscriptions) bool { return slices.Contains(a.ResourceSubscriptions, uri) })
				})
			}
			call(t, cs, "append_note", map[string]any{"id": n.ID, "text": " and eggs"}, nil)
			e.wait(t, "notifications/resources/updated for "+uri, func() bool { return slices.Contains(e.updated, uri) })
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "milk and eggs") {
				t.Fatalf("read %s: %v %+v", uri, err, rr)
			}

			// A prompt with completion of note ids.
			comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "review_note"},
				Argument: mcp.CompleteParamsArgument{Name: "id", Value: n.ID[:1]}})
			if err != nil || !slices.Contains(comp.Completion.Values, n.ID) {
				t.Fatalf("complete: %v %+v", err, comp)
			}
			pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review_note", Arguments: map[string]string{"id": n.ID}})
			if err != nil || len(pr.Messages) != 1 {
				t.Fatalf("review_note: %v %+v", err, pr)
			}

			// Sampling: the client's model writes the summary.
			if got := text(call(t, cs, "summarize_note", map[string]any{"id": n.ID}, nil)); got != "A one-line summary." {
				t.Errorf("summarize_note: %q", got)
			}

			// Progress on the long tool.
			tok := "reindex-" + era.name
			var ri struct{ Notes int }
			structured(t, call(t, cs, "reindex", map[string]any{"delayMs": 5}, mcp.Meta{"progressToken": tok}), &ri)
			if ri.Notes < 1 {
				t.Errorf("reindex: %+v", ri)
			}
			e.wait(t, "progress of reindex", func() bool {
				return slices.ContainsFunc(e.progress, func(p *mcp.ProgressNotificationParams) bool { return fmt.Sprint(p.ProgressToken) == tok })
			})

			// Elicitation guards the destructive action: declined, the note
			// stays; confirmed, it goes (modern: multi-round, the retry on
			// any worker).
			if got := text(call(t, cs, "delete_note", map[string]any{"id": n.ID}, nil)); got != "kept note "+n.ID {
				t.Errorf("delete_note declined: %q", got)
			}
			e.with(func() { e.confirmOK = true })
			if got := text(call(t, cs, "delete_note", map[string]any{"id": n.ID}, nil)); got != "deleted note "+n.ID {
				t.Errorf("delete_note confirmed: %q", got)
			}
			e.with(func() {
				if len(e.elicited) != 2 || e.sampled != 1 {
					t.Errorf("elicitations %q, samplings %d; want 2 and 1", e.elicited, e.sampled)
				}
			})
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("%s still readable after the delete", uri)
			}
		})
	}
	// The logging middleware logged every tool call on the worker that ran
	// it: tool, session (legacy), outcome.
	logs := c.Workers[0].Log() + c.Workers[1].Log()
	for _, want := range []string{`msg="tool call" tool=add_note session=`, `tool=delete_note`, `outcome=ok`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the workers' logs have no %q:\n%s", want, logs)
		}
	}
	if !regexp.MustCompile(`msg="tool call" tool=add_note session=\S{8} `).MatchString(logs) {
		t.Errorf("no tool call logged with its legacy session id:\n%s", logs)
	}
}
