package stdio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/stdio"
)

func newServer(t *testing.T, obs fixture.Observer) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(protocol.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := fixture.RegisterDemo(s, obs); err != nil {
		t.Fatal(err)
	}
	return s
}

// sleepStarted tells of the demo sleep handlers that started.
type sleepStarted chan struct{}

func (c sleepStarted) SleepStarted(context.Context, *mcp.Request)   { c <- struct{}{} }
func (c sleepStarted) SleepCancelled(context.Context, *mcp.Request) {}

// Serve returns ctx's error when ctx ends it, cancels the handlers in
// flight and leaves no goroutine behind.
func TestServeStopsWithContext(t *testing.T) {
	before := runtime.NumGoroutine()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(sleepStarted, 1)
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(ctx, newServer(t, started), inR, outW, &stdio.Options{Logger: slog.New(slog.DiscardHandler)})
	}()
	lines := bufio.NewScanner(outR)
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`+"\n")
	}()
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1,"result"`) {
		t.Fatalf("initialize: %q", lines.Text())
	}
	go func() { // drain whatever else is written
		for lines.Scan() {
		}
	}()
	select { // the sleep is in flight when ctx ends
	case <-started:
	case <-time.After(testutil.DefaultHangGuard):
		t.Fatal("the sleep handler did not start")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after ctx was cancelled")
	}
	_ = inW.Close()
	_ = outW.Close()
	if !testutil.WaitFor(5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

// A write error (the client went away) ends Serve with that error.
func TestServeWriteError(t *testing.T) {
	outR, outW := io.Pipe()
	_ = outR.Close()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	err := stdio.Serve(context.Background(), newServer(t, nil), in, outW, nil)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Serve = %v, want io.ErrClosedPipe", err)
	}
}

// Negative options that turn nothing off are refused before anything is
// read or written.
func TestServeInvalidOptions(t *testing.T) {
	for _, o := range []stdio.Options{
		{MaxLineBytes: -1}, {MaxDepth: -1}, {MaxInFlight: -1}, {MaxListen: -1}, {RequestTimeout: -1}, {StateTTL: -1},
	} {
		var out strings.Builder
		err := stdio.Serve(context.Background(), newServer(t, nil), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), &out, &o)
		if !errors.Is(err, stdio.ErrInvalidOptions) || out.Len() != 0 {
			t.Errorf("Serve(%+v) = %v, wrote %q; want ErrInvalidOptions and nothing written", o, err, out.String())
		}
	}
}
