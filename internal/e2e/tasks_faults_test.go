package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
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
	"github.com/nats-io/nats.go"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func taskServer(t *testing.T, add func(s *mcp.Server)) *mcp.Server {
	s := mcp.NewServer(protocol.Implementation{Name: "task-tests", Version: "0"}, &mcp.ServerOptions{Logger: quiet})
	add(s)
	return s
}

func elicitParams(msg string) *protocol.ElicitParams {
	return &protocol.ElicitParams{Mode: protocol.ElicitModeForm, Message: msg, RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}
}

func answer(t *testing.T, c *testenv.Client, id int, taskID, key string) {
	t.Helper()
	ack := taskOf(t, modern(t, c, id, "tasks/update", map[string]any{"taskId": taskID,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"x": key}}}}, tasksCaps, nil))
	if ack.ResultType != "complete" {
		t.Fatalf("ack %+v", ack)
	}
}

// Two goroutines of one task handler waiting in Inputs both wake up when
// their answers arrive, in any order (a single wake-up token once let one
// waiter sleep forever).
func TestTaskConcurrentInputs(t *testing.T) {
	srv := taskServer(t, func(s *mcp.Server) {
		_ = s.AddTool(&protocol.Tool{Name: "pair"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, k := range []string{"a", "b"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = req.Input(ctx, k, protocol.MethodElicitationCreate, elicitParams(k))
				}()
			}
			wg.Wait()
			return mcp.TextResult("both answered"), nil
		}, mcp.WithTasks(mcp.TaskOptional))
	})
	ip := testenv.StartInProc(t, testenv.InProcOptions{Server: srv})
	c := testenv.NewModernClient(t, ip.URL)
	hung := 0
	const runs = 10
	for run := 0; run < runs; run++ {
		task := startTask(t, c, 1, "pair", map[string]any{})
		// both goroutines have asked
		var asked taskView
		if !testutil.WaitFor(testenv.HangGuard(5*time.Second), func() bool {
			asked = getTask(t, c, 2, task.TaskID)
			return asked.Status == "input_required" && len(asked.InputRequests) == 2
		}) {
			t.Fatalf("never asked both: %+v", asked)
		}
		first, second := "a", "b"
		if run%2 == 1 {
			first, second = "b", "a"
		}
		answer(t, c, 3, task.TaskID, first)
		time.Sleep(50 * time.Millisecond) // the behaviour under test: the two answers arrive apart
		answer(t, c, 4, task.TaskID, second)
		var v taskView
		testutil.WaitFor(testenv.HangGuard(2*time.Second), func() bool {
			v = getTask(t, c, 5, task.TaskID)
			return v.Status == "completed"
		})
		if v.Status != "completed" {
			hung++
			t.Logf("run %d: every input answered, task still %q after 2s (handler stuck until the 1h task deadline)", run, v.Status)
		}
	}
	if hung > 0 {
		t.Errorf("%d of %d runs hung", hung, runs)
	}
}

// wrapStore lets a test break SetRecord the way a Redis timeout does: the
// write lands, the caller gets an error.
type wrapStore struct {
	sessionstore.Store
	ambiguous atomic.Bool
}

func (w *wrapStore) SetRecord(ctx context.Context, key string, ver int64, data []byte) error {
	err := w.Store.SetRecord(ctx, key, ver, data)
	if err == nil && w.ambiguous.CompareAndSwap(true, false) {
		return context.DeadlineExceeded // applied, but the reply was lost / timed out
	}
	return err
}

type rig struct {
	url   string
	store *wrapStore
	e     *bus.Embedded
}

func startRig(t *testing.T, srv *mcp.Server, workerURL string) *rig {
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return startRigOn(t, e, srv, workerURL)
}

func startRigOn(t *testing.T, e *bus.Embedded, srv *mcp.Server, workerURL string) *rig {
	fnc, err := e.Connect("fe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fnc.Close)
	var wnc *nats.Conn
	if workerURL == "" {
		wnc, err = e.Connect("w")
	} else {
		wnc, err = bus.Connect(workerURL, &bus.ConnectOptions{Name: "w", Logger: quiet})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	mem, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close(context.Background()) })
	st := &wrapStore{Store: mem}
	w, _ := worker.New(bus.NATS(wnc), srv, &worker.Options{Logger: quiet})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
	fe, err := frontend.New(bus.NATS(fnc), frontend.Options{Store: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := fe.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = fe.Shutdown(ctx)
	})
	hs := httptest.NewServer(fe.Router("/mcp"))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return &rig{url: hs.URL + "/mcp", store: st, e: e}
}

// Accepted input responses are kept in the task record: when the
// compare-and-set lands but the frontend sees an error (or the nudge to
// the worker is lost), the worker still reads the answer from the store
// and the task goes on.
func TestTaskInputSurvivesStoreError(t *testing.T) {
	srv := taskServer(t, func(s *mcp.Server) {
		_ = s.AddTool(&protocol.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			if _, err := req.Input(ctx, "a", protocol.MethodElicitationCreate, elicitParams("a")); err != nil {
				return nil, err
			}
			return mcp.TextResult("done"), nil
		}, mcp.WithTasks(mcp.TaskOptional))
	})
	r := startRig(t, srv, "")
	c := testenv.NewModernClient(t, r.url)
	task := startTask(t, c, 1, "ask", map[string]any{})
	pollTask(t, c, task.TaskID, 5*time.Second, "input_required")
	r.store.ambiguous.Store(true)
	rep := modern(t, c, 2, "tasks/update", map[string]any{"taskId": task.TaskID,
		"inputResponses": map[string]any{"a": map[string]any{"action": "accept", "content": map[string]any{"x": "1"}}}}, tasksCaps, nil)
	t.Logf("first tasks/update: %s", rep)
	// The client retries, as told.
	rep = modern(t, c, 3, "tasks/update", map[string]any{"taskId": task.TaskID,
		"inputResponses": map[string]any{"a": map[string]any{"action": "accept", "content": map[string]any{"x": "1"}}}}, tasksCaps, nil)
	t.Logf("retry: %s", rep)
	var v taskView
	testutil.WaitFor(testenv.HangGuard(2*time.Second), func() bool {
		v = getTask(t, c, 4, task.TaskID)
		return v.Status == "completed"
	})
	if v.Status != "completed" {
		t.Errorf("task is %q 2s after its only input was accepted (handler blocked until the 1h deadline)", v.Status)
	}
}

// proxy forwards TCP to target and can cut every connection and refuse
// new ones for a while (a network blip between a worker and NATS).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	down   atomic.Bool
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A worker behind a NATS reconnect (a network blip, a NATS server restart
// or failover) is not taken for dead: its task goes on and completes
// (one "no responders" once failed it for good).
func TestTaskWorkerBehindNATSBlip(t *testing.T) {
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: "127.0.0.1:-1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	p := startProxy(t, e.ClientURL()[len("nats://"):])
	srv := taskServer(t, func(s *mcp.Server) {
		_ = s.AddTool(&protocol.Tool{Name: "work"}, func(ctx context.Context, req *mcp.Request, _ json.RawMessage) (*protocol.CallToolResult, error) {
			select {
			case <-time.After(2 * time.Second):
				return mcp.TextResult("worked"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, mcp.WithTasks(mcp.TaskOptional))
	})
	r := startRigOn(t, e, srv, "nats://"+p.ln.Addr().String())
	c := testenv.NewModernClient(t, r.url)
	task := startTask(t, c, 1, "work", map[string]any{})
	// 500 ms blip between the worker and NATS.
	p.down.Store(true)
	p.cut()
	time.Sleep(100 * time.Millisecond) // the behaviour under test: 100 ms into the blip
	v := getTask(t, c, 2, task.TaskID) // a poll during the blip
	t.Logf("poll during the blip: %s %s", v.Status, v.StatusMessage)
	time.Sleep(400 * time.Millisecond) // the behaviour under test: the rest of the 500 ms blip
	p.down.Store(false)
	v = pollTask(t, c, task.TaskID, 5*time.Second, "completed", "failed", "cancelled")
	if v.Status != "completed" {
		t.Errorf("live worker's task ended %q (%s); the worker finished it ~1.5s later and its result was dropped", v.Status, v.StatusMessage)
	}
}
