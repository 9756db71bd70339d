package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

type slowStore struct{ sessionstore.Store }

func (s slowStore) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	time.Sleep(150 * time.Millisecond) // a slow Redis round trip
	return s.Store.SetRecord(ctx, key, ver, data)
}

// A frontend that shuts down finishes the task writes it took and leaves
// the queued ones to the other frontends (Drain): no completed task loses
// its outcome.

func TestTaskFrontendShutdownKeepsWrites(t *testing.T) {
	e, _ := bus.StartEmbedded(nil)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	mem, _ := sessionstore.NewMemory(nil)
	t.Cleanup(func() { _ = mem.Close(context.Background()) })
	srv := taskServer(t, func(s *mcp.Server) {
		_ = s.AddTool(&protocol.Tool{Name: "quick"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			time.Sleep(500 * time.Millisecond)
			return mcp.TextResult("ok"), nil
		}, mcp.WithTasks(mcp.TaskOptional))
	})
	wnc, _ := e.Connect("w")
	w, _ := worker.New(wnc, srv, &worker.Options{Logger: quiet})
	_ = w.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
	var urls []string
	var fes []*frontend.Frontend
	for i, st := range []sessionstore.Store{slowStore{mem}, mem} {
		nc, _ := e.Connect("fe")
		fe, err := frontend.New(nc, frontend.Options{Store: st, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		_ = fe.Start(context.Background())
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = fe.Shutdown(ctx)
		})
		hs := httptest.NewServer(fe.Router("/mcp", nil))
		t.Cleanup(hs.Close)
		urls = append(urls, hs.URL+"/mcp")
		fes = append(fes, fe)
		_ = i
	}
	c := testenv.NewModernClient(t, urls[1])
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, startTask(t, c, i, "quick", map[string]any{}).TaskID)
	}
	time.Sleep(700 * time.Millisecond) // the finish writes are queued now
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = fes[0].Shutdown(ctx) // frontend 0 drains (no HTTP traffic of its own)
	cancel()
	time.Sleep(6 * time.Second)
	lost := 0
	for _, id := range ids {
		v := getTask(t, c, 99, id)
		if v.Status != "completed" {
			lost++
			t.Logf("task %s: %s %q", id, v.Status, v.StatusMessage)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d completed tasks lost their outcome when a frontend shut down", lost, len(ids))
	}
}
