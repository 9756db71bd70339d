package deploytest

import (
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The observability profile of deploy/compose.yaml: Prometheus with the
// rules, Grafana with the dashboard, Jaeger for the traces the frontends
// and workers send when MCPFLEET_OTLP_ENDPOINT is set.
var observabilityServices = []string{"grafana", "jaeger", "prometheus"}

// Pinned images: a release tag, never latest.
var observabilityImages = map[string]*regexp.Regexp{
	"prometheus": regexp.MustCompile(`^prom/prometheus:v3\.\d+\.\d+$`),
	"grafana":    regexp.MustCompile(`^grafana/grafana:(1[1-9]|[2-9]\d)\.\d+\.\d+$`), // Grafana 11 and later
	"jaeger":     regexp.MustCompile(`^jaegertracing/jaeger:2\.\d+\.\d+$`),           // Jaeger v2
}

// grafanaDatasources and grafanaDashboards are Grafana's provisioning
// formats, as much as deploy/grafana/provisioning uses, decoded strictly.
type grafanaDatasources struct {
	APIVersion  int `yaml:"apiVersion"`
	Datasources []struct {
		Name      string            `yaml:"name"`
		UID       string            `yaml:"uid"`
		Type      string            `yaml:"type"`
		Access    string            `yaml:"access"`
		URL       string            `yaml:"url"`
		IsDefault bool              `yaml:"isDefault"`
		Editable  bool              `yaml:"editable"`
		JSONData  map[string]string `yaml:"jsonData"`
	} `yaml:"datasources"`
}

type grafanaDashboards struct {
	APIVersion int `yaml:"apiVersion"`
	Providers  []struct {
		Name                  string `yaml:"name"`
		Folder                string `yaml:"folder"`
		Type                  string `yaml:"type"`
		DisableDeletion       bool   `yaml:"disableDeletion"`
		AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
		UpdateIntervalSeconds int    `yaml:"updateIntervalSeconds"`
		Options               struct {
			Path string `yaml:"path"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

// checkObservability checks the observability profile as written (none
// of its images runs here): its services, images and loopback ports; the
// files Prometheus and Grafana mount and what Grafana's provisioning
// makes of them; the tracing environment of the frontends and workers,
// off unless MCPFLEET_OTLP_ENDPOINT is set.
func checkObservability(t *testing.T, c *composeFile, env map[string]string) {
	t.Helper()
	var got []string
	for _, name := range sortedKeys(c.Services) {
		if slices.Contains(c.Services[name].Profiles, "observability") {
			got = append(got, name)
		}
	}
	if !slices.Equal(got, observabilityServices) {
		t.Fatalf("the observability profile has %v, want %v", got, observabilityServices)
	}
	for _, name := range observabilityServices {
		svc := c.Services[name]
		if !reflect.DeepEqual(svc.Profiles, []string{"observability"}) || !observabilityImages[name].MatchString(svc.Image) {
			t.Errorf("%s: profiles %v, image %q; want [observability] and an image matching %s", name, svc.Profiles, svc.Image, observabilityImages[name])
		}
		if len(svc.Ports) != 1 || !strings.HasPrefix(svc.Ports[0], "127.0.0.1:") {
			t.Errorf("%s publishes %v: want one port, on the host's loopback only", name, svc.Ports)
		}
	}

	// Prometheus: its configuration and, where rule_files says relative
	// to it, the rules.
	p := c.Services["prometheus"]
	const promConf = "/etc/prometheus/prometheus.yml"
	mounts := map[string]string{"./prometheus.yml": promConf}
	for _, rf := range readPromConfig(t).RuleFiles {
		mounts["./"+rf] = path.Join(path.Dir(promConf), rf)
	}
	checkMounts(t, "prometheus", p.Volumes, mounts)

	// Grafana: the provisioning directory, and the dashboard where the
	// dashboard provider reads; the data source is the profile's
	// Prometheus at its container port.
	g := c.Services["grafana"]
	if !reflect.DeepEqual(g.DependsOn, map[string]dependency{"prometheus": {Condition: "service_healthy"}}) {
		t.Errorf("grafana depends on %v, want prometheus healthy", g.DependsOn)
	}
	prov := filepath.Join(deployDir(t), "grafana", "provisioning")
	var ds grafanaDatasources
	readStrict(t, filepath.Join(prov, "datasources", "prometheus.yml"), &ds)
	promPort := strings.Split(p.Ports[0], ":")[2]
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || !ds.Datasources[0].IsDefault ||
		ds.Datasources[0].URL != "http://prometheus:"+promPort {
		t.Errorf("grafana data sources %+v: want the default one, of type prometheus, at http://prometheus:%s", ds.Datasources, promPort)
	}
	var db grafanaDashboards
	readStrict(t, filepath.Join(prov, "dashboards", "mcpfleet.yml"), &db)
	if len(db.Providers) != 1 || db.Providers[0].Type != "file" || db.Providers[0].Options.Path == "" {
		t.Fatalf("grafana dashboard providers %+v: want one of type file", db.Providers)
	}
	dashTarget := path.Join(db.Providers[0].Options.Path, "mcpfleet-dashboard.json")
	checkMounts(t, "grafana", g.Volumes, map[string]string{
		"./grafana/provisioning":            "/etc/grafana/provisioning",
		"./grafana/mcpfleet-dashboard.json": dashTarget,
	})
	if home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != dashTarget {
		t.Errorf("grafana: home dashboard %q, want the mounted %s", home, dashTarget)
	}
	if !strings.HasSuffix(g.Ports[0], ":3000") {
		t.Errorf("grafana publishes %v, want its port 3000", g.Ports)
	}
	// Nothing else in provisioning/ that the test does not read.
	err := filepath.WalkDir(prov, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !slices.Contains([]string{"datasources/prometheus.yml", "dashboards/mcpfleet.yml"}, filepath.ToSlash(strings.TrimPrefix(p, prov+string(filepath.Separator)))) {
			t.Errorf("deploy/grafana/provisioning holds %s, which the test does not check", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Jaeger: its UI published, OTLP on the compose network only.
	j := c.Services["jaeger"]
	if !strings.HasSuffix(j.Ports[0], ":16686") {
		t.Errorf("jaeger publishes %v, want its UI (16686) alone", j.Ports)
	}

	checkTracingEnv(t, c, "")
	e := maps.Clone(env)
	e["MCPFLEET_OTLP_ENDPOINT"] = "http://jaeger:4317"
	traced, err := loadCompose(e, map[string]bool{}, composePath(t))
	if err != nil {
		t.Fatal(err)
	}
	checkTracingEnv(t, traced, "http://jaeger:4317")
	if u, err := url.Parse(e["MCPFLEET_OTLP_ENDPOINT"]); err != nil || c.Services[u.Hostname()] == nil || u.Port() != "4317" {
		t.Errorf("MCPFLEET_OTLP_ENDPOINT %s: want a service's OTLP/gRPC port (%v)", e["MCPFLEET_OTLP_ENDPOINT"], err)
	}
	example, err := os.ReadFile(filepath.Join(deployDir(t), ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), "\n#MCPFLEET_OTLP_ENDPOINT=http://jaeger:4317\n") {
		t.Error("deploy/.env.example does not give MCPFLEET_OTLP_ENDPOINT=http://jaeger:4317 (commented out: tracing is off by default)")
	}
}

// checkTracingEnv: the frontends and workers (of the ha profile too) send
// traces over OTLP/gRPC to endpoint ("": the variable is there, empty,
// which the binaries take as tracing off), each under its role's name.
func checkTracingEnv(t *testing.T, c *composeFile, endpoint string) {
	t.Helper()
	for name, role := range map[string]string{"frontend": "frontend", "worker": "worker", "frontend-ha": "frontend", "worker-ha": "worker"} {
		env := c.Services[name].Environment
		ep, ok := env["OTEL_EXPORTER_OTLP_ENDPOINT"]
		if !ok || ep != endpoint || env["OTEL_EXPORTER_OTLP_PROTOCOL"] != "grpc" || env["OTEL_SERVICE_NAME"] != role {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT %q (set: %v), OTEL_EXPORTER_OTLP_PROTOCOL %q, OTEL_SERVICE_NAME %q; want %q, grpc, %s",
				name, ep, ok, env["OTEL_EXPORTER_OTLP_PROTOCOL"], env["OTEL_SERVICE_NAME"], endpoint, role)
		}
	}
}

// checkMounts: volumes mount each file of deploy/ in want (a path
// relative to deploy/) at its target, read-only, and the file exists.
func checkMounts(t *testing.T, svc string, volumes []string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if strings.HasPrefix(parts[0], ".") {
			if len(parts) != 3 || parts[2] != "ro" {
				t.Errorf("%s: %q is not read-only", svc, v)
			}
			got[parts[0]] = parts[1]
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s mounts %v, want %v", svc, got, want)
	}
	for src := range want {
		if _, err := os.Stat(filepath.Join(deployDir(t), src)); err != nil {
			t.Errorf("%s mounts %s: %v", svc, src, err)
		}
	}
}

func readStrict(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalWithOptions(data, v, yaml.Strict()); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
