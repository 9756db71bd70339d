package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/worker"
)

// slowStore is a store with slow record writes; it counts the writes
// begun.
type slowStore struct {
	sessionstore.Store
	begun *atomic.Int32
}

func (s slowStore) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	s.begun.Add(1)
	time.Sleep(150 * time.Millisecond) // the behaviour under test: a slow Redis round trip
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
	var finished, slowWrites atomic.Int32
	srv := taskServer(t, func(s *mcp.Server) {
		_ = s.AddTool(&protocol.Tool{Name: "quick"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			time.Sleep(500 * time.Millisecond) // the behaviour under test: the tasks finish after the shutdown began
			finished.Add(1)
			return mcp.TextResult("ok"), nil
		}, mcp.WithTasks(mcp.TaskOptional))
	})
	wnc, _ := e.Connect("w")
	w, _ := worker.New(bus.NATS(wnc), srv, &worker.Options{Logger: quiet})
	_ = w.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
	var urls []string
	var fes []*frontend.Frontend
	for i, st := range []sessionstore.Store{slowStore{mem, &slowWrites}, mem} {
		nc, _ := e.Connect("fe")
		fe, err := frontend.New(bus.NATS(nc), frontend.Options{Store: st, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		_ = fe.Start(context.Background())
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = fe.Shutdown(ctx)
		})
		hs := httptest.NewServer(fe.Router("/mcp"))
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
	// The finish writes are queued now: every handler returned, and
	// frontend 0 (a task writer, like frontend 1) has begun one.
	testutil.Poll(t, "the 20 handlers to return and frontend 0 to begin a finish write", func() bool {
		return finished.Load() == 20 && slowWrites.Load() > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = fes[0].Shutdown(ctx) // frontend 0 drains (no HTTP traffic of its own)
	cancel()
	// The writes frontend 0 left queued are frontend 1's now.
	testutil.WaitFor(testenv.HangGuard(10*time.Second), func() bool {
		for _, id := range ids {
			if getTask(t, c, 98, id).Status != "completed" {
				return false
			}
		}
		return true
	})
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
