package sessionstore

import (
	"embed"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// luaFiles holds the Redis store's Lua scripts, one file per script, and
// the lib_*.lua helpers some of them share. Each script states its KEYS,
// ARGV and reply at its top.
//
// The rule: a script touches only the keys it is given in KEYS. Every
// key argument of a redis.call or redis.pcall is written KEYS[i] (or, for
// the commands whose arguments are all keys, such as DEL, a range
// unpack(KEYS, ...)); no script builds a key name, from ARGV, from
// another key's name or from what a key holds. Redis Cluster routes a
// script by its declared keys, and only those are guaranteed to be
// there (in the slot, not migrating): a key that the script derives is
// outside the contract even when it shares the session's hash tag. When
// a script needs keys that only the session's data names (the event logs
// listed in streams, the claims listed in rq), the Go side declares them
// from an earlier round trip's reading, and the script checks that none
// is missing and names those that are, for another run (see
// redis_declare.go). The command names are literals, so that the key
// positions are known. TestLuaKeysDeclared (lua_keys_test.go) checks all
// of this on the sources, for every redis.call of every file here, and
// TestLuaKeySpecsMatchRedis its table of key positions against what the
// Redis server reports (COMMAND INFO).
//
//go:embed lua/*.lua
var luaFiles embed.FS

// loadScript returns the script of lua/<name>.lua, preceded by the helpers
// lua/lib_<lib>.lua it calls. A missing file is a build mistake, caught by
// any test: it panics.
func loadScript(name string, libs ...string) *redis.Script {
	var src strings.Builder
	for _, f := range append(prefixed("lib_", libs), name) {
		b, err := luaFiles.ReadFile("lua/" + f + ".lua")
		if err != nil {
			panic("sessionstore: " + err.Error())
		}
		src.Write(b)
		src.WriteByte('\n')
	}
	return redis.NewScript(src.String())
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// The scripts. Those of a session share one convention: KEYS[1] rec,
// KEYS[2] subs, KEYS[3] streams, then what the script adds (the rq set,
// a claim, a stream's log and once set); see the key layout on [Redis].
var (
	scriptCreate        = loadScript("create", "dropsession")
	scriptGet           = loadScript("get", "touch", "record")
	scriptBegin         = loadScript("begin", "touch", "record")
	scriptEnd           = loadScript("end")
	scriptUpdate        = loadScript("update", "touch")
	scriptDelete        = loadScript("delete", "dropsession")
	scriptSubscribe     = loadScript("subscribe", "touch")
	scriptSubscriptions = loadScript("subscriptions")
	scriptAppend        = loadScript("append", "touch")
	scriptSweep         = loadScript("sweep")
	scriptEventsAfter   = loadScript("events_after")
	scriptEndStream     = loadScript("end_stream")
	scriptRecordCreate  = loadScript("record_create")
	scriptRecordSet     = loadScript("record_set")
)

// slideSlack is how much further than TTL the calls that slide a
// session's expiry push it: TTL/100, at most a second. A read (Get,
// Begin) finding the expiry still at least TTL away leaves it
// (lua/lib_touch.lua, slide), so a busy session's keys are slid about
// once per slack rather than on every read, and a session lives at least
// TTL after its last call, at most TTL plus the slack.
func slideSlack(ttl time.Duration) time.Duration {
	return min(ttl/100, time.Second)
}
