package testutil

import (
	"net/url"
	"strings"
	"testing"
)

func TestStartRedis(t *testing.T) {
	t.Setenv(RedisURLEnv, "") // test the private server even on CI with a shared one

	var addr string
	t.Run("server", func(t *testing.T) {
		raw := StartRedis(t)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("StartRedis() = %q: %v", raw, err)
		}
		if u.Scheme != "redis" || u.Hostname() != "127.0.0.1" || u.Path != "/0" {
			t.Errorf("StartRedis() = %q, want redis://127.0.0.1:PORT/0", raw)
		}
		addr = u.Host
		if err := ping(addr); err != nil {
			t.Fatalf("PING %s: %v", addr, err)
		}
		if other := StartRedis(t); other == raw {
			t.Errorf("two calls returned the same server %q", raw)
		}
	})
	if err := ping(addr); err == nil {
		t.Errorf("server %s still answers after its test's cleanup", addr)
	}
}

func TestStartRedisFromEnv(t *testing.T) {
	const want = "redis://example.invalid:6379/3"
	t.Setenv(RedisURLEnv, want)
	if got := StartRedis(t); got != want {
		t.Errorf("StartRedis() = %q, want $%s = %q", got, RedisURLEnv, want)
	}
}

func TestUniquePrefix(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p := UniquePrefix(t)
		if seen[p] {
			t.Fatalf("UniquePrefix repeated %q", p)
		}
		seen[p] = true
		if strings.ContainsAny(p, "{} \n") {
			t.Errorf("UniquePrefix = %q contains a brace or space", p)
		}
	}
	t.Run("odd {name} with spaces/ü", func(t *testing.T) {
		if p := UniquePrefix(t); strings.ContainsAny(p, "{} ü") {
			t.Errorf("UniquePrefix = %q", p)
		}
	})
}
