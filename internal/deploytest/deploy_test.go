package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/fixture"
	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

var examples = []string{"hello", "notes"}

func composePath(tb testing.TB) string { return filepath.Join(deployDir(tb), "compose.yaml") }

func overridePath(tb testing.TB, example string) string {
	return filepath.Join(testenv.ModuleRoot(tb), "examples", example, "compose.yaml")
}

// TestComposeFile checks what runs nowhere here: the policies, the
// variables and the files the stack mounts and builds with.
func TestComposeFile(t *testing.T) {
	env := stackEnv(t)
	used := map[string]bool{}
	c, err := loadCompose(env, used, composePath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(c.Services) {
		svc := c.Services[name]
		switch {
		case oneShot(svc):
			// A task run once (redis-cluster-init): its dependents wait
			// for its exit, not for a healthcheck.
			if svc.Healthcheck != nil {
				t.Errorf("%s: a one-shot service with a healthcheck", name)
			}
		case svc.Restart != "unless-stopped":
			t.Errorf("%s: restart %q, want unless-stopped", name, svc.Restart)
		case svc.Healthcheck == nil || len(svc.Healthcheck.Test) < 2 || svc.Healthcheck.Test[0] != "CMD":
			t.Errorf("%s: healthcheck %+v, want a test of the CMD form", name, svc.Healthcheck)
		}
		for dep, d := range svc.DependsOn {
			want := "service_healthy"
			if ds := c.Services[dep]; ds != nil && oneShot(ds) {
				want = "service_completed_successfully"
			}
			if d.Condition != want {
				t.Errorf("%s: depends_on %s with condition %q, want %s", name, dep, d.Condition, want)
			}
		}
		argv := strings.Join(append(append(append([]string{}, svc.Entrypoint...), svc.Command...), sortedKeys(svc.Environment)...), " ")
		if strings.Contains(argv, "fixture") || strings.Contains(argv, "FIXTURE") {
			t.Errorf("%s runs a fixture: %s", name, argv)
		}
	}
	for _, name := range []string{"frontend", "worker", "frontend-ha", "worker-ha"} {
		svc := c.Services[name]
		if got := svc.Environment["MCPFLEET_ADMIN_LISTEN"]; got != "0.0.0.0:9090" {
			t.Errorf("%s: MCPFLEET_ADMIN_LISTEN %q, want 0.0.0.0:9090", name, got)
		}
		if len(svc.Ports) > 0 {
			t.Errorf("%s publishes %v: only nginx may", name, svc.Ports)
		}
		if want := []string{"CMD", svc.Entrypoint[0], "probe"}; !reflect.DeepEqual(svc.Healthcheck.Test, want) {
			t.Errorf("%s: healthcheck %v, want %v", name, svc.Healthcheck.Test, want)
		}
	}
	fe, w := c.Services["frontend"], c.Services["worker"]
	if fe.Build == nil || fe.Build.Args["VERSION"] != env["MCPFLEET_VERSION"] || fe.Build.Dockerfile != "deploy/Dockerfile" {
		t.Errorf("frontend build %+v: want deploy/Dockerfile with VERSION=$MCPFLEET_VERSION", fe.Build)
	}
	// The workers run the image the frontend service builds (no build of
	// their own, which would overwrite a user's image of that name).
	if w.Build != nil || w.Image != fe.Image || !reflect.DeepEqual(w.Entrypoint, []string{"/usr/local/bin/worker", "worker"}) {
		t.Errorf("worker: build %+v, image %q, entrypoint %v; want no build, the frontend's image %q, the demo worker", w.Build, w.Image, w.Entrypoint, fe.Image)
	}
	checkObservability(t, c, env)
	checkHAProfile(t, c)
	checkWorkerVariables(t, env)
	checkStateKeyRequired(t, env)
	checkEnvExample(t, used)
	checkDockerfile(t, filepath.Join(deployDir(t), "Dockerfile"))
	checkNATSConfig(t, c)
	checkPromConfig(t, c)
	for _, name := range examples {
		checkOverride(t, env, name)
	}
}

// checkWorkerVariables: a user's image and program replace the demo ones
// everywhere they are named, the healthcheck included, in the default
// workers and the ha profile's.
func checkWorkerVariables(t *testing.T, env map[string]string) {
	t.Helper()
	e := map[string]string{"MCPFLEET_WORKER_IMAGE": "registry.example.com/mine:1", "MCPFLEET_WORKER_COMMAND": "/usr/local/bin/mine"}
	for k, v := range env {
		e[k] = v
	}
	c, err := loadCompose(e, map[string]bool{}, composePath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"worker", "worker-ha"} {
		w := c.Services[name]
		if w.Image != e["MCPFLEET_WORKER_IMAGE"] || !reflect.DeepEqual(w.Entrypoint, []string{"/usr/local/bin/mine", "worker"}) ||
			!reflect.DeepEqual(w.Healthcheck.Test, []string{"CMD", "/usr/local/bin/mine", "probe"}) {
			t.Errorf("%s with MCPFLEET_WORKER_IMAGE and _COMMAND: image %q, entrypoint %v, healthcheck %v", name, w.Image, w.Entrypoint, w.Healthcheck.Test)
		}
	}
}

// checkStateKeyRequired: without MCPFLEET_STATE_KEY compose refuses to
// start, naming it.
func checkStateKeyRequired(t *testing.T, env map[string]string) {
	t.Helper()
	e := map[string]string{}
	for k, v := range env {
		e[k] = v
	}
	for _, key := range []string{"", "unset"} {
		if key == "unset" {
			delete(e, "MCPFLEET_STATE_KEY")
		} else {
			e["MCPFLEET_STATE_KEY"] = key
		}
		_, err := loadCompose(e, map[string]bool{}, composePath(t))
		if err == nil || !strings.Contains(err.Error(), "MCPFLEET_STATE_KEY") {
			t.Errorf("MCPFLEET_STATE_KEY %s: %v, want an error naming it", key, err)
		}
	}
}

// checkEnvExample: .env.example documents every variable the compose
// files use and no other; the state-key command is given where the
// state-key step is documented.
func checkEnvExample(t *testing.T, used map[string]bool) {
	t.Helper()
	for _, name := range examples {
		if _, err := loadCompose(stackEnv(t), used, composePath(t), overridePath(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, documented := envExample(t)
	if got, want := sortedKeys(documented), sortedKeys(used); !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/.env.example documents %v; the compose files use %v", got, want)
	}
	data, err := os.ReadFile(filepath.Join(deployDir(t), ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), stateKeyCommand) {
		t.Errorf("deploy/.env.example does not give the state-key command %q", stateKeyCommand)
	}
	// The README's steps work too (compose.yaml's make every run's env).
	envFromSteps(t, filepath.Join(testenv.ModuleRoot(t), "README.md"))
}

// checkDockerfile: VERSION is a build argument (dev by default) stamped
// into mcpfleet.Version.
func checkDockerfile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ARG VERSION=dev$`).Match(data) {
		t.Errorf("%s: no `ARG VERSION=dev`", path)
	}
	m := ldflagsRE.FindSubmatch(data)
	if m == nil || string(m[1]) != "-s -w -X github.com/mcpfleet/mcpfleet.Version=${VERSION}" {
		t.Errorf("%s: -ldflags %q, want the version stamped", path, m)
	}
}

// checkNATSConfig: deploy/nats.conf, as mounted, is what nats-server's
// --config names, and nats-server v2.15.2 takes it as it is.
func checkNATSConfig(t *testing.T, c *composeFile) {
	t.Helper()
	n := c.Services["nats"]
	want := []string{"nats-server", "--config", "/etc/nats/nats-server.conf"}
	if !reflect.DeepEqual(n.Command, want) || !reflect.DeepEqual(n.Volumes, []string{"./nats.conf:/etc/nats/nats-server.conf:ro"}) {
		t.Errorf("nats: command %v, volumes %v", n.Command, n.Volumes)
	}
	bin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	out, err := exec.Command(bin, "-t", "-c", filepath.Join(deployDir(t), "nats.conf")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("nats-server -t -c deploy/nats.conf: %v\n%s", err, out)
	}
}

// checkPromConfig: the Prometheus of the observability profile mounts
// deploy/prometheus.yml, whose jobs discover the frontend and worker
// services on their admin port. (The stack test scrapes them.)
func checkPromConfig(t *testing.T, c *composeFile) {
	t.Helper()
	p := c.Services["prometheus"]
	if p == nil || len(p.Volumes) == 0 || !strings.HasPrefix(p.Volumes[0], "./prometheus.yml:/etc/prometheus/prometheus.yml") {
		t.Fatalf("prometheus does not mount deploy/prometheus.yml")
	}
	for _, sc := range readPromConfig(t).ScrapeConfigs {
		if len(sc.DNSSDConfigs) != 1 || !reflect.DeepEqual(sc.DNSSDConfigs[0].Names, []string{sc.JobName}) ||
			sc.DNSSDConfigs[0].Type != "A" || sc.DNSSDConfigs[0].Port != 9090 {
			t.Errorf("job %s: %+v, want the A records of the service %s, port 9090", sc.JobName, sc.DNSSDConfigs, sc.JobName)
		}
	}
}

// checkOverride: an example's override runs its binary, from its image,
// as the worker, probed by the same binary, with the admin listener and
// no --http-listen.
func checkOverride(t *testing.T, env map[string]string, name string) {
	t.Helper()
	c, err := loadCompose(env, map[string]bool{}, composePath(t), overridePath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Services["worker"]
	bin := "/usr/local/bin/" + name
	if !reflect.DeepEqual(w.Entrypoint, []string{bin, "worker"}) || !reflect.DeepEqual(w.Healthcheck.Test, []string{"CMD", bin, "probe"}) ||
		!reflect.DeepEqual(w.Command, []string{"--admin-listen", "0.0.0.0:9090"}) {
		t.Errorf("%s override: entrypoint %v, command %v, healthcheck %v", name, w.Entrypoint, w.Command, w.Healthcheck.Test)
	}
	if w.Build == nil || w.Build.Dockerfile != "examples/"+name+"/Dockerfile" || w.Build.Args["VERSION"] != env["MCPFLEET_VERSION"] {
		t.Errorf("%s override: build %+v", name, w.Build)
	}
	dockerfile := filepath.Join(testenv.ModuleRoot(t), "examples", name, "Dockerfile")
	checkDockerfile(t, dockerfile)
	data, _ := os.ReadFile(dockerfile)
	if !strings.Contains(string(data), "COPY --from=build /out/"+name+" "+bin+"\n") {
		t.Errorf("%s: the image has no %s", dockerfile, bin)
	}
}

// TestComposeStack runs deploy/compose.yaml as `up --scale frontend=2
// --scale worker=2` would, then drives it through nginx.
func TestComposeStack(t *testing.T) {
	const version = "v0.0.0-deploytest"
	env := stackEnv(t)
	env["MCPFLEET_VERSION"] = version
	c, err := loadCompose(env, map[string]bool{}, composePath(t))
	if err != nil {
		t.Fatal(err)
	}
	bins := imageBinaries(t, version)
	if out, err := exec.Command(bins["/usr/local/bin/frontend"], "version").Output(); err != nil || !strings.Contains(string(out), version) {
		t.Errorf("frontend version: %q, %v; want %s stamped", out, err, version)
	}
	s := up(t, c, bins, map[string]int{"frontend": 2, "worker": 2})
	base := "http://127.0.0.1:" + env["MCPFLEET_PORT"]
	url := base + "/mcp"

	demo, err := fixture.NewExampleServer("", version, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tool := range demo.Catalog().Tools {
		want = append(want, tool.Name)
	}
	legacy := testenv.NewClient(t, url)
	hello := legacy.Initialize(nil)
	if !strings.Contains(string(hello.Response().Result), `"version":"`+version+`"`) {
		t.Errorf("initialize: serverInfo without the stamped version %s: %s", version, hello.Response().Result)
	}
	modern := testenv.NewModernClient(t, url)
	for _, era := range []bool{false, true} {
		c := legacy
		if era {
			c = modern
		}
		if got := toolNames(t, c, era); !reflect.DeepEqual(got, want) {
			t.Errorf("tools/list (2026-07-28: %v): %v, want the demo tools only: %v", era, got, want)
		}
		if got := callText(t, c, era, "echo", map[string]any{"text": "through nginx"}); got != "through nginx" {
			t.Errorf("echo (2026-07-28: %v): %q", era, got)
		}
	}
	// An SSE answer (progress, then the result) through nginx.
	r := legacy.Post(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name": "sleep", "arguments": map[string]any{"ms": 250}, "_meta": map[string]any{"progressToken": "p"}}}, nil)
	if !r.SSE || len(r.Notifications()) == 0 || r.Response() == nil || r.Response().Error != nil {
		t.Errorf("sleep with progress through nginx: %s", r)
	}
	checkProxyPaths(t, base)
	checkAdmin(t, s)
	checkPrometheus(t, s)
	s.running()
	checkReResolution(t, s, url)
	s.running()
}

// checkReResolution: a frontend restarted at a new address takes traffic
// through nginx without a restart of nginx, and no request fails while
// nginx still knows the old address (refused, retried on the other).
func checkReResolution(t *testing.T, s *stack, url string) {
	t.Helper()
	ctr := s.restart("frontend", 0)
	admin := s.adminAddr(ctr)
	c := testenv.NewModernClient(t, url)
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		if got := callText(t, c, true, "echo", map[string]any{"text": strconv.Itoa(n)}); got != strconv.Itoa(n) {
			t.Fatalf("echo %d after the restart: %q", n, got)
		}
		if scrape(t, admin)["mcpfleet_frontend_requests_total"] > 0 {
			t.Logf("the restarted frontend (%s) took a request after %d", ctr.ip, n+1)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx sent none of %d requests to the frontend restarted at %s within 30s", n+1, ctr.ip)
		}
		time.Sleep(50 * time.Millisecond) // the polling interval of a wait with a deadline for the event, not a synchronisation
	}
}

// TestComposeExamples runs each example's override on deploy/compose.yaml:
// the example's binary as the two workers, behind the same frontends.
func TestComposeExamples(t *testing.T) {
	for _, name := range examples {
		t.Run(name, func(t *testing.T) {
			env := stackEnv(t)
			c, err := loadCompose(env, map[string]bool{}, composePath(t), overridePath(t, name))
			if err != nil {
				t.Fatal(err)
			}
			bins := imageBinaries(t, env["MCPFLEET_VERSION"])
			bins["/usr/local/bin/"+name] = testenv.BuildExample(t, name)
			s := up(t, c, bins, map[string]int{"frontend": 2, "worker": 2})
			url := "http://127.0.0.1:" + env["MCPFLEET_PORT"] + "/mcp"
			legacy := testenv.NewClient(t, url)
			legacy.Initialize(nil)
			modern := testenv.NewModernClient(t, url)
			switch name {
			case "hello":
				if got := toolNames(t, modern, true); !reflect.DeepEqual(got, []string{"greet"}) {
					t.Errorf("tools/list: %v, want [greet]", got)
				}
				if got := callText(t, legacy, false, "greet", map[string]any{"name": "fleet"}); got != "Hello, fleet!" {
					t.Errorf("greet: %q", got)
				}
			case "notes":
				// Added through one worker, listed through any: the notes
				// are in the stack's Redis.
				callText(t, modern, true, "add_note", map[string]any{"title": "deploytest"})
				for i := range 4 {
					if got := callText(t, legacy, false, "list_notes", map[string]any{}); !strings.Contains(got, "deploytest") {
						t.Errorf("list_notes %d: %q", i, got)
					}
				}
			}
			checkAdmin(t, s)
			s.running()
		})
	}
}
