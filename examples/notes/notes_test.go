package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/mcpfleettest"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The notes server tested the way a server author tests theirs: served by
// mcpfleettest (the all-in-one, on a loopback port) and called in both
// protocol eras by its client, whose handlers answer elicitation and
// sampling.
func TestNotes(t *testing.T) {
	srv, err := newServer(NewMemoryStore(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := mcpfleettest.NewServer(t, srv, nil)
	for _, era := range mcpfleettest.Eras() {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			confirm := false
			var progress []float64
			c := ts.Connect(t, &mcpfleettest.ClientOptions{
				Era: era,
				Elicit: func(ctx context.Context, p *protocol.ElicitParams) (*protocol.ElicitResult, error) {
					return &protocol.ElicitResult{Action: protocol.ElicitAccept, Content: map[string]any{"confirm": confirm}}, nil
				},
				Sample: func(ctx context.Context, p *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
					return &protocol.CreateMessageResult{Role: "assistant", Model: "test",
						Content: protocol.SingleOrList{Blocks: []protocol.Content{&protocol.TextContent{Text: "Short."}}}}, nil
				},
				OnProgress: func(p *protocol.ProgressParams) { progress = append(progress, p.Progress) },
			})

			res, err := c.CallTool(ctx, "add_note", map[string]any{"title": "Plan", "body": "one two three"})
			if err != nil || res.IsError {
				t.Fatalf("add_note: %v %+v", err, res)
			}
			var n Note
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &n); err != nil || n.ID == "" {
				t.Fatalf("add_note structured content %s", b)
			}

			uri := noteURI(n.ID)
			s, err := c.Listen(ctx, &protocol.SubscriptionFilter{ResourceSubscriptions: []string{uri}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := c.CallTool(ctx, "append_note", map[string]any{"id": n.ID, "text": " four"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.WaitFor(ctx, protocol.NotificationResourceUpdated); err != nil {
				t.Fatalf("no resources/updated for %s: %v", uri, err)
			}

			if res, err := c.CallTool(ctx, "summarize_note", map[string]any{"id": n.ID}); err != nil || textOf(res) != "Short." {
				t.Errorf("summarize_note: %v %+v", err, res)
			}
			if res, err := c.CallTool(ctx, "reindex", map[string]any{"delayMs": 1}); err != nil || res.IsError || len(progress) == 0 {
				t.Errorf("reindex: %v %+v, progress %v", err, res, progress)
			}
			if res, _ := c.CallTool(ctx, "delete_note", map[string]any{"id": n.ID}); textOf(res) != "kept note "+n.ID {
				t.Errorf("delete_note declined: %+v", res)
			}
			confirm = true
			if res, _ := c.CallTool(ctx, "delete_note", map[string]any{"id": n.ID}); textOf(res) != "deleted note "+n.ID {
				t.Errorf("delete_note confirmed: %+v", res)
			}
			if _, err := c.ReadResource(ctx, uri); err == nil {
				t.Errorf("%s still readable", uri)
			}
		})
	}
}

func textOf(res *protocol.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*protocol.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
