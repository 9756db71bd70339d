package sessionstore

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseRedisMode(t *testing.T) {
	for s, want := range map[string]RedisMode{"": RedisSingle, "single": RedisSingle, "cluster": RedisCluster, "sentinel": RedisSentinel} {
		if got, err := ParseRedisMode(s); err != nil || got != want {
			t.Errorf("ParseRedisMode(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{"Cluster", "failover", "standalone"} {
		if _, err := ParseRedisMode(s); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseRedisMode(%q) error = %v, want ErrInvalidConfig", s, err)
		}
	}
}

// Each mode takes go-redis's form of its URL; what the store needs is
// refused with the form wanted, never quoting the URL (a password).
func TestCheckRedisURL(t *testing.T) {
	good := map[RedisMode][]string{
		RedisSingle:   {"redis://127.0.0.1:6379/0", "rediss://u:p@h:6380/2", "unix:///run/redis.sock?db=1", "redis://h:1/0?max_retries=3"},
		RedisCluster:  {"redis://h1:7000", "redis://u:p@h1:7000?addr=h2:7001&addr=h3:7002", "rediss://h1:7000/0", "redis://h1:7000/?dial_timeout=1s"},
		RedisSentinel: {"redis://s1:26379?master_name=m", "redis://u:p@s1:26379/3?addr=s2:26379&master_name=m&password=mp", "rediss://s1:26379?master_name=m"},
	}
	bad := map[RedisMode][]string{
		RedisSingle:   {"http://s3cr3t@h:1", "redis://u:s3cr3t@[::1", "redis://h:1/notanumber", "redis://h:1/0?read_only=true"},
		RedisCluster:  {"unix:///run/redis.sock", "redis://u:s3cr3t@h1:7000/3", "redis://h1:7000?route_randomly=true", "redis://h1:7000?addr=nonsense", "redis://h1:7000?password=s3cr3t"},
		RedisSentinel: {"redis://u:s3cr3t@s1:26379", "redis://s1:26379?master_name=m&replica_only=true", "unix:///s?master_name=m", "redis://s1:26379?master_name=m&route_by_latency=1"},
	}
	for mode, urls := range good {
		for _, u := range urls {
			if err := CheckRedisURL(mode, u); err != nil {
				t.Errorf("CheckRedisURL(%s, %q) = %v, want nil", mode, u, err)
			}
		}
	}
	for mode, urls := range bad {
		for _, u := range urls {
			err := CheckRedisURL(mode, u)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("CheckRedisURL(%s, %q) = %v, want ErrInvalidConfig", mode, u, err)
				continue
			}
			if msg := err.Error(); strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, mode.URLForm()) {
				t.Errorf("CheckRedisURL(%s, %q) = %q: want the form wanted and no password", mode, u, msg)
			}
		}
	}
}

// The clients fail fast, let the context bound every call and read from
// masters only; what the URL sets wins.
func TestRedisClientDefaults(t *testing.T) {
	c, err := parseRedisURL(RedisCluster, "redis://h1:7000?addr=h2:7001&read_only=false")
	if err != nil {
		t.Fatal(err)
	}
	o := c.cluster
	if !o.ContextTimeoutEnabled || o.DialTimeout != 2*time.Second || o.MaxRetryBackoff != 50*time.Millisecond ||
		o.ReadOnly || o.RouteByLatency || o.RouteRandomly || o.PoolSize != 10*runtime.GOMAXPROCS(0) || len(o.Addrs) != 2 {
		t.Errorf("cluster options: %+v", o)
	}
	if c.readTimeout != 5*time.Second || c.where != "cluster h1:7000,h2:7001" {
		t.Errorf("cluster: read timeout %v, where %q", c.readTimeout, c.where)
	}
	c, err = parseRedisURL(RedisSentinel, "redis://s1:26379?addr=s2:26379&master_name=m&dial_timeout=5s&max_retries=4&read_timeout=-1")
	if err != nil {
		t.Fatal(err)
	}
	f := c.failover
	if !f.ContextTimeoutEnabled || f.DialTimeout != 5*time.Second || f.MaxRetries != 4 || f.ReplicaOnly || f.MasterName != "m" || c.readTimeout != 0 {
		t.Errorf("sentinel options: %+v, read timeout %v", f, c.readTimeout)
	}
	c, err = parseRedisURL("", "redis://h:1/0")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.single; !s.ContextTimeoutEnabled || s.DialTimeout != 2*time.Second || s.MaxRetries != 1 || c.mode != RedisSingle {
		t.Errorf("single options: %+v", s)
	}
}

func TestRedisWaitOptions(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	for _, ro := range []*RedisOptions{{WaitReplicas: 1}, {WaitReplicas: -1}, {WaitTimeout: -time.Second}, {Mode: "nonsense"}} {
		if _, err := NewRedis(client, ro); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewRedis(%+v) error = %v, want ErrInvalidConfig", ro, err)
		}
	}
	for _, tt := range []struct {
		url string
		ro  *RedisOptions
	}{
		{"redis://127.0.0.1:1/0", &RedisOptions{WaitReplicas: 1, WaitTimeout: 5 * time.Second}},
		{"redis://127.0.0.1:1/0?read_timeout=500ms", &RedisOptions{WaitReplicas: 1}},
		{"redis://127.0.0.1:1/3", &RedisOptions{Mode: RedisCluster}}, // a database
		{"redis://127.0.0.1:1/0", &RedisOptions{Mode: RedisSentinel}},
	} {
		if r, err := OpenRedis(t.Context(), tt.url, tt.ro); !errors.Is(err, ErrInvalidConfig) {
			if r != nil {
				_ = r.Close(t.Context())
			}
			t.Errorf("OpenRedis(%q, %+v) error = %v, want ErrInvalidConfig", tt.url, tt.ro, err)
		}
	}
}
