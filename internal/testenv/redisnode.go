package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisNode is one redis-server (or sentinel) of a RedisCluster or a
// RedisSentinel, started from a configuration file in a directory of its
// own; Proc.Restart starts it again from the same file, on the same
// port, with the same data.
type redisNode struct {
	owner testing.TB // the test of the set-up, which its processes outlive no test of
	name  string
	addr  string // 127.0.0.1:port
	dir   string
	conf  string // the configuration file (Sentinel and Redis rewrite it)
}

// newRedisNode writes conf (a redis.conf body; the port, bind, dir and
// logging lines are added) into a new directory and returns the node.
func newRedisNode(tb testing.TB, name string, port int, conf string) *redisNode {
	tb.Helper()
	dir := tb.TempDir()
	n := &redisNode{owner: tb, name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, conf: filepath.Join(dir, "redis.conf")}
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %q\ndaemonize no\nlogfile \"\"\n%s", port, dir, conf)
	if err := os.WriteFile(n.conf, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return n
}

// start runs the node (args: "--sentinel" for a sentinel) and waits until
// it accepts connections. The process belongs to the set-up's test, even
// when a subtest (re)starts it.
func (n *redisNode) start(tb testing.TB, args ...string) *Proc {
	tb.Helper()
	if tb != n.owner {
		tb = ownedTB{TB: n.owner, caller: tb}
	}
	bin := FindBinary(tb, "redis-server", "apt-get install redis-server")
	p := Start(tb, n.name, bin, append([]string{n.conf}, args...)...)
	p.restart = func(tb testing.TB) *Proc { return n.start(tb, args...) }
	WaitTCP(tb, n.addr, 10*time.Second)
	return p
}

// ownedTB is the testing.TB of a process that a subtest (caller) starts
// for the set-up of its parent test (TB): the process is stopped and
// checked at the end of the parent (its cleanup, errors and logs go to
// TB), while a failure to start it fails the caller at once.
type ownedTB struct {
	testing.TB
	caller testing.TB
}

func (o ownedTB) Helper()                           {}
func (o ownedTB) FailNow()                          { o.caller.FailNow() }
func (o ownedTB) Fatal(args ...any)                 { o.caller.Fatal(args...) }
func (o ownedTB) Fatalf(format string, args ...any) { o.caller.Fatalf(format, args...) }

// redisAdmin holds one plain client per node address, for the helpers'
// own commands (CLUSTER INFO, INFO replication, SENTINEL ...): fail fast,
// no retries, closed at cleanup.
type redisAdmin struct {
	mu      sync.Mutex
	clients map[string]*redis.Client
}

func newRedisAdmin(tb testing.TB) *redisAdmin {
	a := &redisAdmin{clients: map[string]*redis.Client{}}
	tb.Cleanup(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, c := range a.clients {
			_ = c.Close()
		}
	})
	return a
}

// do runs a command on the node at addr within a second.
func (a *redisAdmin) do(addr string, args ...any) *redis.Cmd {
	a.mu.Lock()
	c := a.clients[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second,
			MaxRetries: -1, PoolSize: 2, DisableIdentity: true, Protocol: 2})
		a.clients[addr] = c
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cmd := c.Do(ctx, args...)
	_ = cmd.Err()
	return cmd
}

// text runs a command whose reply is text (INFO, CLUSTER INFO, CLUSTER
// NODES) and returns it, or "" on error.
func (a *redisAdmin) text(addr string, args ...any) string {
	s, err := a.do(addr, args...).Text()
	if err != nil {
		return ""
	}
	return s
}

// infoField returns the value of field in an INFO-style reply ("k:v" lines).
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
