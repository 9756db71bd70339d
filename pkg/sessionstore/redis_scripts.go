package sessionstore

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaFiles holds the Redis store's Lua scripts, one file per script, and
// the lib_*.lua helpers some of them share. Each script states its KEYS,
// ARGV and reply at its top.
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
	scriptCreate        = loadScript("create", "oncekey", "droplogs", "dropclaims")
	scriptGet           = loadScript("get", "touch", "record")
	scriptBegin         = loadScript("begin", "touch", "record")
	scriptEnd           = loadScript("end")
	scriptUpdate        = loadScript("update", "touch")
	scriptDelete        = loadScript("delete", "oncekey", "droplogs", "dropclaims")
	scriptSubscribe     = loadScript("subscribe", "touch")
	scriptSubscriptions = loadScript("subscriptions")
	scriptAppend        = loadScript("append", "touch", "oncekey")
	scriptEventsAfter   = loadScript("events_after")
	scriptEndStream     = loadScript("end_stream")
	scriptRecordCreate  = loadScript("record_create")
	scriptRecordSet     = loadScript("record_set")
)

// claimSlack is how long, in milliseconds, a member of the rq set is kept
// after its claim's deadline, and the rq set after the claim's expiry: a
// margin for the gap between the TIME that scores a claim and the expiry
// that Redis gives its key. begin.lua receives it as ARGV[7].
const claimSlack = 1000
