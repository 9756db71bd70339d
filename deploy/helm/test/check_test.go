package helmtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Names of the objects of release rel.
const (
	frontendName   = fullname + "-frontend" // Deployment, MCP Service, HPA, PDB
	workerName     = fullname + "-worker"   // Deployment, HPA, PDB
	frontendAdmin  = fullname + "-frontend-admin"
	workerAdmin    = fullname + "-worker-admin"
	stateKeyName   = fullname + "-state-key"
	defaultAdmin   = 9090
	defaultMCPPort = 8080
)

// container is the one container of d's pods.
func container(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("Deployment %s: %d containers, want 1", d.Name, len(cs))
	}
	return &cs[0]
}

func env(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// envValue is the literal value of the variable name, failing when it is
// absent or comes from a reference.
func envValue(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	e, ok := env(c, name)
	if !ok {
		t.Fatalf("container %s: no %s", c.Name, name)
	}
	if e.ValueFrom != nil {
		t.Fatalf("container %s: %s comes from a reference, want a value", c.Name, name)
	}
	return e.Value
}

func envSeconds(t *testing.T, c *corev1.Container, name string) int64 {
	t.Helper()
	v := envValue(t, c, name)
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("container %s: %s=%q is not a duration: %v", c.Name, name, v, err)
	}
	return int64(d / time.Second)
}

// portNumber resolves a probe's or Service's target port against c's
// ports.
func portNumber(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

func namedPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	return portNumber(t, c, intstr.FromString(name))
}

// checkDeployment checks what every Deployment of the chart must have:
// selector and labels, probes on the admin port (where --admin-listen
// binds), security contexts, resources, a grace period covering the
// drain, a startup budget covering the connect timeout, the /tmp emptyDir.
func checkDeployment(t *testing.T, d *appsv1.Deployment, component string, adminPort int32) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatalf("Deployment %s selector: %v", d.Name, err)
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !sel.Matches(podLabels) {
		t.Errorf("Deployment %s: selector %v does not match its pod labels %v", d.Name, sel, podLabels)
	}
	if got := podLabels["app.kubernetes.io/component"]; got != component {
		t.Errorf("Deployment %s: pods' component label %q, want %q", d.Name, got, component)
	}

	c := container(t, d)
	if got := namedPort(t, c, "admin"); got != adminPort {
		t.Errorf("%s: admin port %d, want %d", d.Name, got, adminPort)
	}
	if listen := envValue(t, c, "MCPFLEET_ADMIN_LISTEN"); !strings.HasSuffix(listen, fmt.Sprintf(":%d", adminPort)) {
		t.Errorf("%s: MCPFLEET_ADMIN_LISTEN=%q does not bind the admin port %d", d.Name, listen, adminPort)
	}
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{
		{"startupProbe", c.StartupProbe, "/healthz"},
		{"readinessProbe", c.ReadinessProbe, "/readyz"},
		{"livenessProbe", c.LivenessProbe, "/healthz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: %s is not an httpGet probe", d.Name, p.kind)
			continue
		}
		if got := portNumber(t, c, p.probe.HTTPGet.Port); got != adminPort {
			t.Errorf("%s: %s on port %d, want the admin port %d", d.Name, p.kind, got, adminPort)
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: %s path %q, want %q", d.Name, p.kind, p.probe.HTTPGet.Path, p.path)
		}
	}
	if sp := c.StartupProbe; sp != nil {
		budget := int64(sp.PeriodSeconds) * int64(sp.FailureThreshold)
		if connect := envSeconds(t, c, "MCPFLEET_CONNECT_TIMEOUT"); budget < connect {
			t.Errorf("%s: the startup probe allows %ds, less than MCPFLEET_CONNECT_TIMEOUT (%ds)", d.Name, budget, connect)
		}
	}

	// Security contexts: the pod's, with the container's over it.
	ps := d.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Errorf("%s: pod securityContext.runAsNonRoot is not true", d.Name)
	}
	if ps == nil || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod seccompProfile is not RuntimeDefault", d.Name)
	}
	cs := c.SecurityContext
	if cs == nil {
		t.Fatalf("%s: no container securityContext", d.Name)
	}
	if cs.RunAsNonRoot != nil && !*cs.RunAsNonRoot {
		t.Errorf("%s: container runAsNonRoot false", d.Name)
	}
	if cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", d.Name)
	}
	if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", d.Name)
	}
	if cs.Privileged != nil && *cs.Privileged {
		t.Errorf("%s: privileged", d.Name)
	}
	if cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") || len(cs.Capabilities.Add) > 0 {
		t.Errorf("%s: capabilities %+v, want drop ALL and no add", d.Name, cs.Capabilities)
	}
	if cs.SeccompProfile != nil && cs.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: container seccompProfile %q", d.Name, cs.SeccompProfile.Type)
	}

	for _, rl := range []struct {
		what string
		list corev1.ResourceList
	}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl.list[res]; !ok || q.IsZero() {
				t.Errorf("%s: no %s %s", d.Name, res, rl.what)
			}
		}
	}

	// The grace period covers the drain (frontends: the lame-duck delay
	// first), so a pod is not killed while it drains.
	need := envSeconds(t, c, "MCPFLEET_DRAIN_TIMEOUT")
	if component == "frontend" {
		delay := envSeconds(t, c, "MCPFLEET_DRAIN_DELAY")
		if delay <= 0 {
			t.Errorf("%s: MCPFLEET_DRAIN_DELAY is %ds: a frontend would close connections before leaving the endpoints", d.Name, delay)
		}
		need += delay
	}
	g := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil || *g < need {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want at least %ds (drain delay + drain timeout)", d.Name, deref(g), need)
	}

	var tmp bool
	for _, m := range c.VolumeMounts {
		tmp = tmp || m.MountPath == "/tmp"
	}
	if !tmp {
		t.Errorf("%s: no writable /tmp under the read-only root filesystem", d.Name)
	}
	if d.Spec.Template.Spec.AutomountServiceAccountToken == nil || *d.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token is mounted", d.Name)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkWorkerStateKey checks that the worker's MCPFLEET_STATE_KEY comes
// from the Secret secret's key, that frontends do not get it, and that
// no pod spec holds the key itself.
func checkWorkerStateKey(t *testing.T, r *rendered, secret, key string) {
	t.Helper()
	w := container(t, r.deployments[workerName])
	e, ok := env(w, "MCPFLEET_STATE_KEY")
	if !ok {
		t.Fatal("the worker has no MCPFLEET_STATE_KEY")
	}
	if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Fatalf("the worker's MCPFLEET_STATE_KEY is not a secretKeyRef: %+v", e)
	}
	ref := e.ValueFrom.SecretKeyRef
	if ref.Name != secret || ref.Key != key {
		t.Errorf("MCPFLEET_STATE_KEY from Secret %q key %q, want %q key %q", ref.Name, ref.Key, secret, key)
	}
	f := container(t, r.deployments[frontendName])
	if _, ok := env(f, "MCPFLEET_STATE_KEY"); ok {
		t.Error("the frontend gets MCPFLEET_STATE_KEY (only workers seal requestState)")
	}
	// No literal copy of the key anywhere in a pod spec.
	for _, d := range r.deployments {
		for _, e := range container(t, d).Env {
			if strings.Contains(e.Value, testStateKey) {
				t.Errorf("%s: %s holds the state key itself", d.Name, e.Name)
			}
		}
	}
}

// checkServices checks the MCP Service (the frontends' MCP port, never the
// admin port) and the admin Services.
func checkServices(t *testing.T, r *rendered, adminPort int32) {
	t.Helper()
	fd, wd := r.deployments[frontendName], r.deployments[workerName]
	fc := container(t, fd)
	mcpPort := namedPort(t, fc, "mcp")
	if listen := envValue(t, fc, "MCPFLEET_LISTEN"); listen != fmt.Sprintf("0.0.0.0:%d", mcpPort) {
		t.Errorf("frontend MCPFLEET_LISTEN=%q, want 0.0.0.0:%d", listen, mcpPort)
	}
	svc := r.services[frontendName]
	if svc == nil {
		t.Fatalf("no MCP Service %s", frontendName)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(fd.Spec.Template.Labels)) ||
		labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(wd.Spec.Template.Labels)) {
		t.Errorf("MCP Service selector %v does not select the frontends alone", svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) == 0 {
		t.Fatal("the MCP Service has no port")
	}
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		got := portNumber(t, fc, target)
		if got == adminPort || got != mcpPort {
			t.Errorf("MCP Service port %q targets %d, want the MCP port %d (never the admin port %d)", p.Name, got, mcpPort, adminPort)
		}
	}
	if svc.Spec.SessionAffinity != "" && svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("MCP Service sessionAffinity %q: no stickiness is needed", svc.Spec.SessionAffinity)
	}
	for name, d := range map[string]*appsv1.Deployment{frontendAdmin: fd, workerAdmin: wd} {
		s := r.services[name]
		if s == nil {
			t.Errorf("no admin Service %s", name)
			continue
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s does not select %s's pods", name, d.Name)
		}
		if len(s.Spec.Ports) != 1 || portNumber(t, container(t, d), s.Spec.Ports[0].TargetPort) != adminPort {
			t.Errorf("%s ports %+v, want the admin port alone", name, s.Spec.Ports)
		}
	}
}

// checkHPA checks the HPA of d: it scales d, between min and max, on the
// cpu (and memory) utilization targets; d then leaves replicas to it.
func checkHPA(t *testing.T, r *rendered, d *appsv1.Deployment, min, max int32, cpu, memory int32) {
	t.Helper()
	h := r.hpas[d.Name]
	if h == nil {
		t.Fatalf("no HorizontalPodAutoscaler %s", d.Name)
	}
	ref := h.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("HPA %s scales %+v, want Deployment %s", h.Name, ref, d.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != min || h.Spec.MaxReplicas != max {
		t.Errorf("HPA %s: %v..%d replicas, want %d..%d", h.Name, deref(h.Spec.MinReplicas), h.Spec.MaxReplicas, min, max)
	}
	got := map[corev1.ResourceName]int32{}
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil || m.Resource.Target.AverageUtilization == nil {
			t.Errorf("HPA %s: metric %+v is not a resource utilization", h.Name, m)
			continue
		}
		got[m.Resource.Name] = *m.Resource.Target.AverageUtilization
	}
	want := map[corev1.ResourceName]int32{corev1.ResourceCPU: cpu}
	if memory > 0 {
		want[corev1.ResourceMemory] = memory
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HPA %s targets %v, want %v", h.Name, got, want)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("Deployment %s sets replicas (%d) beside its HPA", d.Name, *d.Spec.Replicas)
	}
}

// checkPDB checks that the PDB of d selects d's pods.
func checkPDB(t *testing.T, r *rendered, d *appsv1.Deployment) {
	t.Helper()
	p := r.pdbs[d.Name]
	if p == nil {
		t.Fatalf("no PodDisruptionBudget %s", d.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PDB %s does not select %s's pods", p.Name, d.Name)
	}
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		t.Errorf("PDB %s: want exactly one of minAvailable and maxUnavailable", p.Name)
	}
}

// checkCommon runs the checks every render must pass.
func checkCommon(t *testing.T, r *rendered, adminPort int32) {
	t.Helper()
	fd, wd := r.deployments[frontendName], r.deployments[workerName]
	if fd == nil || wd == nil {
		t.Fatalf("Deployments %s and %s: got %v", frontendName, workerName, keys(r.deployments))
	}
	if len(r.deployments) != 2 {
		t.Errorf("Deployments %v, want the frontend's and the worker's", keys(r.deployments))
	}
	checkDeployment(t, fd, "frontend", adminPort)
	checkDeployment(t, wd, "worker", adminPort)
	checkServices(t, r, adminPort)
	checkPDB(t, r, fd)
	checkPDB(t, r, wd)
	for _, d := range []*appsv1.Deployment{fd, wd} {
		if sa := d.Spec.Template.Spec.ServiceAccountName; r.serviceAccounts[sa] == nil {
			t.Errorf("%s runs as ServiceAccount %q, which the chart does not render", d.Name, sa)
		}
	}
	// Both roles reach the same NATS.
	a, aok := env(container(t, fd), "MCPFLEET_NATS_URL")
	b, bok := env(container(t, wd), "MCPFLEET_NATS_URL")
	if !aok || !bok || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("frontends on NATS %+v, workers on %+v", a, b)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
