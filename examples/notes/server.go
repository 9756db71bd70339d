package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Tool inputs and outputs: their JSON schemas are derived from these types.
type (
	AddIn struct {
		Title string   `json:"title" jsonschema:"a short title"`
		Body  string   `json:"body,omitempty" jsonschema:"the note's text (Markdown)"`
		Tags  []string `json:"tags,omitempty"`
	}
	IDIn struct {
		ID string `json:"id" jsonschema:"the note's id (see list_notes)"`
	}
	AppendIn struct {
		ID   string `json:"id" jsonschema:"the note's id"`
		Text string `json:"text" jsonschema:"text to add at the end"`
	}
	ListIn struct {
		Tag string `json:"tag,omitempty" jsonschema:"only notes with this tag"`
	}
	ListOut struct {
		Notes []*Note `json:"notes"`
	}
	ReindexIn struct {
		DelayMs int `json:"delayMs,omitempty" jsonschema:"work per note in milliseconds (default 50)"`
	}
	ReindexOut struct {
		Notes int `json:"notes"`
		Words int `json:"words"`
	}
)

// noteURI is the resource of a note; subscribers of it hear of every
// change, on whichever frontend they are connected.
func noteURI(id string) string { return "notes://" + id }

// newServer builds the notes server on store.
func newServer(store Store, log *slog.Logger) (*mcp.Server, error) {
	srv := mcp.NewServer(protocol.Implementation{Name: "notes", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions:          "Notes: add, list, read (notes://{id}), append, summarize and delete notes.",
		ResourceSubscriptions: true,
		Logger:                log,
	})
	srv.AddToolMiddleware(logCalls(log))
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	add(mcp.AddTool(srv, &protocol.Tool{Name: "add_note", Description: "Adds a note and returns it."},
		func(ctx context.Context, req *mcp.Request, in AddIn) (*protocol.CallToolResult, *Note, error) {
			if strings.TrimSpace(in.Title) == "" {
				return mcp.ToolError("title must not be empty"), nil, nil
			}
			n, err := store.Add(ctx, in.Title, in.Body, in.Tags)
			return nil, n, err
		}))
	add(mcp.AddTool(srv, &protocol.Tool{Name: "list_notes", Description: "Lists the notes, oldest first."},
		func(ctx context.Context, req *mcp.Request, in ListIn) (*protocol.CallToolResult, ListOut, error) {
			all, err := store.List(ctx)
			out := ListOut{Notes: []*Note{}}
			for _, n := range all {
				if in.Tag == "" || contains(n.Tags, in.Tag) {
					out.Notes = append(out.Notes, n)
				}
			}
			return nil, out, err
		}))
	add(mcp.AddTool(srv, &protocol.Tool{Name: "append_note", Description: "Appends text to a note; its subscribers are told."},
		func(ctx context.Context, req *mcp.Request, in AppendIn) (*protocol.CallToolResult, *Note, error) {
			n, err := store.Append(ctx, in.ID, in.Text)
			if errors.Is(err, errNotFound) {
				return mcp.ToolError("no note " + in.ID), nil, nil
			}
			if err != nil {
				return nil, nil, err
			}
			return nil, n, req.NotifyResourceUpdated(ctx, noteURI(n.ID))
		}))
	add(mcp.AddTool(srv, &protocol.Tool{Name: "delete_note", Description: "Deletes a note, after the user confirms."}, deleteNote(store)))
	add(mcp.AddTool(srv, &protocol.Tool{Name: "summarize_note", Description: "Summarizes a note with the client's model (sampling)."}, summarize(store)))
	add(mcp.AddTool(srv, &protocol.Tool{Name: "reindex", Description: "Re-reads every note (slowly), reporting progress."}, reindex(store)))

	add(srv.AddResourceTemplate(&protocol.ResourceTemplate{URITemplate: "notes://{id}", Name: "note", MimeType: "text/markdown"},
		func(ctx context.Context, req *mcp.Request, uri string, vars map[string]string) (*protocol.ReadResourceResult, error) {
			n, err := store.Get(ctx, vars["id"])
			if errors.Is(err, errNotFound) {
				return nil, mcp.ErrResourceNotFound
			}
			if err != nil {
				return nil, err
			}
			return &protocol.ReadResourceResult{Contents: []*protocol.ResourceContents{
				{URI: uri, MimeType: "text/markdown", Text: "# " + n.Title + "\n\n" + n.Body},
			}}, nil
		}))
	add(srv.AddPrompt(&protocol.Prompt{Name: "review_note", Description: "Asks the model to review a note.",
		Arguments: []*protocol.PromptArgument{{Name: "id", Description: "the note's id", Required: true}}},
		func(ctx context.Context, req *mcp.Request, args map[string]string) (*protocol.GetPromptResult, error) {
			n, err := store.Get(ctx, args["id"])
			if errors.Is(err, errNotFound) {
				return nil, protocol.NewError(protocol.CodeInvalidParams, "no note %q", args["id"])
			}
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Review this note for clarity and suggest improvements.\n\n# %s\n\n%s", n.Title, n.Body)
			return &protocol.GetPromptResult{Description: "Review of " + n.Title,
				Messages: []*protocol.PromptMessage{{Role: "user", Content: &protocol.TextContent{Text: text}}}}, nil
		}))
	// Completion of note ids, for the prompt's argument and the template's
	// variable.
	srv.SetCompletionHandler(func(ctx context.Context, req *mcp.Request, p *protocol.CompleteParams) (*protocol.Completion, error) {
		if p.Argument.Name != "id" {
			return nil, nil
		}
		all, err := store.List(ctx)
		if err != nil {
			return nil, err
		}
		c := &protocol.Completion{Values: []string{}}
		for _, n := range all {
			if strings.HasPrefix(n.ID, p.Argument.Value) {
				c.Values = append(c.Values, n.ID)
			}
		}
		return c, nil
	})
	return srv, errors.Join(errs...)
}

// lookup gets a note; a missing one is a tool error the model can act on.
func lookup(ctx context.Context, store Store, id string) (*Note, *protocol.CallToolResult, error) {
	n, err := store.Get(ctx, id)
	if errors.Is(err, errNotFound) {
		return nil, mcp.ToolError("no note " + id), nil
	}
	return n, nil, err
}

// confirmSchema is the form the user fills to confirm a deletion.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete the note?"}},"required":["confirm"]}`)

// deleteNote asks the user to confirm (elicitation) before deleting: a
// legacy session gets elicitation/create on the call's stream; a
// 2026-07-28 request ends with input_required and is retried with the
// answer, on any worker.
func deleteNote(store Store) mcp.TypedToolHandler[IDIn, any] {
	return func(ctx context.Context, req *mcp.Request, in IDIn) (*protocol.CallToolResult, any, error) {
		n, missing, err := lookup(ctx, store, in.ID)
		if missing != nil || err != nil {
			return missing, nil, err
		}
		res, err := req.Elicit(ctx, &protocol.ElicitParams{Message: fmt.Sprintf("Delete the note %q?", n.Title), RequestedSchema: confirmSchema})
		if errors.Is(err, mcp.ErrCapability) && req.Era() == protocol.EraLegacy {
			// (A 2026-07-28 client gets the error itself: -32021 naming
			// the capability it must declare.)
			return mcp.ToolError("deleting needs the user's confirmation, and this client cannot ask (no elicitation capability)"), nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if res.Action != protocol.ElicitAccept || res.Content["confirm"] != true {
			return mcp.TextResult("kept note " + in.ID), nil, nil
		}
		if err := store.Delete(ctx, in.ID); err != nil && !errors.Is(err, errNotFound) {
			return nil, nil, err
		}
		return mcp.TextResult("deleted note " + in.ID), nil, req.NotifyResourceUpdated(ctx, noteURI(in.ID))
	}
}

// summarize asks the client's model for a summary (sampling).
func summarize(store Store) mcp.TypedToolHandler[IDIn, any] {
	return func(ctx context.Context, req *mcp.Request, in IDIn) (*protocol.CallToolResult, any, error) {
		n, missing, err := lookup(ctx, store, in.ID)
		if missing != nil || err != nil {
			return missing, nil, err
		}
		res, err := req.Sample(ctx, &protocol.CreateMessageParams{
			MaxTokens: 200,
			Messages: []*protocol.SamplingMessage{{Role: "user", Content: protocol.SingleOrList{Blocks: []protocol.Content{
				&protocol.TextContent{Text: "Summarize this note in one sentence.\n\n# " + n.Title + "\n\n" + n.Body},
			}}}},
		})
		if err != nil {
			return nil, nil, err
		}
		var parts []string
		for _, b := range res.Content.Blocks {
			if t, ok := b.(*protocol.TextContent); ok {
				parts = append(parts, t.Text)
			}
		}
		return mcp.TextResult(strings.Join(parts, "\n")), nil, nil
	}
}

// reindex is a long tool: it reports progress after each note and stops
// when the client cancels.
func reindex(store Store) mcp.TypedToolHandler[ReindexIn, ReindexOut] {
	return func(ctx context.Context, req *mcp.Request, in ReindexIn) (*protocol.CallToolResult, ReindexOut, error) {
		delay := time.Duration(in.DelayMs) * time.Millisecond
		if in.DelayMs <= 0 {
			delay = 50 * time.Millisecond
		}
		all, err := store.List(ctx)
		if err != nil {
			return nil, ReindexOut{}, err
		}
		out := ReindexOut{}
		for i, n := range all {
			select {
			case <-ctx.Done():
				return nil, out, ctx.Err()
			case <-time.After(delay):
			}
			out.Notes++
			out.Words += len(strings.Fields(n.Body))
			if err := req.Progress(ctx, float64(i+1), float64(len(all)), "indexed "+n.Title); err != nil {
				return nil, out, err
			}
		}
		return nil, out, nil
	}
}

// logCalls logs every tool call: tool, session, principal, duration and
// outcome (never the arguments, which may be private, nor a whole session
// id, which lets its holder use the session).
func logCalls(log *slog.Logger) mcp.ToolMiddleware {
	return func(next mcp.ToolHandler) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.Request, args json.RawMessage) (*protocol.CallToolResult, error) {
			start := time.Now()
			res, err := next(ctx, req, args)
			outcome := "ok"
			switch {
			case errors.Is(err, mcp.ErrInputRequired):
				outcome = "input_required"
			case err != nil:
				outcome = "error"
			case res != nil && res.IsError:
				outcome = "tool_error"
			}
			log.InfoContext(ctx, "tool call", "tool", req.Name(), "session", short(req.SessionID()), "principal", req.Principal(),
				"duration", time.Since(start).Round(time.Microsecond), "outcome", outcome)
			return res, err
		}
	}
}

// short is the first 8 bytes of a session id: enough to follow one in
// the logs.
func short(id string) string { return id[:min(len(id), 8)] }

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
