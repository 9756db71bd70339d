package helmtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const (
	release   = "rel"
	namespace = "mcp"
	fullname  = release + "-mcpfleet"
	// The oldest Kubernetes the chart's kubeVersion admits, and a recent
	// one: helm built with go install assumes v1.20 without --kube-version.
	kubeOldest = "1.25.0"
	kubeRecent = "1.35.0"
)

var (
	chartDir        = filepath.Join("..", "mcpfleet")
	placeholdersDir = filepath.Join("..", "placeholders")
	repoRoot        = filepath.Join("..", "..", "..")
)

// testStateKey is a valid state key: the base64 of the bytes 0 to 31.
var testStateKey = func() string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i)
	}
	return base64.StdEncoding.EncodeToString(b)
}()

// helmHome isolates helm's config, cache and data (no repositories, no
// plugins of the user's) in a directory removed after the tests.
var helmHome string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpfleet-helm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helmHome = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const helmMissing = "helm is neither on PATH nor in $(go env GOPATH)/bin: run `make deps` " +
	"(scripts/deps.sh installs it: GOFLAGS= go install helm.sh/helm/v3/cmd/helm@v3.22.0)"

var (
	helmOnce sync.Once
	helmPath string
)

// helmBin is the helm to run: the first on PATH (make puts
// $(go env GOPATH)/bin first), else the one go install put in
// $(go env GOPATH)/bin. Without either the test fails, saying how to
// install it.
func helmBin(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p, err := exec.LookPath("helm"); err == nil {
			helmPath = p
			return
		}
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return
		}
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "helm")
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				helmPath = p
				return
			}
		}
	})
	if helmPath == "" {
		t.Fatal(helmMissing)
	}
	return helmPath
}

// runHelm runs helm with args and returns its stdout; err holds stderr.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// writeValues writes a values file for one render.
func writeValues(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// templateArgs is `helm template` of chart with the values files and
// --set pairs given.
func templateArgs(chart, kube string, files []string, sets ...string) []string {
	args := []string{"template", release, chart, "--namespace", namespace, "--kube-version", kube}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return args
}

// rendered holds a render's objects, decoded strictly by kind.
type rendered struct {
	count           int
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	secrets         map[string]*corev1.Secret
	serviceAccounts map[string]*corev1.ServiceAccount
	configMaps      map[string]*corev1.ConfigMap
	hpas            map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs            map[string]*policyv1.PodDisruptionBudget
	ingresses       map[string]*networkingv1.Ingress
	serviceMonitors map[string]map[string]any
	prometheusRules map[string]map[string]any
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode splits helm's output into its documents and decodes each into the
// Kubernetes API type of its apiVersion and kind, refusing unknown fields
// and duplicate keys (sigs.k8s.io/yaml strict decoding). A kind the test
// does not know is an error.
func decode(t *testing.T, out string) *rendered {
	t.Helper()
	r := &rendered{
		deployments:     map[string]*appsv1.Deployment{},
		services:        map[string]*corev1.Service{},
		secrets:         map[string]*corev1.Secret{},
		serviceAccounts: map[string]*corev1.ServiceAccount{},
		configMaps:      map[string]*corev1.ConfigMap{},
		hpas:            map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		pdbs:            map[string]*policyv1.PodDisruptionBudget{},
		ingresses:       map[string]*networkingv1.Ingress{},
		serviceMonitors: map[string]map[string]any{},
		prometheusRules: map[string]map[string]any{},
	}
	for _, doc := range docSep.Split(out, -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" && head.APIVersion == "" {
			if strings.TrimSpace(stripComments(doc)) != "" {
				t.Errorf("a rendered document has no apiVersion and kind:\n%s", doc)
			}
			continue
		}
		name := head.Metadata.Name
		if name == "" {
			t.Errorf("%s %s without metadata.name", head.APIVersion, head.Kind)
		}
		var err error
		key := head.APIVersion + " " + head.Kind
		switch key {
		case "apps/v1 Deployment":
			err = strictInto(doc, name, r.deployments)
		case "v1 Service":
			err = strictInto(doc, name, r.services)
		case "v1 Secret":
			err = strictInto(doc, name, r.secrets)
		case "v1 ServiceAccount":
			err = strictInto(doc, name, r.serviceAccounts)
		case "v1 ConfigMap":
			err = strictInto(doc, name, r.configMaps)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			err = strictInto(doc, name, r.hpas)
		case "policy/v1 PodDisruptionBudget":
			err = strictInto(doc, name, r.pdbs)
		case "networking.k8s.io/v1 Ingress":
			err = strictInto(doc, name, r.ingresses)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			err = strictInto(doc, name, r.serviceMonitors)
		case "monitoring.coreos.com/v1 PrometheusRule":
			err = strictInto(doc, name, r.prometheusRules)
		default:
			err = fmt.Errorf("unexpected object %s %q", key, name)
		}
		if err != nil {
			t.Errorf("%s %q: %v", key, name, err)
			continue
		}
		r.count++
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// strictInto decodes doc into a new T, refusing unknown fields, and files
// it under name (a second object of that kind and name is an error).
func strictInto[T any](doc, name string, into map[string]T) error {
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		return err
	}
	if _, dup := into[name]; dup {
		return errors.New("rendered twice")
	}
	into[name] = v
	return nil
}

// render runs helm template and decodes its output; the render must
// succeed.
func render(t *testing.T, chart, kube string, files []string, sets ...string) *rendered {
	t.Helper()
	out, err := runHelm(t, templateArgs(chart, kube, files, sets...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}
