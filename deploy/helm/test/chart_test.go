package helmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// customValues turns on what the defaults leave off and changes what a
// real install changes: the user's worker image and command, an Ingress, a
// ServiceMonitor, the PrometheusRule and the dashboard's ConfigMap,
// tracing, an existing Secret for the state key and one for Redis,
// a NATS cluster's URLs, autoscaling bounds and targets (and none for the
// workers), other drain times, other ports, flags by name.
const customValues = `
image:
  repository: registry.example.com/mcpfleet
  tag: "9.9.9"
stateKey:
  existingSecret: fleet-keys
  existingSecretKey: requeststate
externalNats:
  urls:
    - nats://nats-0.nats:4222
    - nats://nats-1.nats:4222
    - nats://nats-2.nats:4222
externalRedis:
  existingSecret: fleet-redis
  existingSecretKey: url
adminPort: 9464
connectTimeoutSeconds: 120
logLevel: debug
frontend:
  port: 8181
  path: /mcp
  allowedOrigins: [https://app.example.com]
  drainDelaySeconds: 10
  drainTimeoutSeconds: 60
  config:
    session-ttl: 1h
    max-body-bytes: 8388608
    auth-issuer: https://auth.example.com
    auth-audience: https://mcp.example.com/mcp
    auth-jwks-url: https://auth.example.com/.well-known/jwks.json
    auth-required-scopes: [mcp, files]
  service:
    port: 80
  autoscaling:
    minReplicas: 3
    maxReplicas: 12
    targetCPUUtilizationPercentage: 60
    targetMemoryUtilizationPercentage: 80
  podDisruptionBudget:
    maxUnavailable: null
    minAvailable: 2
worker:
  image:
    repository: registry.example.com/notes
    tag: "1.2.3"
  command: ["/usr/local/bin/notes", "worker"]
  args: ["--notes-redis-url", "redis://notes-redis:6379/1"]
  config:
    tools: "*"
  env:
    - name: NOTES_EXTRA
      value: "1"
  drainTimeoutSeconds: 120
  terminationGracePeriodSeconds: 150
  autoscaling:
    enabled: false
  replicas: 4
ingress:
  enabled: true
  className: nginx
  hosts:
    - host: mcp.example.com
      paths:
        - path: /
          pathType: Prefix
  tls:
    - secretName: mcp-example-com-tls
      hosts: [mcp.example.com]
serviceMonitor:
  enabled: true
  interval: 15s
  labels:
    release: prometheus
prometheusRule:
  enabled: true
  labels:
    release: prometheus
grafanaDashboard:
  enabled: true
  labels:
    team: mcp
  annotations:
    grafana_folder: mcpfleet
otel:
  endpoint: http://jaeger-collector.tracing:4317
  protocol: grpc
  sampler: parentbased_traceidratio
  samplerArg: 0.25
`

func TestLint(t *testing.T) {
	if v, err := runHelm(t, "version", "--short"); err == nil {
		t.Logf("%s %s", helmBin(t), strings.TrimSpace(v))
	}
	if out, err := runHelm(t, "lint", "--strict", chartDir, "--kube-version", kubeRecent, "--set", "stateKey.value="+testStateKey); err != nil {
		t.Error(err)
	} else {
		t.Log(strings.TrimSpace(out))
	}
	if _, err := runHelm(t, "lint", "--strict", chartDir, "--kube-version", kubeRecent, "-f", writeValues(t, customValues)); err != nil {
		t.Error(err)
	}
	// values-ha.yaml turns the dependencies on: the stubbed chart.
	if _, err := runHelm(t, "lint", "--strict", stubbedChart(t), "--kube-version", kubeRecent, "-f", haValuesFile,
		"--set", "stateKey.value="+testStateKey); err != nil {
		t.Error(err)
	}
}

func TestDefaultValues(t *testing.T) {
	for _, kube := range []string{kubeOldest, kubeRecent} {
		t.Run("kube-"+kube, func(t *testing.T) {
			r := render(t, chartDir, kube, nil, "stateKey.value="+testStateKey)
			checkCommon(t, r, defaultAdmin)
			fd, wd := r.deployments[frontendName], r.deployments[workerName]
			checkHPA(t, r, fd, 2, 10, 70, 0)
			checkHPA(t, r, wd, 2, 20, 70, 0)
			checkWorkerStateKey(t, r, stateKeyName, "state-key")

			s := r.secrets[stateKeyName]
			if s == nil {
				t.Fatalf("no Secret %s; Secrets %v", stateKeyName, keys(r.secrets))
			}
			if got := string(s.Data["state-key"]); got != testStateKey {
				t.Errorf("Secret %s holds %q, want the stateKey.value", s.Name, got)
			}
			if b, err := base64.StdEncoding.DecodeString(string(s.Data["state-key"])); err != nil || len(b) != 32 {
				t.Errorf("the state key in the Secret does not decode to 32 bytes: %v", err)
			}

			fc, wc := container(t, fd), container(t, wd)
			if img := fc.Image; img != "mcpfleet:0.1.0" || wc.Image != img {
				t.Errorf("images %q and %q, want the project image mcpfleet:<appVersion>", fc.Image, wc.Image)
			}
			if !slices.Equal(fc.Command, []string{"/usr/local/bin/frontend"}) || !slices.Equal(wc.Command, []string{"/usr/local/bin/worker"}) {
				t.Errorf("commands %q and %q", fc.Command, wc.Command)
			}
			if len(fc.Args)+len(wc.Args) != 0 {
				t.Errorf("the defaults pass arguments: %q, %q", fc.Args, wc.Args)
			}
			if got := envValue(t, fc, "MCPFLEET_LISTEN"); got != "0.0.0.0:8080" {
				t.Errorf("MCPFLEET_LISTEN=%q", got)
			}
			if got := envValue(t, fc, "MCPFLEET_NATS_URL"); got != "nats://nats:4222" {
				t.Errorf("MCPFLEET_NATS_URL=%q", got)
			}
			if got := envValue(t, fc, "MCPFLEET_REDIS_URL"); got != "redis://redis:6379/0" {
				t.Errorf("MCPFLEET_REDIS_URL=%q", got)
			}
			if _, ok := env(wc, "MCPFLEET_REDIS_URL"); ok {
				t.Error("the worker gets MCPFLEET_REDIS_URL (only frontends use the session store)")
			}
			if e, ok := env(fc, "MCPFLEET_REDIS_MODE"); ok {
				t.Errorf("the defaults pass %+v; single is the binaries' default", e)
			}
			hosts := strings.Split(envValue(t, fc, "MCPFLEET_ALLOWED_HOSTS"), ",")
			for _, h := range []string{frontendName, frontendName + "." + namespace + ".svc", "localhost"} {
				if !slices.Contains(hosts, h) {
					t.Errorf("MCPFLEET_ALLOWED_HOSTS %q lacks %q", hosts, h)
				}
			}
			if g := *fd.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 5+30+10 {
				t.Errorf("frontend terminationGracePeriodSeconds %d, want 45 (5s delay + 30s drain + 10s)", g)
			}
			if g := *wd.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 30+10 {
				t.Errorf("worker terminationGracePeriodSeconds %d, want 40", g)
			}
			if fd.Spec.Template.Spec.Containers[0].Lifecycle != nil {
				t.Error("the frontend has a lifecycle hook; the lame duck is --drain-delay's")
			}
			if len(r.ingresses)+len(r.serviceMonitors)+len(r.configMaps)+len(r.prometheusRules) != 0 {
				t.Errorf("the defaults render an Ingress, ServiceMonitor, ConfigMap or PrometheusRule: %v %v %v %v",
					keys(r.ingresses), keys(r.serviceMonitors), keys(r.configMaps), keys(r.prometheusRules))
			}
			for _, c := range []*corev1.Container{fc, wc} {
				for _, e := range c.Env {
					if strings.HasPrefix(e.Name, "OTEL_") {
						t.Errorf("%s: the defaults pass %s (tracing is off unless otel.endpoint is set)", c.Name, e.Name)
					}
				}
			}
			if len(r.services) != 3 || len(r.hpas) != 2 || len(r.pdbs) != 2 || len(r.secrets) != 1 || len(r.serviceAccounts) != 1 {
				t.Errorf("objects: services %v, hpas %v, pdbs %v, secrets %v, service accounts %v",
					keys(r.services), keys(r.hpas), keys(r.pdbs), keys(r.secrets), keys(r.serviceAccounts))
			}
			t.Logf("%d objects, decoded strictly", r.count)
		})
	}
}

func TestCustomValues(t *testing.T) {
	r := render(t, chartDir, kubeRecent, []string{writeValues(t, customValues)})
	const admin = 9464
	checkCommon(t, r, admin)
	fd, wd := r.deployments[frontendName], r.deployments[workerName]
	fc, wc := container(t, fd), container(t, wd)

	// The user's worker: image, command, arguments, environment.
	if wc.Image != "registry.example.com/notes:1.2.3" || fc.Image != "registry.example.com/mcpfleet:9.9.9" {
		t.Errorf("images: frontend %q, worker %q", fc.Image, wc.Image)
	}
	if !slices.Equal(wc.Command, []string{"/usr/local/bin/notes", "worker"}) ||
		!slices.Equal(wc.Args, []string{"--notes-redis-url", "redis://notes-redis:6379/1"}) {
		t.Errorf("worker command %q args %q", wc.Command, wc.Args)
	}
	if got := envValue(t, wc, "NOTES_EXTRA"); got != "1" {
		t.Errorf("worker.env: NOTES_EXTRA=%q", got)
	}
	if got := envValue(t, wc, "MCPFLEET_TOOLS"); got != "*" {
		t.Errorf("worker.config tools: MCPFLEET_TOOLS=%q", got)
	}
	for name, want := range map[string]string{
		"MCPFLEET_SESSION_TTL":          "1h",
		"MCPFLEET_MAX_BODY_BYTES":       "8388608",
		"MCPFLEET_AUTH_ISSUER":          "https://auth.example.com",
		"MCPFLEET_AUTH_REQUIRED_SCOPES": "mcp,files",
		"MCPFLEET_LISTEN":               "0.0.0.0:8181",
		"MCPFLEET_ADMIN_LISTEN":         "0.0.0.0:9464",
		"MCPFLEET_DRAIN_DELAY":          "10s",
		"MCPFLEET_DRAIN_TIMEOUT":        "60s",
		"MCPFLEET_LOG_LEVEL":            "debug",
		"MCPFLEET_ALLOWED_ORIGINS":      "https://app.example.com",
	} {
		if got := envValue(t, fc, name); got != want {
			t.Errorf("frontend %s=%q, want %q", name, got, want)
		}
	}
	if got := envValue(t, wc, "MCPFLEET_CONNECT_TIMEOUT"); got != "120s" {
		t.Errorf("worker MCPFLEET_CONNECT_TIMEOUT=%q", got)
	}

	// External NATS: the list, comma-joined, on both roles.
	want := "nats://nats-0.nats:4222,nats://nats-1.nats:4222,nats://nats-2.nats:4222"
	if got := envValue(t, wc, "MCPFLEET_NATS_URL"); got != want {
		t.Errorf("MCPFLEET_NATS_URL=%q, want %q", got, want)
	}
	// Redis and the state key from existing Secrets; the chart makes none.
	if e, _ := env(fc, "MCPFLEET_REDIS_URL"); e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != "fleet-redis" || e.ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("MCPFLEET_REDIS_URL %+v, want Secret fleet-redis key url", e)
	}
	checkWorkerStateKey(t, r, "fleet-keys", "requeststate")
	if len(r.secrets) != 0 {
		t.Errorf("Secrets %v rendered beside an existingSecret", keys(r.secrets))
	}
	if _, ok := wd.Spec.Template.Annotations["checksum/state-key"]; ok {
		t.Error("a checksum of a state key the chart does not hold")
	}

	// Autoscaling: the frontends' bounds and targets; the workers have none.
	checkHPA(t, r, fd, 3, 12, 60, 80)
	if r.hpas[workerName] != nil {
		t.Error("a worker HPA with worker.autoscaling.enabled false")
	}
	if wd.Spec.Replicas == nil || *wd.Spec.Replicas != 4 {
		t.Errorf("worker replicas %v, want 4", deref(wd.Spec.Replicas))
	}
	if p := r.pdbs[frontendName]; p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("frontend PDB %+v, want minAvailable 2", p.Spec)
	}

	// Grace periods: computed from the drain, or as set.
	if g := *fd.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 10+60+10 {
		t.Errorf("frontend terminationGracePeriodSeconds %d, want 80", g)
	}
	if g := *wd.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 150 {
		t.Errorf("worker terminationGracePeriodSeconds %d, want 150", g)
	}

	// The Ingress: the MCP Service's port, SSE-safe, the host allowed.
	ing := r.ingresses[fullname]
	if ing == nil {
		t.Fatalf("no Ingress %s: %v", fullname, keys(r.ingresses))
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("ingressClassName %v", deref(ing.Spec.IngressClassName))
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "mcp-example-com-tls" {
		t.Errorf("Ingress TLS %+v", ing.Spec.TLS)
	}
	for k, v := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-buffering":         "off",
		"nginx.ingress.kubernetes.io/proxy-request-buffering": "off",
		"nginx.ingress.kubernetes.io/proxy-read-timeout":      "3600",
		"nginx.ingress.kubernetes.io/proxy-send-timeout":      "3600",
	} {
		if ing.Annotations[k] != v {
			t.Errorf("Ingress annotation %s=%q, want %q", k, ing.Annotations[k], v)
		}
	}
	svc := r.services[frontendName]
	for _, rule := range ing.Spec.Rules {
		if rule.Host != "mcp.example.com" || rule.HTTP == nil || len(rule.HTTP.Paths) == 0 {
			t.Errorf("Ingress rule %+v", rule)
			continue
		}
		for _, p := range rule.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != svc.Name || (b.Port.Name != svc.Spec.Ports[0].Name && b.Port.Number != svc.Spec.Ports[0].Port) {
				t.Errorf("Ingress path %s goes to %+v, want the MCP Service %s", p.Path, b, svc.Name)
			}
			if b != nil && (b.Port.Name == "admin" || b.Port.Number == admin) {
				t.Errorf("Ingress path %s reaches the admin port", p.Path)
			}
		}
	}
	if svc.Spec.Ports[0].Port != 80 {
		t.Errorf("MCP Service port %d, want 80", svc.Spec.Ports[0].Port)
	}
	if hosts := strings.Split(envValue(t, fc, "MCPFLEET_ALLOWED_HOSTS"), ","); !slices.Contains(hosts, "mcp.example.com") {
		t.Errorf("MCPFLEET_ALLOWED_HOSTS %q lacks the Ingress host", hosts)
	}

	checkServiceMonitor(t, r, "15s", "prometheus")
	t.Logf("%d objects, decoded strictly", r.count)
}

// checkServiceMonitor checks the ServiceMonitor (an unstructured object:
// its type is the Prometheus Operator's CRD): only known fields, the admin
// Services selected and the MCP Service not, /metrics on the admin port.
func checkServiceMonitor(t *testing.T, r *rendered, interval, releaseLabel string) {
	t.Helper()
	sm := r.serviceMonitors[fullname]
	if sm == nil {
		t.Fatalf("no ServiceMonitor %s: %v", fullname, keys(r.serviceMonitors))
	}
	onlyKeys(t, "ServiceMonitor", sm, "apiVersion", "kind", "metadata", "spec")
	md, _ := sm["metadata"].(map[string]any)
	lbls, _ := md["labels"].(map[string]any)
	if lbls["release"] != releaseLabel {
		t.Errorf("ServiceMonitor labels %v lack release=%s", lbls, releaseLabel)
	}
	spec, _ := sm["spec"].(map[string]any)
	onlyKeys(t, "ServiceMonitor spec", spec, "selector", "namespaceSelector", "endpoints", "targetLabels", "jobLabel")
	// The job of the series is the admin Service's role label: frontend
	// or worker, the jobs the rules and the dashboard name.
	if jl, _ := spec["jobLabel"].(string); jl != "app.kubernetes.io/component" {
		t.Errorf("ServiceMonitor jobLabel %q, want app.kubernetes.io/component", jl)
	}
	for name, job := range map[string]string{frontendAdmin: "frontend", workerAdmin: "worker"} {
		if s := r.services[name]; s == nil || s.Labels["app.kubernetes.io/component"] != job {
			t.Errorf("Service %s: no app.kubernetes.io/component %s, the job of its targets", name, job)
		}
	}
	sel, _ := spec["selector"].(map[string]any)
	onlyKeys(t, "ServiceMonitor selector", sel, "matchLabels")
	ml := labels.Set{}
	m, _ := sel["matchLabels"].(map[string]any)
	for k, v := range m {
		s, _ := v.(string)
		ml[k] = s
	}
	if len(ml) == 0 {
		t.Fatal("ServiceMonitor selects every Service")
	}
	for name, want := range map[string]bool{frontendAdmin: true, workerAdmin: true, frontendName: false} {
		s := r.services[name]
		if s == nil {
			t.Errorf("no Service %s", name)
			continue
		}
		if got := labels.SelectorFromSet(ml).Matches(labels.Set(s.Labels)); got != want {
			t.Errorf("ServiceMonitor selects Service %s: %v, want %v", name, got, want)
		}
	}
	ns, _ := spec["namespaceSelector"].(map[string]any)
	if names, _ := ns["matchNames"].([]any); len(names) != 1 || names[0] != namespace {
		t.Errorf("ServiceMonitor namespaceSelector %v, want the release namespace", ns)
	}
	eps, _ := spec["endpoints"].([]any)
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", eps)
	}
	ep, _ := eps[0].(map[string]any)
	onlyKeys(t, "ServiceMonitor endpoint", ep, "port", "path", "interval", "scrapeTimeout", "scheme")
	if ep["port"] != "admin" || ep["path"] != "/metrics" || ep["interval"] != interval {
		t.Errorf("ServiceMonitor endpoint %v, want port admin, path /metrics, interval %s", ep, interval)
	}
}

// onlyKeys fails when m has a key outside allowed.
func onlyKeys(t *testing.T, what string, m map[string]any, allowed ...string) {
	t.Helper()
	for k := range m {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s: unexpected field %q", what, k)
		}
	}
}

// TestRenderFailures: values the chart refuses, each with a message that
// says what to do.
func TestRenderFailures(t *testing.T) {
	key := "stateKey.value=" + testStateKey
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"no state key", nil,
			"stateKey.value or stateKey.existingSecret is required: the workers' MCPFLEET_STATE_KEY, base64 of 32 random bytes"},
		{"empty state key", []string{"stateKey.value="},
			"stateKey.value or stateKey.existingSecret is required"},
		{"short state key", []string{"stateKey.value=c2hvcnQ="},
			"stateKey.value: key 1 of 1 is not the base64 of 32 bytes (create one with `openssl rand -base64 32`)"},
		{"bad second key", []string{"stateKey.value=" + testStateKey + "\\,nope"},
			"stateKey.value: key 2 of 2 is not the base64 of 32 bytes"},
		{"grace below the drain", []string{key, "frontend.terminationGracePeriodSeconds=20"},
			"frontend.terminationGracePeriodSeconds (20) must cover the drain: at least 35 seconds"},
		{"worker grace below the drain", []string{key, "worker.terminationGracePeriodSeconds=10"},
			"worker.terminationGracePeriodSeconds (10) must cover the drain: at least 30 seconds"},
		{"a flag the chart sets", []string{key, "frontend.config.nats-url=nats://x:4222"},
			"frontend.config.nats-url: the chart sets --nats-url itself"},
		{"redis-mode by config", []string{key, "frontend.config.redis-mode=cluster"},
			"frontend.config.redis-mode: the chart sets --redis-mode itself"},
		{"bad Redis mode", []string{key, "externalRedis.mode=replica"},
			`externalRedis.mode "replica": want single, cluster or sentinel`},
		{"a flag with dashes", []string{key, "worker.config.--tools=x"},
			"worker.config.--tools: want a flag name without the dashes"},
		{"no NATS", []string{key, "externalNats.urls=null"},
			"externalNats.urls (or externalNats.existingSecret, or nats.enabled) is required"},
		{"both PDB bounds", []string{key, "worker.podDisruptionBudget.minAvailable=1"},
			"worker.podDisruptionBudget: set minAvailable or maxUnavailable, not both"},
		{"HPA bounds", []string{key, "frontend.autoscaling.maxReplicas=1"},
			"frontend.autoscaling.maxReplicas (1) is below minReplicas (2)"},
		{"NATS placeholder", []string{key, "nats.enabled=true"},
			"nats.enabled: charts/ holds a placeholder, not the NATS chart; fetch it first (network needed): helm repo add nats https://nats-io.github.io/k8s/helm/charts/ && helm dependency update deploy/helm/mcpfleet"},
		{"bad OTLP protocol", []string{key, "otel.protocol=tcp"},
			`otel.protocol "tcp": want grpc, http/protobuf or http/json (OTEL_EXPORTER_OTLP_PROTOCOL)`},
		{"bad sampler", []string{key, "otel.sampler=sometimes"},
			`otel.sampler "sometimes": want one of always_on, always_off, traceidratio`},
		{"Redis placeholder", []string{key, "redis.enabled=true"},
			"redis.enabled: charts/ holds a placeholder, not the Redis chart; fetch it first (network needed): helm dependency update deploy/helm/mcpfleet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runHelm(t, templateArgs(chartDir, kubeRecent, nil, tc.sets...)...)
			if err == nil {
				t.Fatalf("rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}

type chartMeta struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Dependencies []struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Repository string `json:"repository"`
		Condition  string `json:"condition"`
	} `json:"dependencies"`
}

func readChartMeta(t *testing.T, path string) chartMeta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestDependencies: NATS and Redis are declared with conditions off by
// default, and charts/ holds for each the placeholder built from
// deploy/helm/placeholders (so the default render needs no helm
// dependency), file for file.
func TestDependencies(t *testing.T) {
	meta := readChartMeta(t, filepath.Join(chartDir, "Chart.yaml"))
	var values map[string]any
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &values); err != nil {
		t.Fatal(err)
	}
	repos := map[string]string{
		"nats":  "https://nats-io.github.io/k8s/helm/charts/",
		"redis": "oci://registry-1.docker.io/bitnamicharts",
	}
	var names []string
	for _, d := range meta.Dependencies {
		names = append(names, d.Name)
		if d.Repository != repos[d.Name] {
			t.Errorf("dependency %s from %q, want %q", d.Name, d.Repository, repos[d.Name])
		}
		if d.Condition != d.Name+".enabled" {
			t.Errorf("dependency %s: condition %q, want %s.enabled", d.Name, d.Condition, d.Name)
		}
		sub, _ := values[d.Name].(map[string]any)
		if enabled, ok := sub["enabled"].(bool); !ok || enabled {
			t.Errorf("values.yaml: %s.enabled is %v, want false", d.Name, sub["enabled"])
		}
		src := filepath.Join(placeholdersDir, d.Name)
		pm := readChartMeta(t, filepath.Join(src, "Chart.yaml"))
		archive := filepath.Join(chartDir, "charts", pm.Name+"-"+pm.Version+".tgz")
		want := readTree(t, src)
		got := readArchive(t, archive, d.Name)
		if !equalTrees(got, want) {
			t.Errorf("%s does not match %s: rebuild it with `helm package %s -d %s`", archive, src,
				filepath.ToSlash(filepath.Join("deploy/helm/placeholders", d.Name)), "deploy/helm/mcpfleet/charts")
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"nats", "redis"}) {
		t.Errorf("dependencies %v, want nats and redis", names)
	}
	entries, err := os.ReadDir(filepath.Join(chartDir, "charts"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(names) {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("charts/ holds %v, want one placeholder per dependency", got)
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readArchive reads a chart archive's files (under its top directory
// name/).
func readArchive(t *testing.T, path, name string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (build it with `helm package deploy/helm/placeholders/%s -d deploy/helm/mcpfleet/charts`)", err, name)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, name+"/")] = string(b)
	}
	return out
}

// equalTrees compares a placeholder's source with its archive; helm
// package writes Chart.yaml again (the same fields, reformatted), so that
// one is compared as YAML.
func equalTrees(archive, src map[string]string) bool {
	if len(archive) != len(src) {
		return false
	}
	for name, s := range src {
		a, ok := archive[name]
		if !ok {
			return false
		}
		if name == "Chart.yaml" {
			var x, y map[string]any
			if yaml.Unmarshal([]byte(a), &x) != nil || yaml.Unmarshal([]byte(s), &y) != nil {
				return false
			}
			xb, _ := yaml.Marshal(x)
			yb, _ := yaml.Marshal(y)
			if !bytes.Equal(xb, yb) {
				return false
			}
			continue
		}
		if a != s {
			return false
		}
	}
	return true
}

// stubbedChart is a copy of the chart whose placeholders are replaced by
// empty charts of the same names, as the real ones would be after `helm
// dependency update` (without their objects): it renders with nats.enabled
// and redis.enabled.
func stubbedChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mcpfleet")
	copyDir(t, chartDir, dir)
	charts := filepath.Join(dir, "charts")
	if err := os.RemoveAll(charts); err != nil {
		t.Fatal(err)
	}
	for _, d := range readChartMeta(t, filepath.Join(chartDir, "Chart.yaml")).Dependencies {
		pm := readChartMeta(t, filepath.Join(placeholdersDir, d.Name, "Chart.yaml"))
		if err := os.MkdirAll(filepath.Join(charts, d.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		stub := "apiVersion: v2\nname: " + d.Name + "\nversion: " + pm.Version + "\n"
		if err := os.WriteFile(filepath.Join(charts, d.Name, "Chart.yaml"), []byte(stub), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDependenciesEnabled renders the stubbed chart: the frontends and
// workers must then find the subcharts' NATS and Redis Services, and the
// Redis password in its chart's Secret.
func TestDependenciesEnabled(t *testing.T) {
	dir := stubbedChart(t)
	r := render(t, dir, kubeRecent, nil, "stateKey.value="+testStateKey, "nats.enabled=true", "redis.enabled=true")
	checkCommon(t, r, defaultAdmin)
	fc := container(t, r.deployments[frontendName])
	if got, want := envValue(t, fc, "MCPFLEET_NATS_URL"), "nats://"+release+"-nats."+namespace+".svc:4222"; got != want {
		t.Errorf("MCPFLEET_NATS_URL=%q, want %q (the NATS chart's client Service)", got, want)
	}
	pw, ok := env(fc, "REDIS_PASSWORD")
	if !ok || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil ||
		pw.ValueFrom.SecretKeyRef.Name != release+"-redis" || pw.ValueFrom.SecretKeyRef.Key != "redis-password" {
		t.Errorf("REDIS_PASSWORD %+v, want the Redis chart's Secret %s-redis key redis-password", pw, release)
	}
	if got, want := envValue(t, fc, "MCPFLEET_REDIS_URL"), "redis://:$(REDIS_PASSWORD)@"+release+"-redis-master."+namespace+".svc:6379/0"; got != want {
		t.Errorf("MCPFLEET_REDIS_URL=%q, want %q", got, want)
	}
	// $(REDIS_PASSWORD) expands only when defined earlier in the list.
	if i, j := envIndex(fc, "REDIS_PASSWORD"), envIndex(fc, "MCPFLEET_REDIS_URL"); i < 0 || i > j {
		t.Errorf("REDIS_PASSWORD (at %d) must come before MCPFLEET_REDIS_URL (at %d)", i, j)
	}
	if e, ok := env(fc, "MCPFLEET_REDIS_MODE"); ok {
		t.Errorf("the standalone Redis chart: %+v, want the default mode (single)", e)
	}

	r = render(t, dir, kubeRecent, nil, "stateKey.value="+testStateKey, "redis.enabled=true", "redis.auth.enabled=false")
	if got, want := envValue(t, container(t, r.deployments[frontendName]), "MCPFLEET_REDIS_URL"), "redis://"+release+"-redis-master."+namespace+".svc:6379/0"; got != want {
		t.Errorf("without Redis auth: MCPFLEET_REDIS_URL=%q, want %q", got, want)
	}
}

func envIndex(c *corev1.Container, name string) int {
	return slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	valuesKeyLine = regexp.MustCompile(`^(\s*)(- )?([A-Za-z0-9_./-]+):(.*)$`)
	valuesItem    = regexp.MustCompile(`^(\s*)- `)
)

// TestValuesDocumented: every value of values.yaml is commented, in
// helm-docs style: a comment starting with "# --" right above the key, or
// above one of its parents (which then documents the whole block).
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		indent     int
		documented bool
		line       int
		text       string
	}
	var (
		stack   []node
		nodes   []node
		leaf    []bool
		comment bool // the lines right above hold a "# --" comment
	)
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "":
			comment = false
			continue
		case strings.HasPrefix(trimmed, "#"):
			if strings.HasPrefix(trimmed, "# --") {
				comment = true
			}
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if m := valuesKeyLine.FindStringSubmatch(l); m != nil && m[2] != "" {
			indent += 2 // "- key:" is a key of the item, inside the list
		} else if m == nil && !valuesItem.MatchString(l) {
			t.Errorf("values.yaml:%d: a line the test does not understand: %q", i+1, l)
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		documented := comment
		for _, a := range stack {
			documented = documented || a.documented
		}
		comment = false
		if len(nodes) > 0 && indent > nodes[len(nodes)-1].indent {
			leaf[len(leaf)-1] = false
		}
		n := node{indent: indent, documented: documented, line: i + 1, text: trimmed}
		stack = append(stack, n)
		nodes = append(nodes, n)
		leaf = append(leaf, true)
	}
	for i, n := range nodes {
		if leaf[i] && !n.documented {
			t.Errorf("values.yaml:%d: %q has no \"# --\" comment (nor has any block it is in)", n.line, n.text)
		}
	}
	if len(nodes) < 50 {
		t.Errorf("values.yaml: only %d values read", len(nodes))
	}
}

// TestDocsCoverValues: docs/kubernetes.md names every top-level value.
func TestDocsCoverValues(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	for k := range values {
		if !strings.Contains(string(doc), "`"+k) {
			t.Errorf("docs/kubernetes.md does not mention the value %s", k)
		}
	}
}

// GOMEMLIMIT is 90 % of a role's memory limit, in bytes, unless the role
// has none, sets GOMEMLIMIT in its env, or has a limit that is not a
// plain quantity; a role's own GOMEMLIMIT is the only one.
func TestGoMemLimit(t *testing.T) {
	count := func(c *corev1.Container) (n int, v string) {
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				n, v = n+1, e.Value
			}
		}
		return n, v
	}
	for _, tc := range []struct {
		name       string
		sets       []string
		fe, worker string // "" for none
	}{
		{name: "defaults (512Mi)", fe: "483183820", worker: "483183820"},
		{name: "binary and decimal suffixes", sets: []string{"frontend.resources.limits.memory=1.5Gi", "worker.resources.limits.memory=500M"},
			fe: "1449551462", worker: "450000000"},
		{name: "no limit, or not a plain quantity", sets: []string{"frontend.resources=null", "worker.resources.limits.memory=1e9"}},
		{name: "the role's own", sets: []string{"worker.env[0].name=GOMEMLIMIT", "worker.env[0].value=100MiB"}, fe: "483183820", worker: "100MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, chartDir, kubeRecent, nil, append([]string{"stateKey.value=" + testStateKey}, tc.sets...)...)
			for _, c := range []struct {
				ctr  *corev1.Container
				want string
			}{{container(t, r.deployments[frontendName]), tc.fe}, {container(t, r.deployments[workerName]), tc.worker}} {
				n, v := count(c.ctr)
				switch {
				case c.want == "" && n != 0:
					t.Errorf("%s: GOMEMLIMIT=%q, want none", c.ctr.Name, v)
				case c.want != "" && (n != 1 || v != c.want):
					t.Errorf("%s: %d GOMEMLIMIT, %q; want one, %q", c.ctr.Name, n, v, c.want)
				}
			}
		})
	}
}
