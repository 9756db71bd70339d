package testenv

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// RedisSentinel is a Redis master and its replica watched by three
// Sentinels, all real processes on loopback, each in a directory of its
// own. The data servers persist append-only (appendfsync everysec); the
// sentinels agree with a quorum of 2 that a master silent for 1 s
// (down-after-milliseconds) is down and fail it over (failover-timeout
// 5 s), so a master killed is replaced by its replica within a few
// seconds.
type RedisSentinel struct {
	// MasterName is the name the sentinels monitor the master by.
	MasterName string
	// Servers holds the data servers' processes: Servers[0] starts as the
	// master, Servers[1] as its replica. Restart replaces an entry.
	Servers []*Proc
	// ServerAddrs and SentinelAddrs hold the addresses (127.0.0.1:port),
	// the same across restarts.
	ServerAddrs   []string
	Sentinels     []*Proc
	SentinelAddrs []string
	servers       []*redisNode
	admin         *redisAdmin
}

// StartRedisSentinel starts a RedisSentinel and waits until it is healthy
// (see WaitHealthy).
func StartRedisSentinel(tb testing.TB) *RedisSentinel {
	tb.Helper()
	s := &RedisSentinel{MasterName: "mymaster", admin: newRedisAdmin(tb)}
	data := "save \"\"\nappendonly yes\nappendfsync everysec\nrepl-diskless-sync-delay 0\n"
	for i := range 2 {
		conf := data
		if i == 1 {
			conf += "replicaof " + strings.Replace(s.ServerAddrs[0], ":", " ", 1) + "\n"
		}
		n := newRedisNode(tb, fmt.Sprintf("redis-server server%d", i+1), FreePort(tb), conf)
		s.servers = append(s.servers, n)
		s.ServerAddrs = append(s.ServerAddrs, n.addr)
		s.Servers = append(s.Servers, n.start(tb))
	}
	// The replica first: a sentinel learns of replicas from the master's
	// INFO, which it reads every 10 s once started.
	testutil.PollFor(tb, HangGuard(30*time.Second), "the replica to sync", func() bool {
		return infoField(s.admin.text(s.ServerAddrs[1], "info", "replication"), "master_link_status") == "up"
	})
	for i := range 3 {
		n := newRedisNode(tb, fmt.Sprintf("redis-sentinel sentinel%d", i+1), FreePort(tb), fmt.Sprintf(`sentinel monitor %[1]s %[2]s 2
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 5000
sentinel parallel-syncs %[1]s 1
`, s.MasterName, strings.Replace(s.ServerAddrs[0], ":", " ", 1)))
		s.SentinelAddrs = append(s.SentinelAddrs, n.addr)
		s.Sentinels = append(s.Sentinels, n.start(tb, "--sentinel"))
	}
	s.WaitHealthy(tb)
	return s
}

// URL returns the set-up's URL in the form of redis.ParseFailoverURL
// (what --redis-url takes with --redis-mode sentinel): every sentinel and
// the master name.
func (s *RedisSentinel) URL() string {
	return "redis://" + s.SentinelAddrs[0] + "/0?addr=" + strings.Join(s.SentinelAddrs[1:], "&addr=") + "&master_name=" + s.MasterName
}

// fields returns a SENTINEL reply of field/value pairs as a map.
func fields(v any) map[string]string {
	l, _ := v.([]any)
	m := map[string]string{}
	for i := 0; i+1 < len(l); i += 2 {
		k, _ := l[i].(string)
		m[k] = fmt.Sprint(l[i+1])
	}
	return m
}

// unhealthy returns why the set-up is not healthy, or "": one running
// server is the master, which every sentinel names, flags up and knows
// the two other sentinels of; every other running server replicates it
// with its link up, and every sentinel sees it up. dead is a server
// (killed) that must not be the master, or -1.
func (s *RedisSentinel) unhealthy(dead int) string {
	master := -1
	for i, p := range s.Servers {
		if !p.Exited() && infoField(s.admin.text(s.ServerAddrs[i], "info", "replication"), "role") == "master" {
			if master >= 0 {
				return fmt.Sprintf("servers %d and %d are both masters", master+1, i+1)
			}
			master = i
		}
	}
	if master < 0 || master == dead {
		return "no running master"
	}
	for i, p := range s.Servers {
		if i == master || p.Exited() {
			continue
		}
		info := s.admin.text(s.ServerAddrs[i], "info", "replication")
		if infoField(info, "master_link_status") != "up" || "127.0.0.1:"+infoField(info, "master_port") != s.ServerAddrs[master] {
			return fmt.Sprintf("server%d: replica of port %s, link %q", i+1, infoField(info, "master_port"), infoField(info, "master_link_status"))
		}
		for j, addr := range s.SentinelAddrs {
			up := false
			replicas, _ := s.admin.do(addr, "sentinel", "replicas", s.MasterName).Slice()
			for _, r := range replicas {
				f := fields(r)
				up = up || f["name"] == s.ServerAddrs[i] && f["flags"] == "slave" && f["master-link-status"] == "ok"
			}
			if !up {
				return fmt.Sprintf("sentinel%d does not see server%d as an up replica", j+1, i+1)
			}
		}
	}
	for j, addr := range s.SentinelAddrs {
		if s.Sentinels[j].Exited() {
			continue
		}
		got, _ := s.admin.do(addr, "sentinel", "get-master-addr-by-name", s.MasterName).StringSlice()
		if want := strings.Split(s.ServerAddrs[master], ":"); !slices.Equal(got, want) {
			return fmt.Sprintf("sentinel%d names master %v, not server%d", j+1, got, master+1)
		}
		m, _ := s.admin.do(addr, "sentinel", "master", s.MasterName).Result()
		if f := fields(m); f["flags"] != "master" || f["num-other-sentinels"] != "2" {
			return fmt.Sprintf("sentinel%d: master flags %q, %s other sentinels", j+1, f["flags"], f["num-other-sentinels"])
		}
	}
	return ""
}

func (s *RedisSentinel) wait(tb testing.TB, what string, dead int) {
	tb.Helper()
	guard := HangGuard(60 * time.Second)
	var why string
	if !testutil.WaitFor(guard, func() bool { why = s.unhealthy(dead); return why == "" }) {
		tb.Fatalf("testenv: timed out after %v waiting for %s: %s", guard, what, why)
	}
}

// WaitHealthy waits until the set-up is healthy: one master, which every
// sentinel names and sees up with the two other sentinels, and every
// running replica in sync with it and seen up by every sentinel. The wait
// is bounded (a hang guard, stretched by HangGuard).
func (s *RedisSentinel) WaitHealthy(tb testing.TB) {
	tb.Helper()
	s.wait(tb, "the Sentinel set-up to be healthy", -1)
}

// Master returns the index (into Servers) of the running master.
func (s *RedisSentinel) Master(tb testing.TB) int {
	tb.Helper()
	for i, p := range s.Servers {
		if !p.Exited() && infoField(s.admin.text(s.ServerAddrs[i], "info", "replication"), "role") == "master" {
			return i
		}
	}
	tb.Fatal("testenv: no Redis master runs")
	return -1
}

// KillMaster SIGKILLs the master and returns its index into Servers.
func (s *RedisSentinel) KillMaster(tb testing.TB) int {
	tb.Helper()
	m := s.Master(tb)
	s.Servers[m].Kill()
	return m
}

// WaitFailover waits until the sentinels have replaced the master killed
// (server old) by its replica: every sentinel names the new master, which
// says it is one. It returns the new master's index. The wait is bounded
// (a hang guard).
func (s *RedisSentinel) WaitFailover(tb testing.TB, old int) int {
	tb.Helper()
	s.wait(tb, fmt.Sprintf("the failover of server%d", old+1), old)
	return s.Master(tb)
}

var replicaofRE = regexp.MustCompile(`(?im)^\s*(replicaof|slaveof)\s.*\n`)

// Restart starts server i again (stopped or killed) on the same port with
// the same data, as a replica of the running master (what an operator's
// orchestration does with a former master; the sentinels would convert
// it too, within their 10 s INFO period), and waits until the set-up is
// healthy with it.
func (s *RedisSentinel) Restart(tb testing.TB, i int) *Proc {
	tb.Helper()
	m := s.Master(tb)
	if m == i {
		tb.Fatalf("testenv: Restart(%d) of the running master", i)
	}
	n := s.servers[i]
	conf, err := os.ReadFile(n.conf)
	if err != nil {
		tb.Fatal(err)
	}
	conf = replicaofRE.ReplaceAll(conf, nil)
	conf = append(conf, "\nreplicaof "+strings.Replace(s.ServerAddrs[m], ":", " ", 1)+"\n"...)
	if err := os.WriteFile(n.conf, conf, 0o600); err != nil {
		tb.Fatal(err)
	}
	s.Servers[i] = s.Servers[i].Restart(tb)
	s.WaitHealthy(tb)
	return s.Servers[i]
}
