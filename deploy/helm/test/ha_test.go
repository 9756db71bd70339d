package helmtest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"sigs.k8s.io/yaml"
)

// haValuesFile is the chart's high-availability values file.
var haValuesFile = filepath.Join(chartDir, "values-ha.yaml")

// TestHAValuesFile: values-ha.yaml turns on what it says it does, in the
// keys of the pinned dependencies (the NATS chart 1.x's config.cluster, the
// Bitnami Redis chart's replication architecture with Sentinel).
func TestHAValuesFile(t *testing.T) {
	b, err := os.ReadFile(haValuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Nats struct {
			Enabled bool `json:"enabled"`
			Config  struct {
				Cluster struct {
					Enabled  bool `json:"enabled"`
					Replicas int  `json:"replicas"`
				} `json:"cluster"`
				Merge map[string]any `json:"merge"`
			} `json:"config"`
			PodTemplate map[string]any `json:"podTemplate"`
			NatsBox     map[string]any `json:"natsBox"`
		} `json:"nats"`
		Redis struct {
			Enabled      bool   `json:"enabled"`
			Architecture string `json:"architecture"`
			Auth         struct {
				Enabled  bool `json:"enabled"`
				Sentinel bool `json:"sentinel"`
			} `json:"auth"`
			Replica struct {
				ReplicaCount int `json:"replicaCount"`
			} `json:"replica"`
			Sentinel struct {
				Enabled               bool   `json:"enabled"`
				MasterSet             string `json:"masterSet"`
				Quorum                int    `json:"quorum"`
				DownAfterMilliseconds int    `json:"downAfterMilliseconds"`
				FailoverTimeout       int    `json:"failoverTimeout"`
			} `json:"sentinel"`
		} `json:"redis"`
	}
	// Strict: a key outside these (a misspelt one, a mode the chart does
	// not read) fails.
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("values-ha.yaml: %v", err)
	}
	n, r := v.Nats, v.Redis
	if !n.Enabled || !n.Config.Cluster.Enabled || n.Config.Cluster.Replicas != 3 || n.Config.Merge["max_payload"] != "<< 8MB >>" {
		t.Errorf("values-ha.yaml nats: %+v, want the chart's 3-node cluster with max_payload 8MB", n)
	}
	if !r.Enabled || r.Architecture != "replication" || !r.Sentinel.Enabled || !r.Auth.Enabled || !r.Auth.Sentinel ||
		r.Replica.ReplicaCount != 3 || r.Sentinel.Quorum != 2 || r.Sentinel.MasterSet == "" {
		t.Errorf("values-ha.yaml redis: %+v, want replication with Sentinel, 3 pods, quorum 2, a password", r)
	}
}

// TestHAValues renders values-ha.yaml (on the stubbed chart: it enables
// both dependencies) and checks what the fleet gets: the NATS cluster's
// client Service, and on the frontends --redis-mode sentinel and a URL that
// go-redis's ParseFailoverURL (what --redis-mode sentinel parses) reads as
// the sentinels of the Redis chart's pods, its master set and password.
func TestHAValues(t *testing.T) {
	chart := stubbedChart(t)
	for _, kube := range []string{kubeOldest, kubeRecent} {
		t.Run("kube-"+kube, func(t *testing.T) {
			r := render(t, chart, kube, []string{haValuesFile}, "stateKey.value="+testStateKey)
			checkCommon(t, r, defaultAdmin)
			fc, wc := container(t, r.deployments[frontendName]), container(t, r.deployments[workerName])
			if got, want := envValue(t, fc, "MCPFLEET_NATS_URL"), "nats://"+release+"-nats."+namespace+".svc:4222"; got != want {
				t.Errorf("MCPFLEET_NATS_URL=%q, want %q (the NATS chart's client Service)", got, want)
			}
			if got := envValue(t, fc, "MCPFLEET_REDIS_MODE"); got != "sentinel" {
				t.Errorf("MCPFLEET_REDIS_MODE=%q, want sentinel", got)
			}
			for _, name := range []string{"MCPFLEET_REDIS_MODE", "MCPFLEET_REDIS_URL", "REDIS_PASSWORD"} {
				if _, ok := env(wc, name); ok {
					t.Errorf("the worker gets %s (only frontends use the session store)", name)
				}
			}
			pw, ok := env(fc, "REDIS_PASSWORD")
			if !ok || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil ||
				pw.ValueFrom.SecretKeyRef.Name != release+"-redis" || pw.ValueFrom.SecretKeyRef.Key != "redis-password" {
				t.Errorf("REDIS_PASSWORD %+v, want the Redis chart's Secret %s-redis key redis-password", pw, release)
			}
			if i, j := envIndex(fc, "REDIS_PASSWORD"), envIndex(fc, "MCPFLEET_REDIS_URL"); i < 0 || i > j {
				t.Errorf("REDIS_PASSWORD (at %d) must come before MCPFLEET_REDIS_URL (at %d)", i, j)
			}
			// As the kubelet expands it.
			u := strings.ReplaceAll(envValue(t, fc, "MCPFLEET_REDIS_URL"), "$(REDIS_PASSWORD)", "s3cret")
			o, err := redis.ParseFailoverURL(u)
			if err != nil {
				t.Fatalf("MCPFLEET_REDIS_URL %q: %v", u, err)
			}
			var sentinels []string
			for i := range 3 {
				// The pods of the chart's StatefulSet <fullname>-node, by
				// name in its headless Service, on the sentinel port.
				sentinels = append(sentinels, release+"-redis-node-"+strconv.Itoa(i)+"."+release+"-redis-headless."+namespace+".svc:26379")
			}
			if !slices.Equal(o.SentinelAddrs, sentinels) || o.MasterName != "mymaster" || o.DB != 0 ||
				o.Password != "s3cret" || o.SentinelPassword != "s3cret" {
				t.Errorf("MCPFLEET_REDIS_URL reads as sentinels %v, master %q, db %d, password %q, sentinel password %q;\n"+
					"want %v, mymaster, 0, the chart's password for both", o.SentinelAddrs, o.MasterName, o.DB, o.Password, o.SentinelPassword, sentinels)
			}
			t.Logf("%d objects, decoded strictly", r.count)
		})
	}
}

// TestRedisModes: externalRedis.mode reaches the frontends as
// MCPFLEET_REDIS_MODE (single, the default, as nothing), and the Redis
// chart's architecture decides with redis.enabled.
func TestRedisModes(t *testing.T) {
	key := "stateKey.value=" + testStateKey
	chart := stubbedChart(t)
	for _, tc := range []struct {
		chart string
		sets  []string
		want  string // "" for none
	}{
		{chartDir, []string{"externalRedis.mode=single"}, ""},
		{chartDir, []string{"externalRedis.mode=cluster"}, "cluster"},
		{chartDir, []string{"externalRedis.mode=sentinel", "externalRedis.existingSecret=redis-url"}, "sentinel"},
		{chart, []string{"redis.enabled=true", "externalRedis.mode=cluster"}, ""}, // standalone
		{chart, []string{"redis.enabled=true", "redis.architecture=replication"}, ""},
		{chart, []string{"redis.enabled=true", "redis.architecture=replication", "redis.sentinel.enabled=true"}, "sentinel"},
		{chart, []string{"redis.enabled=true", "redis.sentinel.enabled=true"}, ""}, // the chart ignores Sentinel when standalone
	} {
		t.Run(strings.Join(tc.sets, ","), func(t *testing.T) {
			r := render(t, tc.chart, kubeRecent, nil, append([]string{key}, tc.sets...)...)
			e, ok := env(container(t, r.deployments[frontendName]), "MCPFLEET_REDIS_MODE")
			if got := e.Value; ok != (tc.want != "") || got != tc.want {
				t.Errorf("MCPFLEET_REDIS_MODE %+v (present: %v), want %q", e, ok, tc.want)
			}
		})
	}
	// Sentinel without auth: a URL with no password at all.
	r := render(t, chart, kubeRecent, nil, key, "redis.enabled=true", "redis.architecture=replication",
		"redis.sentinel.enabled=true", "redis.auth.enabled=false", "redis.replica.replicaCount=2")
	u := envValue(t, container(t, r.deployments[frontendName]), "MCPFLEET_REDIS_URL")
	o, err := redis.ParseFailoverURL(u)
	if err != nil || len(o.SentinelAddrs) != 2 || o.Password != "" || o.SentinelPassword != "" || strings.Contains(u, "REDIS_PASSWORD") {
		t.Errorf("Sentinel without auth, 2 pods: MCPFLEET_REDIS_URL %q (%+v, %v)", u, o, err)
	}
}
