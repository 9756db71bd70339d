package e2e

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	return string(b)
}

func metric(t *testing.T, text, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestObservability checks /metrics, /healthz and /readyz of a frontend and
// a worker, on their admin listeners.
func TestObservability(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 1})
	fe := c.Frontends[0].AdminURL(t)
	cl := testenv.NewClient(t, c.URLs...)
	cl.Initialize(nil)
	for i := 0; i < 3; i++ {
		cl.Call(10+i, "tools/call", callParams("echo", map[string]any{"text": "m"}))
	}
	cl.Post(testenv.Request(20, "tools/call", callParams("no-such-tool", nil)), nil)
	g := cl.OpenGet(nil)
	defer g.Close()

	mins := map[string]float64{
		`mcpfleet_frontend_requests_total{method="tools/call",outcome="ok"}`:    3,
		`mcpfleet_frontend_requests_total{method="tools/call",outcome="error"}`: 1,
		`mcpfleet_frontend_requests_total{method="initialize",outcome="ok"}`:    1,
		`mcpfleet_frontend_request_duration_seconds_count{method="tools/call"}`: 4,
		`mcpfleet_frontend_open_streams{kind="get"}`:                            1,
		`mcpfleet_frontend_sessions_total{event="created"}`:                     1,
		`mcpfleet_frontend_bus_roundtrip_seconds_count`:                         3,
	}
	// The GET stream registers, and the last request is counted, after
	// the answers: wait until the figures are there.
	var text string
	testutil.WaitFor(testenv.HangGuard(5*time.Second), func() bool {
		text = scrape(t, fe)
		for name, min := range mins {
			if metric(t, text, name) < min {
				return false
			}
		}
		return true
	})
	for name, min := range mins {
		if v := metric(t, text, name); v < min {
			t.Errorf("%s = %v, want at least %v", name, v, min)
		}
	}
	if status(t, fe+"/healthz") != 200 || status(t, fe+"/readyz") != 200 {
		t.Fatal("healthz/readyz of a healthy frontend")
	}
	// The worker's endpoints.
	w := c.Workers[0].AdminURL(t)
	wtext := scrape(t, w)
	if v := metric(t, wtext, `mcpfleet_worker_requests_total{method="tools/call",outcome="ok"}`); v < 3 {
		t.Errorf("worker tools/call ok = %v", v)
	}
	if status(t, w+"/readyz") != 200 {
		t.Fatal("readyz of a healthy worker")
	}
	// Without NATS both are not ready, and alive.
	c.NATS.Kill()
	testutil.PollFor(t, testenv.HangGuard(5*time.Second), "readyz to answer 503 without NATS", func() bool {
		return status(t, fe+"/readyz") == 503 && status(t, w+"/readyz") == 503
	})
	if status(t, fe+"/healthz") != 200 {
		t.Fatal("healthz of a frontend without NATS")
	}
}
