package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// caller calls echo through url in a loop, each call on a fresh 2026-07-28
// request, until stop; it counts calls and failures (without t.Fatal:
// it runs off the test goroutine).
type caller struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []string
}

func (c *caller) run(url string, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	hc := &http.Client{Timeout: 30 * time.Second}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		msg, hdr := testenv.ModernRequest(i, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "rolling"}}, nil)
		body, _ := json.Marshal(msg)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			c.fail(err.Error())
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"rolling"`) || strings.Contains(string(b), `"error"`) {
			c.fail(fmt.Sprintf("HTTP %d %.200s", resp.StatusCode, b))
			continue
		}
		c.ok.Add(1)
	}
}

func (c *caller) fail(s string) {
	c.failed.Add(1)
	c.mu.Lock()
	if len(c.failures) < 10 {
		c.failures = append(c.failures, s)
	}
	c.mu.Unlock()
}

// A rolling update through nginx: each frontend in turn gets SIGTERM (it
// reports not ready, serves through its drain delay, then stops
// accepting and drains) and is replaced by a new one on its address;
// then each worker in turn. Callers keep calling throughout: no call
// fails.
func TestRollingUpdateThroughProxy(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2, Nginx: true,
		FrontendArgs: []string{"--drain-delay", "500ms"}})
	cl := &caller{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go cl.run(c.ProxyURL, stop, &wg)
	}
	waitCalls := func(n int64) {
		t.Helper()
		target := cl.ok.Load() + n
		if !testutil.WaitFor(testenv.HangGuard(30*time.Second), func() bool { return cl.ok.Load() >= target }) {
			t.Fatalf("the callers made no progress (%d ok, %d failed)", cl.ok.Load(), cl.failed.Load())
		}
	}
	waitCalls(50)
	for i, fe := range c.Frontends {
		u, _ := url.Parse(c.URLs[i])
		_ = fe.Signal(syscall.SIGTERM)
		waitExit(t, fe, fmt.Sprintf("frontend %d", i))
		c.Frontends[i], _ = testenv.StartFrontend(t, c.NATSURL, c.RedisURL, "--listen", u.Host, "--drain-delay", "500ms",
			"--allowed-hosts", strings.TrimPrefix(strings.TrimSuffix(c.ProxyURL, "/mcp"), "http://"))
		waitCalls(50)
	}
	for i, w := range c.Workers {
		_ = w.Signal(syscall.SIGTERM)
		waitExit(t, w, fmt.Sprintf("worker %d", i))
		c.Workers[i] = testenv.StartWorker(t, c.NATSURL, "--fixture", "conformance")
		waitCalls(50)
	}
	close(stop)
	wg.Wait()
	t.Logf("rolling update: %d calls, %d failed", cl.ok.Load(), cl.failed.Load())
	if n := cl.failed.Load(); n > 0 {
		t.Fatalf("%d calls failed during the rolling update: %q", n, cl.failures)
	}
}

// A second SIGTERM cuts the drain short: the frontend, waiting for a
// long request, exits at once.
func TestSecondSignalEndsTheDrain(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1, Workers: 1, FrontendArgs: []string{"--drain-timeout", "1m"}})
	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)
	s := cl.PostStream(testenv.Request(1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60000}, "_meta": map[string]any{"progressToken": 1}}), nil)
	s.NextMessage(t, 10*time.Second)
	fe := c.Frontends[0]
	_ = fe.Signal(syscall.SIGTERM)
	fe.WaitLog(t, regexpDraining, 10*time.Second)
	if fe.Exited() {
		t.Fatal("the frontend exited at the first signal, with a request in flight")
	}
	fe.ExpectExit(1) // the drain cut short
	_ = fe.Signal(syscall.SIGTERM)
	waitExit(t, fe, "the frontend after a second signal")
}

// The version stamped at build time (-ldflags -X) is what `version`
// prints and what serverInfo says.
func TestVersionStamped(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("go", append(append([]string{"build"}, testenv.BuildFlags()...), "-ldflags", "-X github.com/mcpfleet/mcpfleet.Version=9.9.9-stamped", "-o", dir+"/", "./cmd/mcpfleet")...)
	cmd.Dir = testenv.ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "mcpfleet")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "9.9.9-stamped") {
		t.Fatalf("--version: %v %s", err, out)
	}
	p := testenv.Start(t, "mcpfleet", bin, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "off")
	u := p.WaitLog(t, testenv.ServingRE, 20*time.Second)
	c := testenv.NewClient(t, u)
	var res struct {
		ServerInfo struct{ Version string } `json:"serverInfo"`
	}
	if err := json.Unmarshal(c.Initialize(nil).Response().Result, &res); err != nil || res.ServerInfo.Version != "9.9.9-stamped" {
		t.Errorf("serverInfo %+v (%v)", res.ServerInfo, err)
	}
}

var regexpDraining = regexp.MustCompile(`draining frontend`)
