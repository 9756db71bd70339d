package deploytest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stackEnv is the interpolation environment of a run: deploy/.env as the
// steps in compose.yaml's header make it (a copy of .env.example with a
// state key), and the published ports (the default stack's, the ha
// profile's) free ones, as if set in the shell.
func stackEnv(t *testing.T) map[string]string {
	t.Helper()
	env := envFromSteps(t, composePath(t))
	env["MCPFLEET_PORT"] = strconv.Itoa(testenv.FreePort(t))
	env["MCPFLEET_HA_PORT"] = strconv.Itoa(testenv.FreePort(t))
	return env
}

// stateKeyCommand is the command deploy/.env.example, compose.yaml's
// header and the README give for making MCPFLEET_STATE_KEY.
const stateKeyCommand = "head -c 32 /dev/urandom | base64"

var stepRE = regexp.MustCompile(`(?m)^(?:#\s*)?((?:cp deploy/\.env\.example deploy/\.env|sed -i "s\|\^MCPFLEET_STATE_KEY=).*)$`)

// envFromSteps runs the steps doc gives for making deploy/.env (the copy
// of .env.example, the state key put in) in a scratch directory, checks
// that the key is one the workers take (base64 of 32 bytes) and returns
// the variables of the file made.
func envFromSteps(t *testing.T, doc string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, m := range stepRE.FindAllStringSubmatch(string(data), -1) {
		steps = append(steps, m[1])
	}
	if len(steps) != 2 {
		t.Fatalf("%s: want the two steps making deploy/.env (cp, then sed of MCPFLEET_STATE_KEY), found %q", doc, steps)
	}
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join(deployDir(t), ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "deploy"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deploy", ".env.example"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euc", strings.Join(steps, "\n"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: the steps %q: %v\n%s", doc, steps, err, out)
	}
	env, _ := parseEnvFile(t, filepath.Join(dir, "deploy", ".env"))
	key := env["MCPFLEET_STATE_KEY"]
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		t.Fatalf("%s: the steps made MCPFLEET_STATE_KEY=%q: not base64 of 32 bytes (%v)", doc, key, err)
	}
	return env
}

var (
	imageOnce sync.Map // version → *imageBuild
	buildDirs sync.Map // the directories of the builds, removed by TestMain
	ldflagsRE = regexp.MustCompile(`-ldflags "([^"]*)"`)
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildDirs.Range(func(dir, _ any) bool {
		os.RemoveAll(dir.(string))
		return true
	})
	os.Exit(code)
}

type imageBuild struct {
	once sync.Once
	dir  string
	err  error
}

// imageBinaries builds cmd/mcpfleet, cmd/frontend and cmd/worker with the
// -ldflags of deploy/Dockerfile (VERSION=version) and maps the image's
// paths to them. The Dockerfile's CGO_ENABLED=0 and -trimpath are left
// out: they would only rebuild every package here.
func imageBinaries(t *testing.T, version string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := ldflagsRE.FindSubmatch(data)
	if m == nil {
		t.Fatal(`deploy/Dockerfile: no -ldflags "..."`)
	}
	flags := strings.ReplaceAll(string(m[1]), "${VERSION}", version)
	v, _ := imageOnce.LoadOrStore(version, &imageBuild{})
	b := v.(*imageBuild)
	b.once.Do(func() {
		// Kept for the whole test process (TestMain removes it): every
		// test of a version shares the build.
		if b.dir, b.err = os.MkdirTemp("", "mcpfleet-deploytest-"); b.err != nil {
			return
		}
		buildDirs.Store(b.dir, true)
		args := append(append([]string{"build"}, testenv.BuildFlags()...), "-ldflags", flags, "-o", b.dir+"/", "./cmd/mcpfleet", "./cmd/frontend", "./cmd/worker")
		cmd := exec.Command("go", args...)
		cmd.Dir = testenv.ModuleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build -ldflags %q: %v\n%s", flags, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	bins := map[string]string{}
	for _, n := range []string{"mcpfleet", "frontend", "worker"} {
		bins["/usr/local/bin/"+n] = filepath.Join(b.dir, n)
	}
	return bins
}

// toolNames lists the tools through url in the client's era.
func toolNames(t *testing.T, c *testenv.Client, modern bool) []string {
	t.Helper()
	var res json.RawMessage
	if modern {
		msg, hdr := testenv.ModernRequest(90, "tools/list", nil, nil)
		r := c.Post(msg, hdr)
		if r.Status != 200 || r.Response() == nil || r.Response().Error != nil {
			t.Fatalf("2026-07-28 tools/list: %s", r)
		}
		res = r.Response().Result
	} else {
		res = c.Call(90, "tools/list", map[string]any{})
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// callText calls a tool in a legacy session or as a 2026-07-28 request
// and returns the text of its result.
func callText(t *testing.T, c *testenv.Client, modern bool, name string, args map[string]any) string {
	t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	var res json.RawMessage
	if modern {
		msg, hdr := testenv.ModernRequest(91, "tools/call", params, nil)
		r := c.Post(msg, hdr)
		if r.Status != 200 || r.Response() == nil || r.Response().Error != nil {
			t.Fatalf("2026-07-28 tools/call %s: %s", name, r)
		}
		res = r.Response().Result
	} else {
		res = c.Call(91, "tools/call", params)
	}
	var out struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.IsError || len(out.Content) == 0 {
		t.Fatalf("tools/call %s: %s (%v)", name, res, err)
	}
	return out.Content[0].Text
}

// get GETs url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}

// scrape GETs /metrics at addr as Prometheus does and returns the metric
// families, which must parse.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("GET %s/metrics: %d %s", addr, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s/metrics does not parse: %v", addr, err)
	}
	sums := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			sums[name] += m.GetCounter().GetValue() + m.GetGauge().GetValue() // nil-safe

		}
	}
	return sums
}

// adminAddr is where replica ctr serves its admin endpoints.
func (s *stack) adminAddr(ctr *container) string {
	_, p, err := net.SplitHostPort(s.c.Services[ctr.svc].Environment["MCPFLEET_ADMIN_LISTEN"])
	if err != nil {
		s.t.Fatalf("%s: MCPFLEET_ADMIN_LISTEN: %v", ctr.svc, err)
	}
	n, _ := strconv.Atoi(p)
	return net.JoinHostPort(ctr.ip, strconv.Itoa(s.port(ctr.svc, n)))
}

// checkAdmin: every frontend and worker replica serves /healthz, /readyz
// and /metrics on its admin port, and a frontend's MCP port does not.
func checkAdmin(t *testing.T, s *stack) {
	t.Helper()
	checkAdminOf(t, s, "frontend", "worker")
}

// checkAdminOf is checkAdmin for the frontend and worker services named.
func checkAdminOf(t *testing.T, s *stack, frontend, worker string) {
	t.Helper()
	for svc, prefix := range map[string]string{frontend: "mcpfleet_frontend_", worker: "mcpfleet_worker_"} {
		for _, ctr := range s.ctrs[svc] {
			addr := s.adminAddr(ctr)
			for _, p := range []string{"/healthz", "/readyz"} {
				if code, body := get(t, "http://"+addr+p); code != 200 {
					t.Errorf("%s: GET %s on the admin port: %d %s", ctr.name, p, code, body)
				}
			}
			found := false
			for name := range scrape(t, addr) {
				found = found || strings.HasPrefix(name, prefix)
			}
			if !found {
				t.Errorf("%s: no %s* metric on the admin port", ctr.name, prefix)
			}
		}
	}
	for _, ctr := range s.ctrs[frontend] {
		mcp := net.JoinHostPort(ctr.ip, strconv.Itoa(s.port(frontend, 8080)))
		for _, p := range []string{"/metrics", "/readyz", "/healthz"} {
			if code, _ := get(t, "http://"+mcp+p); code != 404 {
				t.Errorf("%s: GET %s on the MCP port: %d, want 404 (it is on the admin port)", ctr.name, p, code)
			}
		}
	}
}

// checkProxyPaths: through nginx only /mcp and the protected-resource
// metadata reach a frontend; every other path is nginx's 404.
func checkProxyPaths(t *testing.T, base string) {
	t.Helper()
	for _, p := range []string{"/metrics", "/readyz", "/healthz", "/", "/debug/pprof/", "/mcp/x", "/.well-known/other"} {
		code, body := get(t, base+p)
		if code != 404 || !strings.Contains(body, "nginx") {
			t.Errorf("GET %s through nginx: %d %q, want nginx's 404", p, code, body)
		}
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		// Proxied: without authentication the frontend has no such
		// document (its 404, not nginx's).
		code, body := get(t, base+p)
		if code != 404 || strings.Contains(body, "nginx") {
			t.Errorf("GET %s through nginx: %d %q, want the frontend's answer", p, code, body)
		}
	}
}

// promConfig is the part of Prometheus's configuration that
// deploy/prometheus.yml uses, decoded strictly (a misspelt key fails, as
// it fails Prometheus). TestPrometheusRules also runs promtool check
// config (Prometheus v3.16.0) on the file.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval"`
		EvaluationInterval string `yaml:"evaluation_interval"`
	} `yaml:"global"`
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName      string `yaml:"job_name"`
		DNSSDConfigs []struct {
			Names           []string `yaml:"names"`
			Type            string   `yaml:"type"`
			Port            int      `yaml:"port"`
			RefreshInterval string   `yaml:"refresh_interval"`
		} `yaml:"dns_sd_configs"`
	} `yaml:"scrape_configs"`
}

func readPromConfig(t *testing.T) *promConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir(t), "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var pc promConfig
	if err := yaml.UnmarshalWithOptions(data, &pc, yaml.Strict()); err != nil {
		t.Fatalf("deploy/prometheus.yml: %v", err)
	}
	durations := []string{pc.Global.ScrapeInterval, pc.Global.EvaluationInterval}
	for _, sc := range pc.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			durations = append(durations, d.RefreshInterval)
		}
	}
	for _, d := range durations {
		if _, err := model.ParseDuration(d); d != "" && err != nil {
			t.Errorf("deploy/prometheus.yml: %q: %v", d, err)
		}
	}
	return &pc
}

// checkPrometheus discovers the targets of deploy/prometheus.yml as
// Prometheus would (A records of the names, the port given) from the DNS
// stand-in, and scrapes each.
func checkPrometheus(t *testing.T, s *stack) {
	t.Helper()
	jobs := map[string]bool{}
	for _, sc := range readPromConfig(t).ScrapeConfigs {
		jobs[sc.JobName] = true
		for _, d := range sc.DNSSDConfigs {
			for _, name := range d.Names {
				addrs, err := s.dns.Resolver().LookupHost(t.Context(), name)
				if err != nil || len(addrs) != len(s.ctrs[name]) {
					t.Fatalf("job %s: %s resolves to %v (%v), want its %d replicas", sc.JobName, name, addrs, err, len(s.ctrs[name]))
				}
				for _, a := range addrs {
					scrape(t, net.JoinHostPort(a, strconv.Itoa(s.port(name, d.Port))))
				}
			}
		}
	}
	if len(jobs) != 2 || !jobs["frontend"] || !jobs["worker"] {
		t.Errorf("prometheus.yml jobs %v, want frontend and worker", sortedKeys(jobs))
	}
}
