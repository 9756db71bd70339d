package mcpfleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func newTestServer() *mcp.Server {
	return mcp.NewServer(protocol.Implementation{Name: "options", Version: "1"}, nil)
}

// Negative values where none is meaningful are refused before anything
// listens or connects, with an error wrapping ErrInvalidOptions.
func TestOptionsNegativeRejected(t *testing.T) {
	ctx := t.Context()
	for name, run := range map[string]func() error{
		"serve DrainTimeout": func() error {
			return RunServe(ctx, newTestServer(), &ServeOptions{Listen: "127.0.0.1:0", DrainTimeout: -time.Second})
		},
		"serve DrainDelay": func() error {
			return RunServe(ctx, newTestServer(), &ServeOptions{Listen: "127.0.0.1:0", DrainDelay: -time.Second})
		},
		"serve Path": func() error {
			return RunServe(ctx, newTestServer(), &ServeOptions{Listen: "127.0.0.1:0", Path: "mcp"})
		},
		"frontend DrainTimeout": func() error {
			return RunFrontend(ctx, &ServeOptions{Listen: "127.0.0.1:0", DrainTimeout: -time.Second})
		},
		"worker DrainTimeout": func() error {
			return RunWorker(ctx, newTestServer(), &WorkerOptions{StateKey: mcp.RandomStateKey(), DrainTimeout: -time.Second})
		},
		"worker StateKey size": func() error {
			return RunWorker(ctx, newTestServer(), &WorkerOptions{StateKey: make([]byte, 5)})
		},
		"handler StateKey size": func() error {
			h, err := NewHandler(ctx, newTestServer(), &HandlerOptions{StateKey: make([]byte, 5)})
			if h != nil {
				_ = h.Shutdown(context.Background())
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := run()
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err = %v, want one wrapping ErrInvalidOptions", err)
			}
		})
	}
}

// A key of the wrong size keeps pkg/mcp's message.
func TestOptionsStateKeyMessage(t *testing.T) {
	err := RunWorker(t.Context(), newTestServer(), &WorkerOptions{StateKey: make([]byte, 5)})
	if want := "mcp: a requestState key must be 32 bytes, got 5"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !errors.Is(err, mcp.ErrInvalidOptions) {
		t.Errorf("err = %v does not wrap mcp.ErrInvalidOptions", err)
	}
}

// ErrNoStateKey is an options error and keeps its message.
func TestErrNoStateKeyWrapsInvalidOptions(t *testing.T) {
	if !errors.Is(ErrNoStateKey, ErrInvalidOptions) {
		t.Error("ErrNoStateKey does not wrap ErrInvalidOptions")
	}
	if msg := ErrNoStateKey.Error(); !strings.HasPrefix(msg, "no requestState key: ") || strings.Contains(msg, ErrInvalidOptions.Error()) {
		t.Errorf("ErrNoStateKey = %q", msg)
	}
	err := RunWorker(t.Context(), newTestServer(), &WorkerOptions{})
	if !errors.Is(err, ErrNoStateKey) || !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("RunWorker without a key: %v, want ErrNoStateKey", err)
	}
	if errors.Is(ErrNoServer, ErrInvalidOptions) {
		t.Error("ErrNoServer wraps ErrInvalidOptions; it is about the server argument")
	}
}

// Zero values are the documented defaults.
func TestOptionsZeroIsDefault(t *testing.T) {
	for _, opts := range []*ServeOptions{nil, {}} {
		o, err := resolveServe(opts)
		if err != nil {
			t.Fatal(err)
		}
		if o.Listen != DefaultListen || o.Path != DefaultPath || o.DrainTimeout != DefaultDrainTimeout || o.DrainDelay != 0 {
			t.Errorf("resolveServe(%v) = listen %q path %q drain timeout %v delay %v, want the defaults", opts, o.Listen, o.Path, o.DrainTimeout, o.DrainDelay)
		}
	}
	set, err := resolveServe(&ServeOptions{Listen: ":1", Path: "/x", DrainTimeout: time.Second, DrainDelay: time.Second})
	if err != nil || set.Listen != ":1" || set.Path != "/x" || set.DrainTimeout != time.Second || set.DrainDelay != time.Second {
		t.Errorf("resolveServe kept %+v, %v", set, err)
	}
	for _, opts := range []*WorkerOptions{nil, {}} {
		o, err := resolveWorker(opts)
		if err != nil {
			t.Fatal(err)
		}
		if o.DrainTimeout != DefaultDrainTimeout {
			t.Errorf("resolveWorker(%v).DrainTimeout = %v, want %v", opts, o.DrainTimeout, DefaultDrainTimeout)
		}
	}
}

// NewHandler returns ctx.Err() when ctx is done before the start, and
// leaves nothing running.
func TestNewHandlerHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h, err := NewHandler(ctx, newTestServer(), nil)
	if h != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("NewHandler with a done context = %v, %v; want nil, context.Canceled", h, err)
	}
}

// --drain-timeout refuses a negative value, as RunServe and RunWorker do.
func TestParseNegativeDrainTimeout(t *testing.T) {
	for _, r := range []role{roleServe, roleFrontend, roleWorker, roleStdio} {
		args := []string{"--drain-timeout", "-1s"}
		if r == roleWorker || r == roleFrontend {
			args = append(args, "--nats-url", "nats://127.0.0.1:4222")
		}
		_, err := parse(t, r, args, nil)
		if err == nil || !strings.Contains(err.Error(), "--drain-timeout must not be negative") {
			t.Errorf("%s --drain-timeout -1s: %v", r, err)
		}
	}
}
