// Package sdkclient drives the guide's servers with the official go-sdk
// client (v1.8.0), in both protocol eras, for the tests of this module.
package sdkclient

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An Era is one of the client's two modes.
type Era struct {
	Name    string
	Opts    *mcp.ClientSessionOptions
	Version string // the protocol version the session must end up with
}

// Eras are 2025-11-25 pinned (initialize, a session, server-to-client
// requests) and the client's default, 2026-07-28 (server/discover,
// per-request _meta, multi-round input requests).
var Eras = []Era{
	{"legacy", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "2025-11-25"},
	{"modern", nil, "2026-07-28"},
}

// Summary is what the client's model answers every sampling request with.
const Summary = "A one-line summary."

// Recorder is what the client's handlers saw, and how they answer.
type Recorder struct {
	mu       sync.Mutex
	confirm  bool
	elicited []string
	sampled  int
	progress []*mcp.ProgressNotificationParams
}

// SetConfirm sets the answer to elicitations: confirm true or false.
func (r *Recorder) SetConfirm(ok bool) { r.mu.Lock(); r.confirm = ok; r.mu.Unlock() }

// Counts returns how many elicitations and sampling requests the client
// answered, and how many progress notifications it got.
func (r *Recorder) Counts() (elicited, sampled, progress int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.elicited), r.sampled, len(r.progress)
}

// Progress returns the progress notifications received.
func (r *Recorder) Progress() []*mcp.ProgressNotificationParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), r.progress...)
}

// WaitProgress waits (up to max) for n progress notifications.
func (r *Recorder) WaitProgress(n int, max time.Duration) []*mcp.ProgressNotificationParams {
	deadline := time.Now().Add(max)
	for {
		if p := r.Progress(); len(p) >= n || time.Now().After(deadline) {
			return p
		}
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}

// Connect connects the go-sdk client to the MCP endpoint url in era;
// the session is closed when the test ends.
func Connect(t *testing.T, url string, era Era, r *Recorder) *mcp.ClientSession {
	t.Helper()
	var logs lockedBuffer
	c := mcp.NewClient(&mcp.Implementation{Name: "migrating-test", Version: "1.0"}, &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.elicited = append(r.elicited, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": r.confirm}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			r.mu.Lock()
			r.sampled++
			r.mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: Summary}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.mu.Lock()
			r.progress = append(r.progress, req.Params)
			r.mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, era.Opts)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("go-sdk client log:\n%s", logs.String())
		}
	})
	if v := cs.InitializeResult().ProtocolVersion; v != era.Version {
		t.Fatalf("protocol version %q, want %q", v, era.Version)
	}
	return cs
}

// Call calls a tool; a protocol error fails the test.
func Call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// Text is the text of a result's text blocks.
func Text(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Structured decodes a result's structuredContent into v.
func Structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("structuredContent %v: %v", res.StructuredContent, err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
