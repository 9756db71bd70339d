package mcpfleet

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// --redis-mode says how --redis-url reads; both reach the store's
// options, and a URL not of its mode's form is refused naming the flags
// and the form, never the password.
func TestParseRedisModes(t *testing.T) {
	t.Setenv("MCPFLEET_REDIS_MODE", "sentinel")
	c, err := parse(t, roleFrontend, []string{"--redis-url", "redis://s1:26379?addr=s2:26379&master_name=m", "--redis-wait-replicas", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := c.serveOptions(nil)
	if o.RedisMode != sessionstore.RedisSentinel || o.RedisWaitReplicas != 1 || o.RedisWaitTimeout != time.Second {
		t.Errorf("options: mode %q, wait %d replicas for %v", o.RedisMode, o.RedisWaitReplicas, o.RedisWaitTimeout)
	}
	t.Setenv("MCPFLEET_REDIS_MODE", "")
	for _, args := range [][]string{
		nil,
		{"--redis-mode", "cluster", "--redis-url", "redis://h1:7000?addr=h2:7001&addr=h3:7002"},
		{"--redis-mode", "single", "--redis-url", "unix:///run/redis.sock"},
	} {
		if _, err := parse(t, roleFrontend, args, nil); err != nil {
			t.Errorf("parse(%q): %v", args, err)
		}
	}
	const secret = "hunter2hunter2"
	tests := []struct {
		role role
		args []string
		want []string
	}{
		{roleFrontend, []string{"--redis-mode", "failover"}, []string{"--redis-mode", "single, cluster or sentinel"}},
		{roleFrontend, []string{"--redis-mode", "cluster", "--redis-url", "redis://:" + secret + "@h1:7000/2"}, []string{"--redis-url", "--redis-mode cluster", "addr=host2:port"}},
		{roleFrontend, []string{"--redis-mode", "sentinel", "--redis-url", "redis://:" + secret + "@s1:26379"}, []string{"--redis-url", "master_name"}},
		{roleFrontend, []string{"--redis-url", "redis://h:1/0?route_randomly=true"}, []string{"--redis-url", "masters only"}},
		{roleServe, []string{"--redis-mode", "cluster"}, []string{"--redis-mode cluster needs --redis-url"}},
		{roleServe, []string{"--redis-wait-replicas", "1"}, []string{"--redis-wait-replicas needs --redis-url"}},
		{roleFrontend, []string{"--redis-wait-replicas", "-1"}, []string{"--redis-wait-replicas must not be negative"}},
		{roleFrontend, []string{"--redis-wait-timeout", "0s"}, []string{"--redis-wait-timeout must be positive"}},
		{roleWorker, []string{"--redis-mode", "cluster"}, []string{"not defined"}},
	}
	for _, tc := range tests {
		_, err := parse(t, tc.role, tc.args, nil)
		if err == nil {
			t.Errorf("parse(%v, %q) succeeded, want an error mentioning %q", tc.role, tc.args, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parse(%v, %q) = %v, want an error mentioning %q", tc.role, tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("parse(%v, %q) = %v: the password is quoted", tc.role, tc.args, err)
		}
	}
}
