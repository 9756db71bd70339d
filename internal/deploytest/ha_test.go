package deploytest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/redis/go-redis/v9"
)

// The ha profile of deploy/compose.yaml: a NATS cluster, a Redis Cluster
// and the fleet on them.
var (
	haNATS  = []string{"nats-1", "nats-2", "nats-3"}
	haRedis = []string{"redis-1", "redis-2", "redis-3", "redis-4", "redis-5", "redis-6"}
	haFleet = []string{"redis-cluster-init", "worker-ha", "frontend-ha", "lb-ha"}
)

const (
	haNATSURL = "nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222"
	// haEntryPoints are the services the README and compose.yaml's header
	// name to run the ha profile alone.
	haEntryPoints = "lb-ha worker-ha"
)

// checkHAProfile checks the ha profile as written: which services it has
// and what they run, against the default services they derive from; the
// NATS configuration as nats-server reads it; the Redis URL as go-redis
// parses a cluster URL; nginx-ha.conf against nginx.conf.
func checkHAProfile(t *testing.T, c *composeFile) {
	t.Helper()
	want := slices.Concat(haNATS, haRedis, haFleet)
	var got []string
	for _, name := range sortedKeys(c.Services) {
		svc := c.Services[name]
		switch {
		case slices.Contains(svc.Profiles, "ha"):
			got = append(got, name)
			if !reflect.DeepEqual(svc.Profiles, []string{"ha"}) {
				t.Errorf("%s: profiles %v, want [ha]", name, svc.Profiles)
			}
			for dep := range svc.DependsOn {
				if !slices.Contains(want, dep) {
					t.Errorf("%s depends on %s: the ha profile must run without the default services", name, dep)
				}
			}
		case len(svc.Profiles) == 0:
			for dep := range svc.DependsOn {
				if slices.Contains(want, dep) {
					t.Errorf("%s, a default service, depends on %s of the ha profile", name, dep)
				}
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the ha profile has %v, want %v", got, want)
	}
	// `up lb-ha worker-ha` starts the whole profile and nothing else.
	order := startOrder(t, c, strings.Fields(haEntryPoints)...)
	slices.Sort(order)
	if !slices.Equal(order, want) {
		t.Errorf("up %s starts %v, want the ha profile %v", haEntryPoints, order, want)
	}

	// NATS: three nodes of the nats service's image and healthcheck, each
	// with its name, on deploy/nats-cluster.conf.
	nats := c.Services["nats"]
	for _, name := range haNATS {
		n := c.Services[name]
		if n.Image != nats.Image || !reflect.DeepEqual(n.Healthcheck, nats.Healthcheck) || n.Restart != nats.Restart {
			t.Errorf("%s: image %q, healthcheck %+v, restart %q; want the nats service's", name, n.Image, n.Healthcheck, n.Restart)
		}
		wantCmd := []string{"nats-server", "--config", "/etc/nats/nats-server.conf", "--name", name}
		if !reflect.DeepEqual(n.Command, wantCmd) || !reflect.DeepEqual(n.Volumes, []string{"./nats-cluster.conf:/etc/nats/nats-server.conf:ro"}) {
			t.Errorf("%s: command %v, volumes %v; want %v on deploy/nats-cluster.conf", name, n.Command, n.Volumes, wantCmd)
		}
	}
	checkNATSClusterConfig(t)

	// Redis: six cluster nodes of the redis service's image and
	// healthcheck, append-only, and none on the redis service's volume.
	rs := c.Services["redis"]
	for _, name := range haRedis {
		r := c.Services[name]
		if r.Image != rs.Image || !reflect.DeepEqual(r.Healthcheck, rs.Healthcheck) || r.Restart != rs.Restart {
			t.Errorf("%s: image %q, healthcheck %+v, restart %q; want the redis service's", name, r.Image, r.Healthcheck, r.Restart)
		}
		args := strings.Join(r.Command, " ")
		for _, a := range []string{"--cluster-enabled yes", "--appendonly yes", "--appendfsync everysec"} {
			if r.Command[0] != "redis-server" || !strings.Contains(args, a) {
				t.Errorf("%s: command %v, want redis-server with %s", name, r.Command, a)
			}
		}
		if len(r.Volumes) != 0 {
			t.Errorf("%s: volumes %v, want none (the image's /data, a volume of its own per container)", name, r.Volumes)
		}
	}
	checkClusterInit(t, c)

	// The fleet: the default services' settings, on the NATS cluster and
	// the Redis Cluster.
	fe, feHA := c.Services["frontend"], c.Services["frontend-ha"]
	w, wHA := c.Services["worker"], c.Services["worker-ha"]
	if !reflect.DeepEqual(feHA.Build, fe.Build) || feHA.Image != fe.Image || !reflect.DeepEqual(feHA.Entrypoint, fe.Entrypoint) {
		t.Errorf("frontend-ha: build %+v, image %q, entrypoint %v; want the frontend service's", feHA.Build, feHA.Image, feHA.Entrypoint)
	}
	if wHA.Image != w.Image || !reflect.DeepEqual(wHA.Entrypoint, w.Entrypoint) || wHA.Build != nil {
		t.Errorf("worker-ha: image %q, entrypoint %v, build %+v; want the worker service's", wHA.Image, wHA.Entrypoint, wHA.Build)
	}
	for _, p := range [][2]*service{{fe, feHA}, {w, wHA}} {
		if p[1].StopGracePeriod != p[0].StopGracePeriod || !reflect.DeepEqual(p[1].Healthcheck, p[0].Healthcheck) {
			t.Errorf("an ha service's stop_grace_period %q or healthcheck %+v differ from its default service's", p[1].StopGracePeriod, p[1].Healthcheck)
		}
	}
	checkEnvDiff(t, "worker-ha", w.Environment, wHA.Environment, map[string]string{"MCPFLEET_NATS_URL": haNATSURL})
	checkEnvDiff(t, "frontend-ha", fe.Environment, feHA.Environment, map[string]string{
		"MCPFLEET_NATS_URL":      haNATSURL,
		"MCPFLEET_REDIS_MODE":    "cluster",
		"MCPFLEET_REDIS_URL":     feHA.Environment["MCPFLEET_REDIS_URL"], // checked below
		"MCPFLEET_ALLOWED_HOSTS": feHA.Environment["MCPFLEET_ALLOWED_HOSTS"],
	})
	checkClusterURL(t, feHA.Environment["MCPFLEET_REDIS_URL"])
	wantDeps := map[string]dependency{"redis-cluster-init": {Condition: "service_completed_successfully"}}
	for _, n := range haNATS {
		wantDeps[n] = dependency{Condition: "service_healthy"}
	}
	if !maps.Equal(feHA.DependsOn, wantDeps) {
		t.Errorf("frontend-ha depends on %v, want %v", feHA.DependsOn, wantDeps)
	}
	delete(wantDeps, "redis-cluster-init")
	if !maps.Equal(wHA.DependsOn, wantDeps) {
		t.Errorf("worker-ha depends on %v, want %v", wHA.DependsOn, wantDeps)
	}

	// nginx: lb's, on nginx-ha.conf, in front of frontend-ha.
	lb, lbHA := c.Services["lb"], c.Services["lb-ha"]
	if lbHA.Image != lb.Image || !reflect.DeepEqual(lbHA.Healthcheck, lb.Healthcheck) ||
		!reflect.DeepEqual(lbHA.Volumes, []string{"./nginx-ha.conf:/etc/nginx/nginx.conf:ro"}) || len(lbHA.Ports) != 1 ||
		!reflect.DeepEqual(lbHA.DependsOn, map[string]dependency{"frontend-ha": {Condition: "service_healthy"}}) {
		t.Errorf("lb-ha: image %q, volumes %v, ports %v, depends_on %v", lbHA.Image, lbHA.Volumes, lbHA.Ports, lbHA.DependsOn)
	}
	checkNginxHA(t)
}

// checkEnvDiff: an ha service's environment is its default service's
// with the changes given, and no other.
func checkEnvDiff(t *testing.T, name string, base, ha, changes map[string]string) {
	t.Helper()
	want := maps.Clone(base)
	maps.Copy(want, changes)
	if !maps.Equal(ha, want) {
		t.Errorf("%s: environment %v, want %v", name, ha, want)
	}
}

// checkNATSClusterConfig reads deploy/nats-cluster.conf as nats-server
// v2.15.2 does: the client port and max_payload of deploy/nats.conf, and a
// named cluster with routes to the three nodes.
func checkNATSClusterConfig(t *testing.T) {
	t.Helper()
	path := filepath.Join(deployDir(t), "nats-cluster.conf")
	o, err := natsserver.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("deploy/nats-cluster.conf: %v", err)
	}
	single, err := natsserver.ProcessConfigFile(filepath.Join(deployDir(t), "nats.conf"))
	if err != nil {
		t.Fatalf("deploy/nats.conf: %v", err)
	}
	if o.Port != single.Port || o.MaxPayload != single.MaxPayload || o.MaxPayload != 8<<20 || o.HTTPPort != single.HTTPPort {
		t.Errorf("deploy/nats-cluster.conf: port %d, max_payload %d, http port %d; want deploy/nats.conf's (%d, 8MB, %d)",
			o.Port, o.MaxPayload, o.HTTPPort, single.Port, single.HTTPPort)
	}
	var routes []string
	for _, r := range o.Routes {
		routes = append(routes, r.Host)
	}
	var want []string
	for _, n := range haNATS {
		want = append(want, n+":6222")
	}
	if o.Cluster.Name == "" || o.Cluster.Port != 6222 || !slices.Equal(routes, want) {
		t.Errorf("deploy/nats-cluster.conf: cluster %q on port %d, routes %v; want a named cluster on 6222 with routes %v",
			o.Cluster.Name, o.Cluster.Port, routes, want)
	}
	bin := testenv.FindBinary(t, "nats-server", "go install github.com/nats-io/nats-server/v2@v2.15.2")
	out, err := exec.Command(bin, "-t", "-c", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("nats-server -t -c deploy/nats-cluster.conf: %v\n%s", err, out)
	}
}

var clusterCreateRE = regexp.MustCompile(`(?m)^\s*exec redis-cli --cluster create ((?:\S+ )+)--cluster-replicas 1 --cluster-yes\s*$`)

// checkClusterInit: redis-cluster-init is a one-shot task of the redis
// image that waits for the six nodes and creates the cluster of all six,
// one replica per master, unless it is formed already.
func checkClusterInit(t *testing.T, c *composeFile) {
	t.Helper()
	init := c.Services["redis-cluster-init"]
	if init.Image != c.Services["redis"].Image || !oneShot(init) || init.Healthcheck != nil {
		t.Errorf("redis-cluster-init: image %q, restart %q, healthcheck %+v; want the redis image, run once", init.Image, init.Restart, init.Healthcheck)
	}
	if len(init.Command) != 3 || init.Command[0] != "sh" || init.Command[1] != "-c" {
		t.Fatalf("redis-cluster-init: command %v, want sh -c SCRIPT", init.Command)
	}
	m := clusterCreateRE.FindStringSubmatch(init.Command[2])
	var want []string
	for _, n := range haRedis {
		want = append(want, n+":6379")
	}
	if m == nil || !slices.Equal(strings.Fields(m[1]), want) {
		t.Errorf("redis-cluster-init does not create the cluster of %v:\n%s", want, init.Command[2])
	}
	if !strings.Contains(init.Command[2], "redis-cli -u redis://redis-1:6379 cluster info") {
		t.Errorf("redis-cluster-init does not look for a cluster already formed:\n%s", init.Command[2])
	}
	deps := map[string]dependency{}
	for _, n := range haRedis {
		deps[n] = dependency{Condition: "service_healthy"}
	}
	if !maps.Equal(init.DependsOn, deps) {
		t.Errorf("redis-cluster-init depends on %v, want %v", init.DependsOn, deps)
	}
}

// checkClusterURL: MCPFLEET_REDIS_URL of frontend-ha is a cluster URL
// (go-redis's ParseClusterURL, what --redis-mode cluster parses) naming
// every node.
func checkClusterURL(t *testing.T, u string) {
	t.Helper()
	o, err := redis.ParseClusterURL(u)
	if err != nil {
		t.Fatalf("frontend-ha: MCPFLEET_REDIS_URL %q: %v", u, err)
	}
	var want []string
	for _, n := range haRedis {
		want = append(want, n+":6379")
	}
	if !slices.Equal(o.Addrs, want) {
		t.Errorf("frontend-ha: MCPFLEET_REDIS_URL names %v, want %v", o.Addrs, want)
	}
	if pu, _ := url.Parse(u); pu != nil && pu.Path != "" {
		t.Errorf("frontend-ha: MCPFLEET_REDIS_URL %q has a path: a Redis Cluster has database 0 only", u)
	}
}

// checkNginxHA: deploy/nginx-ha.conf is deploy/nginx.conf with frontend-ha
// in place of frontend (its header comment aside).
func checkNginxHA(t *testing.T) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(deployDir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if i := strings.Index(s, "\nevents {}"); i >= 0 {
			return s[i:] // the configuration after the header comment
		}
		t.Fatalf("deploy/%s: no `events {}`", name)
		return ""
	}
	const set = "set $frontends frontend:8080;"
	single, ha := read("nginx.conf"), read("nginx-ha.conf")
	if !strings.Contains(single, set) {
		t.Fatalf("deploy/nginx.conf has no %q", set)
	}
	if want := strings.Replace(single, set, "set $frontends frontend-ha:8080;", 1); ha != want {
		t.Errorf("deploy/nginx-ha.conf is not deploy/nginx.conf with frontend-ha in place of frontend: change both together")
	}
}

// TestComposeHA runs the ha profile as `docker compose --profile ha up
// --scale frontend-ha=2 --scale worker-ha=2 lb-ha worker-ha` would, in two
// steps: first what needs no frontend (the NATS cluster, the Redis
// Cluster that redis-cluster-init forms, the workers), checked as a
// cluster; then the frontends (--redis-mode cluster) and nginx, driven
// through nginx.
func TestComposeHA(t *testing.T) {
	env := stackEnv(t)
	c, err := loadCompose(env, map[string]bool{}, composePath(t))
	if err != nil {
		t.Fatal(err)
	}
	bins := imageBinaries(t, env["MCPFLEET_VERSION"])
	s := up(t, c, bins, map[string]int{"worker-ha": 2}, "worker-ha", "redis-cluster-init")
	checkNATSRoutes(t, s)
	ids := checkRedisCluster(t, s)

	// `up` again on a formed cluster runs redis-cluster-init again: it
	// leaves the cluster as it is, with success.
	again := s.start("redis-cluster-init", "redis-cluster-init-again", s.ips["redis-cluster-init"][0])
	s.waitCompleted(again, 60*time.Second)
	if !strings.Contains(again.proc.Log(), "already formed") {
		t.Errorf("redis-cluster-init on a formed cluster:\n%s", again.proc.Log())
	}
	if got := checkRedisCluster(t, s); !maps.Equal(got, ids) {
		t.Errorf("after redis-cluster-init again the nodes are %v, were %v", got, ids)
	}

	s.add(map[string]int{"frontend-ha": 2}, "lb-ha")
	url := "http://127.0.0.1:" + env["MCPFLEET_HA_PORT"] + "/mcp"
	legacy := testenv.NewClient(t, url)
	legacy.Initialize(nil)
	modern := testenv.NewModernClient(t, url)
	if got := toolNames(t, modern, true); !slices.Contains(got, "echo") {
		t.Errorf("tools/list through lb-ha: %v, want the demo tools", got)
	}
	// The legacy session's requests go round robin to both frontends,
	// which find it in the Redis Cluster.
	served := func() bool {
		for _, ctr := range s.ctrs["frontend-ha"] {
			if scrape(t, s.adminAddr(ctr))["mcpfleet_frontend_requests_total"] == 0 {
				return false
			}
		}
		return true
	}
	for n := 0; !served(); n++ {
		if n == 50 {
			t.Fatalf("nginx sent the session's %d requests to one frontend only", n)
		}
		if got := callText(t, legacy, false, "echo", map[string]any{"text": strconv.Itoa(n)}); got != strconv.Itoa(n) {
			t.Fatalf("echo %d in the session: %q", n, got)
		}
	}
	if got := callText(t, legacy, false, "echo", map[string]any{"text": "again"}); got != "again" {
		t.Errorf("echo in the session on the other frontend: %q", got)
	}
	if got := callText(t, modern, true, "echo", map[string]any{"text": "ha"}); got != "ha" {
		t.Errorf("2026-07-28 echo through lb-ha: %q", got)
	}
	if keys := redisKeys(t, s); keys == 0 {
		t.Error("no key in the Redis Cluster: where are the sessions?")
	}
	checkAdminOf(t, s, "frontend-ha", "worker-ha")
	s.running()
}

// checkNATSRoutes waits until every NATS node has routes to the other two
// (by name, from its /routez).
func checkNATSRoutes(t *testing.T, s *stack) {
	t.Helper()
	for _, name := range haNATS {
		ctr := s.ctrs[name][0]
		monitor := "http://" + net.JoinHostPort(ctr.ip, strconv.Itoa(s.port(name, 8222))) + "/routez"
		want := slices.DeleteFunc(slices.Clone(haNATS), func(n string) bool { return n == name })
		var got []string
		testutil.Poll(t, fmt.Sprintf("%s's routes to %v", name, want), func() bool {
			code, body := get(t, monitor)
			var rz natsserver.Routez
			if code != 200 || json.Unmarshal([]byte(body), &rz) != nil || rz.Name != name {
				t.Fatalf("GET %s: %d %s", monitor, code, body)
			}
			got = nil
			for _, r := range rz.Routes {
				if !slices.Contains(got, r.RemoteName) {
					got = append(got, r.RemoteName)
				}
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		})
	}
}

// checkRedisCluster waits until every node of the Redis Cluster reports
// it whole (state ok, all slots assigned, six nodes known, three masters
// with a replica each, as that node's gossip has it) and returns each
// node's id.
func checkRedisCluster(t *testing.T, s *stack) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, name := range haRedis {
		rdb := s.redisClient(name)
		var info, nodes string
		testutil.Poll(t, name+" reporting the cluster whole, 3 masters and 3 replicas", func() bool {
			var err error
			if info, err = rdb.ClusterInfo(t.Context()).Result(); err != nil {
				return false
			}
			if nodes, err = rdb.ClusterNodes(t.Context()).Result(); err != nil {
				return false
			}
			masters, replicas := 0, 0
			for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
				// <id> <addr> <flags> <master id or -> ... <slots>
				switch f := strings.Fields(l); {
				case len(f) > 8 && strings.Contains(f[2], "master"):
					masters++
				case len(f) > 3 && strings.Contains(f[2], "slave") && f[3] != "-":
					replicas++
				}
			}
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_assigned:16384") &&
				strings.Contains(info, "cluster_known_nodes:6") && masters == 3 && replicas == 3
		})
		id, err := rdb.ClusterMyID(t.Context()).Result()
		if err != nil {
			t.Fatalf("%s: CLUSTER MYID: %v", name, err)
		}
		ids[name] = id
	}
	return ids
}

// redisClient is a client of the single node svc.
func (s *stack) redisClient(svc string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(s.ips[svc][0], strconv.Itoa(s.port(svc, 6379)))})
	s.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisKeys counts the keys of the Redis Cluster (on the masters).
func redisKeys(t *testing.T, s *stack) int64 {
	t.Helper()
	var n int64
	for _, name := range haRedis {
		rdb := s.redisClient(name)
		role, err := rdb.Do(t.Context(), "ROLE").Slice()
		if err != nil || len(role) == 0 {
			t.Fatalf("%s: ROLE: %v", name, err)
		}
		if role[0] != "master" {
			continue
		}
		k, err := rdb.DBSize(t.Context()).Result()
		if err != nil {
			t.Fatalf("%s: DBSIZE: %v", name, err)
		}
		n += k
	}
	return n
}
