package mcpfleet_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// syncBuffer is an io.Writer the test reads while the app writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// greeter is a server author's server: one typed tool that reports
// progress.
func greeter(t *testing.T) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(protocol.Implementation{Name: "greeter", Version: "1.2.3"}, nil)
	type In struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	type Out struct {
		Greeting string `json:"greeting"`
	}
	err := mcp.AddTool(srv, &protocol.Tool{Name: "greet", Description: "Greets someone"},
		func(ctx context.Context, req *mcp.Request, in In) (*protocol.CallToolResult, Out, error) {
			if err := req.Progress(ctx, 1, 2, "thinking"); err != nil {
				return nil, Out{}, err
			}
			return nil, Out{Greeting: "hello " + in.Name}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// running is an App running in a goroutine.
type running struct {
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	done           chan int
}

func start(t *testing.T, app *mcpfleet.App, args ...string) *running {
	t.Helper()
	r := &running{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	app.Stdout, app.Stderr = r.stdout, r.stderr
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- app.Run(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(60 * time.Second):
			t.Errorf("%q did not stop", args)
		}
	})
	return r
}

// waitLog waits for re in the app's logs and returns its first group.
func (r *running) waitLog(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(r.stderr.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case code := <-r.done:
			t.Fatalf("exited with %d before logging %v:\n%s", code, re, r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %v in the logs:\n%s", re, r.stderr.String())
	return ""
}

// stop cancels the app's context and returns its exit status.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(60 * time.Second):
		t.Fatal("the app did not stop")
		return -1
	}
}

var servingRE = regexp.MustCompile(`msg="mcpfleet serving" url=(\S+)`)

// greetLegacy calls greet in a 2025-11-25 session with a progress token
// and checks the progress notification and the structured result.
func greetLegacy(t *testing.T, urls ...string) {
	t.Helper()
	c := testenv.NewClient(t, urls...)
	c.Initialize(nil)
	r := c.Post(testenv.Request(2, "tools/call", map[string]any{
		"name": "greet", "arguments": map[string]any{"name": "ada"}, "_meta": map[string]any{"progressToken": "p1"},
	}), nil)
	checkGreeting(t, r)
}

// greetModern does the same as a 2026-07-28 request.
func greetModern(t *testing.T, urls ...string) {
	t.Helper()
	c := testenv.NewModernClient(t, urls...)
	msg, hdr := testenv.ModernRequest(3, "tools/call", map[string]any{
		"name": "greet", "arguments": map[string]any{"name": "ada"}, "_meta": map[string]any{"progressToken": 7},
	}, nil)
	checkGreeting(t, c.Post(msg, hdr))
}

func checkGreeting(t *testing.T, r *testenv.Reply) {
	t.Helper()
	resp := r.Response()
	if r.Status != 200 || resp == nil || resp.Error != nil {
		t.Fatalf("tools/call greet: %s", r)
	}
	var res struct {
		StructuredContent struct{ Greeting string } `json:"structuredContent"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.StructuredContent.Greeting != "hello ada" {
		t.Errorf("greet result %s", resp.Result)
	}
	var progress int
	for _, n := range r.Notifications() {
		if n.Method == "notifications/progress" {
			progress++
		}
	}
	if progress != 1 {
		t.Errorf("%d progress notifications, want 1: %s", progress, r)
	}
}

// The user's binary as serve: the all-in-one answers its own tools in
// both eras, and a cancelled context (SIGTERM in Main) drains and exits 0.
func TestAppServe(t *testing.T) {
	var closed atomic.Bool
	app := &mcpfleet.App{Name: "greeter", Server: greeter(t), Close: func() error { closed.Store(true); return nil }}
	r := start(t, app, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--drain-timeout", "5s")
	url := r.waitLog(t, servingRE)
	greetLegacy(t, url)
	greetModern(t, url)
	if closed.Load() {
		t.Fatal("App.Close ran while serving")
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d after the context ended:\n%s", code, r.stderr.String())
	}
	if !closed.Load() {
		t.Error("App.Close did not run after the drain")
	}
	if !strings.Contains(r.stderr.String(), "draining") {
		t.Errorf("no drain logged:\n%s", r.stderr.String())
	}
}

// The same binary as workers behind frontends (both App roles), on a real
// nats-server and redis-server: requests alternate between the frontends.
func TestAppWorkerBehindFrontends(t *testing.T) {
	_, natsURL := testenv.StartNATSServer(t)
	redisURL := testutil.StartRedis(t)
	key := base64.StdEncoding.EncodeToString(mcp.RandomStateKey())
	t.Setenv(mcpfleet.StateKeyEnv, key)
	w := start(t, &mcpfleet.App{Server: greeter(t)}, "worker", "--nats-url", natsURL, "--log-format", "text")
	w.waitLog(t, regexp.MustCompile(`msg="worker serving"`))
	var urls []string
	for i := 0; i < 2; i++ {
		f := start(t, &mcpfleet.App{}, "--nats-url", natsURL, "--redis-url", redisURL, "--listen", "127.0.0.1:0", "--log-format", "text", "--drain-delay", "0")
		urls = append(urls, f.waitLog(t, servingRE))
	}
	greetLegacy(t, urls...)
	greetModern(t, urls...)
	if code := w.stop(t); code != 0 {
		t.Fatalf("worker exit %d:\n%s", code, w.stderr.String())
	}
}

// A worker on an external NATS without a state key refuses to start,
// naming the variable to set; the all-in-one needs none.
func TestAppWorkerNeedsStateKey(t *testing.T) {
	t.Setenv(mcpfleet.StateKeyEnv, "")
	r := start(t, &mcpfleet.App{Server: greeter(t)}, "worker", "--nats-url", "nats://127.0.0.1:1")
	select {
	case code := <-r.done:
		r.done <- code
		if code != 2 || !strings.Contains(r.stderr.String(), mcpfleet.StateKeyEnv) {
			t.Errorf("exit %d, stderr %q: want 2 and a message naming %s", code, r.stderr.String(), mcpfleet.StateKeyEnv)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker without a state key did not exit")
	}
	// So does the all-in-one joining an external NATS.
	var errb bytes.Buffer
	serve := &mcpfleet.App{Server: greeter(t), Stdout: io.Discard, Stderr: &errb}
	if code := serve.Run(context.Background(), []string{"serve", "--nats-url", "nats://127.0.0.1:1"}); code != 2 || !strings.Contains(errb.String(), mcpfleet.StateKeyEnv) {
		t.Errorf("serve --nats-url without a key: exit %d, %q", code, errb.String())
	}
	// A key set in code is enough.
	srv := mcp.NewServer(protocol.Implementation{Name: "keyed", Version: "1"}, &mcp.ServerOptions{StateKey: mcp.RandomStateKey()})
	err := mcpfleet.RunWorker(context.Background(), srv, &mcpfleet.WorkerOptions{NATSURL: "nats://127.0.0.1:1", ConnectTimeout: -1})
	if err == nil || strings.Contains(err.Error(), mcpfleet.StateKeyEnv) {
		t.Errorf("RunWorker with ServerOptions.StateKey: %v; want a NATS error, not a state key one", err)
	}
}

// The user's binary over stdio: the protocol on stdout, logs on stderr,
// exit 0 at the end of stdin.
func TestAppStdio(t *testing.T) {
	in, inw := io.Pipe()
	app := &mcpfleet.App{Server: greeter(t), Stdin: in}
	r := start(t, app, "stdio")
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"ada"},"_meta":{"progressToken":"p"}}}`,
	}
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(inw, l+"\n")
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.stdout.String(), `"id":2`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
	_ = inw.Close()
	select {
	case code := <-r.done:
		r.done <- code
		if code != 0 {
			t.Fatalf("stdio exit %d:\n%s", code, r.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stdio did not exit at the end of stdin")
	}
	out := r.stdout.String()
	if !strings.Contains(out, `"hello ada"`) || !strings.Contains(out, "notifications/progress") || !strings.Contains(out, `"name":"greeter"`) {
		t.Errorf("stdout:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("stdout carries a line that is not JSON: %q", l)
		}
	}
}

func TestAppHelp(t *testing.T) {
	const secret = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI="
	t.Setenv(mcpfleet.StateKeyEnv, secret)
	t.Setenv("MCPFLEET_REDIS_URL", "redis://:hunter2@redis:6379/0")
	t.Setenv("MCPFLEET_AUTH_JWKS_URL", "https://u:pw@as/jwks")
	var greeting string
	app := func() *mcpfleet.App {
		return &mcpfleet.App{Name: "greeter", Server: greeter(t), Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&greeting, "greeting", "hello", "what to say")
		}}
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := app()
		a.Stdout, a.Stderr = &out, &errb
		return a.Run(context.Background(), args), out.String(), errb.String()
	}
	code, out, _ := run("-h")
	if code != 0 {
		t.Errorf("-h: exit %d", code)
	}
	for _, want := range []string{"serve", "worker", "frontend", "stdio", "version", "MCPFLEET_NATS_URL"} {
		if !strings.Contains(out, want) {
			t.Errorf("-h does not list %q:\n%s", want, out)
		}
	}
	for _, role := range []string{"serve", "worker", "frontend", "stdio"} {
		code, out, errs := run(role, "-h")
		if code != 0 || errs != "" {
			t.Errorf("%s -h: exit %d, stderr %q", role, code, errs)
		}
		for _, s := range []string{secret, "hunter2", ":pw@"} {
			if strings.Contains(out, s) {
				t.Errorf("%s -h prints the secret %q:\n%s", role, s, out)
			}
		}
		if !strings.Contains(out, "Process and logging:") || !strings.Contains(out, "--log-level") {
			t.Errorf("%s -h has no process group:\n%s", role, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "        ") {
				t.Errorf("%s -h: a flag's description spans lines: %q", role, l)
			}
		}
	}
	_, out, _ = run("worker", "-h")
	groups := []string{"Worker:", "This program:", "Process and logging:"}
	last := -1
	for _, g := range groups {
		i := strings.Index(out, g)
		if i < 0 || i < last {
			t.Errorf("worker -h: group %q missing or out of order:\n%s", g, out)
		}
		last = i
	}
	if !strings.Contains(out, "--greeting") || !strings.Contains(out, "--state-key") || strings.Contains(out, "--listen") {
		t.Errorf("worker -h flags:\n%s", out)
	}
	_, out, _ = run("frontend", "-h")
	if strings.Contains(out, "--state-key") || strings.Contains(out, "--greeting") || !strings.Contains(out, "Authentication") {
		t.Errorf("frontend -h flags:\n%s", out)
	}
	if code, _, errs := run("bogus"); code != 2 || !strings.Contains(errs, "bogus") {
		t.Errorf("unknown command: exit %d, %q", code, errs)
	}
	if code, _, errs := run("serve", "--no-such-flag"); code != 2 || !strings.Contains(errs, "no-such-flag") {
		t.Errorf("unknown flag: exit %d, %q", code, errs)
	}
	if code, out, _ := run("version"); code != 0 || !strings.Contains(out, "greeter 1.2.3") || !strings.Contains(out, mcpfleet.Version) {
		t.Errorf("version: exit %d, %q", code, out)
	}
	// A binary with a default role shows that role's flags for -h.
	var wout bytes.Buffer
	w := &mcpfleet.App{Name: "worker", Default: "worker", Server: greeter(t), Stdout: &wout, Stderr: io.Discard}
	if code := w.Run(context.Background(), []string{"-h"}); code != 0 || !strings.Contains(wout.String(), "--state-key") || !strings.Contains(wout.String(), "Usage: worker [worker]") {
		t.Errorf("worker -h: exit %d:\n%s", code, wout.String())
	}
	// A program flag may not redefine a built-in one.
	var rerr bytes.Buffer
	bad := &mcpfleet.App{Server: greeter(t), Stdout: io.Discard, Stderr: &rerr, Flags: func(fs *flag.FlagSet) { fs.String("log-level", "", "") }}
	if code := bad.Run(context.Background(), []string{"serve"}); code != 2 || !strings.Contains(rerr.String(), "log-level") {
		t.Errorf("a program flag redefining --log-level: exit %d, %q", code, rerr.String())
	}
	// A program without a server has the frontend role only.
	var errb bytes.Buffer
	fe := &mcpfleet.App{Name: "fe", Stdout: io.Discard, Stderr: &errb}
	if code := fe.Run(context.Background(), []string{"worker"}); code != 2 || !strings.Contains(errb.String(), "frontend") {
		t.Errorf("worker without a server: exit %d, %q", code, errb.String())
	}
}

// A server program's whole main (compiled, not run: Main runs until a
// signal and exits the process).
func ExampleMain() {
	srv := mcp.NewServer(protocol.Implementation{Name: "hello", Version: "1.0.0"}, nil)
	type In struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	err := mcp.AddTool(srv, &protocol.Tool{Name: "greet", Description: "Say hello"},
		func(ctx context.Context, req *mcp.Request, in In) (*protocol.CallToolResult, any, error) {
			return mcp.TextResult("hello " + in.Name), nil, nil
		})
	if err != nil {
		panic(err)
	}
	mcpfleet.Main(srv)
}

// get returns the status and body of a GET.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// probe runs the probe command against addr.
func probeCode(addr, check string) int {
	p := &mcpfleet.App{Name: "probe-test", Stdout: io.Discard, Stderr: io.Discard}
	return p.Run(context.Background(), []string{"probe", check, "--admin-listen", addr})
}

// The admin listener: health and metrics there and not beside the MCP
// endpoint; the probe command follows readiness through the drain delay,
// during which the endpoint still answers.
func TestAppAdminListenerAndDrainDelay(t *testing.T) {
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	r := start(t, &mcpfleet.App{Server: greeter(t)}, "serve", "--listen", "127.0.0.1:0", "--admin-listen", admin, "--drain-delay", "1s")
	url := r.waitLog(t, servingRE)
	base := strings.TrimSuffix(url, "/mcp")
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "go_goroutines"} {
		if code, body := get(t, "http://"+admin+path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("admin %s: %d %.100q", path, code, body)
		}
		if code, _ := get(t, base+path); code != http.StatusNotFound {
			t.Errorf("%s beside the MCP endpoint: HTTP %d, want 404 (the admin listener serves it)", path, code)
		}
	}
	if code := probeCode(admin, "ready"); code != 0 {
		t.Fatalf("probe ready while serving: exit %d", code)
	}
	if code := probeCode(strings.Replace(admin, "127.0.0.1", "0.0.0.0", 1), "live"); code != 0 {
		t.Fatalf("probe live on the wildcard address: exit %d", code)
	}
	r.cancel() // SIGTERM: the lame-duck second begins
	deadline := time.Now().Add(10 * time.Second)
	for probeCode(admin, "ready") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("readiness never failed after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
	select {
	case <-r.done:
		t.Fatal("the server stopped before its drain delay")
	default:
	}
	greetLegacy(t, url) // still served in the lame-duck period
	if code := probeCode(admin, "live"); code != 0 {
		t.Errorf("probe live while draining: exit %d", code)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.stderr.String())
	}
	if code := probeCode(admin, "live"); code != 1 {
		t.Errorf("probe live after the exit: %d, want 1", code)
	}
	if code := probeCode("", "ready"); code != 2 {
		t.Errorf("probe without an address: %d, want 2", code)
	}
}

// A worker started before its NATS waits for it (logged backoff) instead
// of exiting, and serves once NATS is up.
func TestAppWaitsForNATS(t *testing.T) {
	port := testenv.FreePort(t)
	t.Setenv(mcpfleet.StateKeyEnv, base64.StdEncoding.EncodeToString(mcp.RandomStateKey()))
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	w := start(t, &mcpfleet.App{Server: greeter(t)}, "worker", "--nats-url", fmt.Sprintf("nats://127.0.0.1:%d", port), "--log-format", "text",
		"--connect-timeout", "1m", "--admin-listen", admin)
	w.waitLog(t, regexp.MustCompile(`cannot connect yet; retrying.*to=NATS`))
	// Meanwhile: alive (a liveness probe must not restart it), not ready.
	if code := probeCode(admin, "live"); code != 0 {
		t.Errorf("probe live while waiting for NATS: exit %d", code)
	}
	if code, body := get(t, "http://"+admin+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("readyz while waiting for NATS: %d %q", code, body)
	}
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Listen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	w.waitLog(t, regexp.MustCompile(`msg="worker serving"`))
	for deadline := time.Now().Add(10 * time.Second); probeCode(admin, "ready") != 0; time.Sleep(10 * time.Millisecond) { // the polling interval of a wait with a deadline for the event, not a synchronisation
		if time.Now().After(deadline) {
			t.Fatal("the worker never became ready once NATS was up")
		}
	}
	if code := w.stop(t); code != 0 {
		t.Fatalf("worker exit %d:\n%s", code, w.stderr.String())
	}
}
