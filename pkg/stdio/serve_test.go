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
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/stdio"
)

func newServer(t *testing.T) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(protocol.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := fixture.RegisterDemo(s, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// Serve returns ctx's error when ctx ends it, cancels the handlers in
// flight and leaves no goroutine behind.
func TestServeStopsWithContext(t *testing.T) {
	before := runtime.NumGoroutine()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(ctx, newServer(t), inR, outW, &stdio.Options{Logger: slog.New(slog.DiscardHandler)})
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
	time.Sleep(50 * time.Millisecond)
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
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A write error (the client went away) ends Serve with that error.
func TestServeWriteError(t *testing.T) {
	outR, outW := io.Pipe()
	_ = outR.Close()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	err := stdio.Serve(context.Background(), newServer(t), in, outW, nil)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Serve = %v, want io.ErrClosedPipe", err)
	}
}
