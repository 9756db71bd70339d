package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// TestConcurrentHandleWhileRegistering runs tools/list walks and tools/call
// from many goroutines while another adds and removes tools. Run it with
// -race. Every walk must list the stable tools exactly once, in strictly
// increasing order, whatever changes between pages.
func TestConcurrentHandleWhileRegistering(t *testing.T) {
	s := newServer(t, &mcp.ServerOptions{PageSize: 3})
	s.SetEvents(&eventLog{})
	var stable []string
	for i := range 10 {
		stable = append(stable, fmt.Sprintf("s%d", i))
	}
	addTools(t, s, stable...)

	const (
		readers = 6
		rounds  = 40
	)
	ctx := context.Background()
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("f%d", i%7)
			if i%2 == 0 {
				if err := s.AddTool(&protocol.Tool{Name: name}, textTool(name)); err != nil {
					t.Errorf("AddTool(%s): %v", name, err)
					return
				}
			} else {
				s.RemoveTools(name)
			}
			if i%5 == 0 {
				_ = s.AddPrompt(&protocol.Prompt{Name: name}, func(context.Context, *mcp.Request, map[string]string) (*protocol.GetPromptResult, error) {
					return &protocol.GetPromptResult{}, nil
				})
			}
		}
	}()

	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				if err := walkTools(ctx, s, stable); err != nil {
					t.Errorf("reader %d round %d: %v", r, i, err)
					return
				}
				if err := callConcurrently(ctx, s, stable[i%len(stable)], fmt.Sprintf("f%d", i%7)); err != nil {
					t.Errorf("reader %d round %d: %v", r, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
}

// walkTools follows the tools/list cursor chain and checks its invariants.
// It runs off the test goroutine, so it reports instead of failing.
func walkTools(ctx context.Context, s *mcp.Server, stable []string) error {
	var (
		all    []string
		cursor *string
	)
	for page := 0; ; page++ {
		if page > 50 {
			return errors.New("the cursor chain does not end")
		}
		params := `{}`
		if cursor != nil {
			params = `{"cursor":` + quote(*cursor) + `}`
		}
		res, err := s.Handle(ctx, legacyReq(protocol.MethodToolsList), json.RawMessage(params))
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		l, ok := res.(*protocol.ListToolsResult)
		if !ok {
			return fmt.Errorf("tools/list returned %T", res)
		}
		for _, tl := range l.Tools {
			all = append(all, tl.Name)
		}
		if l.NextCursor == nil {
			break
		}
		cursor = l.NextCursor
	}
	for i := 1; i < len(all); i++ {
		if all[i-1] >= all[i] {
			return fmt.Errorf("walk is not strictly increasing: %v", all)
		}
	}
	for _, n := range stable {
		if !slices.Contains(all, n) {
			return fmt.Errorf("walk %v misses stable tool %s", all, n)
		}
	}
	return nil
}

// callConcurrently calls a stable tool (must succeed) and a flapping one
// (succeeds or is unknown).
func callConcurrently(ctx context.Context, s *mcp.Server, stableName, flappyName string) error {
	res, err := s.Handle(ctx, legacyReq(protocol.MethodToolsCall), json.RawMessage(`{"name":`+quote(stableName)+`}`))
	if err != nil {
		return fmt.Errorf("calling %s: %w", stableName, err)
	}
	if r, ok := res.(*protocol.CallToolResult); !ok || r.IsError {
		return fmt.Errorf("calling %s: got %+v", stableName, res)
	}
	res, err = s.Handle(ctx, legacyReq(protocol.MethodToolsCall), json.RawMessage(`{"name":`+quote(flappyName)+`}`))
	switch {
	case err != nil && !errors.Is(err, protocol.ErrInvalidParams):
		return fmt.Errorf("calling %s: %w, want a result or -32602", flappyName, err)
	case err == nil:
		if r, ok := res.(*protocol.CallToolResult); !ok || r.IsError {
			return fmt.Errorf("calling %s: got %+v", flappyName, res)
		}
	}
	return nil
}
