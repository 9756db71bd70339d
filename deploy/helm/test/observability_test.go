package helmtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart's copies of deploy/'s rules and dashboard (.Files.Get reads
// only files inside the chart), each with its original.
var chartCopies = map[string]string{
	"files/rules.yml":               "deploy/prometheus/rules.yml",
	"files/mcpfleet-dashboard.json": "deploy/grafana/mcpfleet-dashboard.json",
}

// TestObservability: the chart's copies are deploy/'s files byte for
// byte; with customValues the PrometheusRule holds the rules as
// rules.yml has them, the ConfigMap the dashboard as the file has it,
// with the labels Grafana's sidecar and the operator select; otel.* are
// the OTEL_* variables of both roles.
func TestObservability(t *testing.T) {
	files := map[string][]byte{}
	for chartFile, src := range chartCopies {
		got, err := os.ReadFile(filepath.Join(chartDir, chartFile))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(repoRoot, src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/helm/mcpfleet/%s differs from %s: copy it again (cp %s deploy/helm/mcpfleet/%s)", chartFile, src, src, chartFile)
		}
		files[src] = want
	}

	r := render(t, chartDir, kubeRecent, []string{writeValues(t, customValues)})
	pr := r.prometheusRules[fullname]
	if pr == nil {
		t.Fatalf("no PrometheusRule %s: %v", fullname, keys(r.prometheusRules))
	}
	onlyKeys(t, "PrometheusRule", pr, "apiVersion", "kind", "metadata", "spec")
	md, _ := pr["metadata"].(map[string]any)
	if lbls, _ := md["labels"].(map[string]any); lbls["release"] != "prometheus" || lbls["app.kubernetes.io/instance"] != release {
		t.Errorf("PrometheusRule labels %v: want prometheusRule.labels (release: prometheus) and the chart's", lbls)
	}
	var rules map[string]any
	if err := yaml.UnmarshalStrict(files["deploy/prometheus/rules.yml"], &rules); err != nil {
		t.Fatal(err)
	}
	if groups, _ := rules["groups"].([]any); len(groups) < 3 {
		t.Fatalf("deploy/prometheus/rules.yml: %d groups read", len(groups))
	}
	// The spec is rules.yml itself: its groups, the alerts' templates
	// ({{ $labels.job }}) left for Prometheus.
	if spec, _ := pr["spec"].(map[string]any); !reflect.DeepEqual(spec, rules) {
		t.Errorf("PrometheusRule spec is not deploy/prometheus/rules.yml:\n%v", spec)
	}

	cm := r.configMaps[fullname+"-dashboard"]
	if cm == nil {
		t.Fatalf("no ConfigMap %s-dashboard: %v", fullname, keys(r.configMaps))
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Labels["team"] != "mcp" || cm.Annotations["grafana_folder"] != "mcpfleet" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v: want grafana_dashboard: \"1\", grafanaDashboard.labels and .annotations", cm.Labels, cm.Annotations)
	}
	dash := cm.Data["mcpfleet-dashboard.json"]
	if len(cm.Data) != 1 || dash != string(files["deploy/grafana/mcpfleet-dashboard.json"]) {
		t.Errorf("dashboard ConfigMap keys %v: want mcpfleet-dashboard.json, deploy/grafana/mcpfleet-dashboard.json byte for byte (got %d bytes, want %d)",
			keys(cm.Data), len(dash), len(files["deploy/grafana/mcpfleet-dashboard.json"]))
	}
	var d struct {
		UID string `json:"uid"`
	}
	if err := json.Unmarshal([]byte(dash), &d); err != nil || d.UID != "mcpfleet" {
		t.Errorf("the dashboard in the ConfigMap: uid %q, %v", d.UID, err)
	}

	for name, service := range map[string]string{frontendName: "frontend", workerName: "worker"} {
		c := container(t, r.deployments[name])
		want := map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger-collector.tracing:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG":     "0.25",
			"OTEL_SERVICE_NAME":           service,
		}
		got := map[string]string{}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "OTEL_") {
				got[e.Name] = e.Value
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: OTEL_* %v, want %v", name, got, want)
		}
	}

	// Each otel value alone: only its variable (the service name goes
	// with the endpoint).
	r = render(t, chartDir, kubeRecent, nil, "stateKey.value="+testStateKey, "otel.sampler=always_off")
	for _, name := range []string{frontendName, workerName} {
		var otel []string
		for _, e := range container(t, r.deployments[name]).Env {
			if strings.HasPrefix(e.Name, "OTEL_") {
				otel = append(otel, e.Name+"="+e.Value)
			}
		}
		if !reflect.DeepEqual(otel, []string{"OTEL_TRACES_SAMPLER=always_off"}) {
			t.Errorf("%s with otel.sampler alone: %v", name, otel)
		}
	}
}
