package sessionstore

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// The rule of redis_scripts.go, checked on the sources: every key
// argument of every redis.call and redis.pcall in lua/*.lua is KEYS[i]
// (or unpack(KEYS, ...) where all the arguments are keys), the command
// is a literal whose key positions are known, and KEYS itself is only
// read. Redis does not check this (outside a cluster it lets a script
// touch any key; in one, any key of the slot), hence this test.

// luaKeySpec is where a command's keys are among its arguments, as the
// server's COMMAND INFO says (first key, last key; -1: the last
// argument; 0, 0: no key), for the commands the scripts use. A script
// that uses another command fails TestLuaKeysDeclared until it is added
// here; TestLuaKeySpecsMatchRedis checks the table against the server.
var luaKeySpec = map[string][2]int{
	"TIME":   {0, 0},
	"DEL":    {1, -1},
	"EXISTS": {1, -1},
	// One key, the first argument.
	"GET": {1, 1}, "SET": {1, 1}, "PTTL": {1, 1}, "PEXPIRE": {1, 1},
	"HGET": {1, 1}, "HSET": {1, 1}, "HDEL": {1, 1}, "HINCRBY": {1, 1},
	"HGETALL": {1, 1}, "HKEYS": {1, 1}, "HMGET": {1, 1},
	"RPUSH": {1, 1}, "LTRIM": {1, 1}, "LLEN": {1, 1}, "LRANGE": {1, 1},
	"SADD": {1, 1}, "SREM": {1, 1}, "SISMEMBER": {1, 1}, "SMEMBERS": {1, 1},
	"ZADD": {1, 1}, "ZREM": {1, 1}, "ZSCORE": {1, 1}, "ZRANGE": {1, 1},
	"ZREMRANGEBYRANK": {1, 1}, "ZREMRANGEBYSCORE": {1, 1},
}

func TestLuaKeysDeclared(t *testing.T) {
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	calls := 0
	for _, f := range files {
		src, err := luaFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n, errs := checkLuaKeys(string(src))
		for _, e := range errs {
			t.Errorf("%s:%v", f, e)
		}
		calls += n
	}
	if calls < 50 { // the parser lost track of the calls
		t.Errorf("only %d redis.call found in %d files", calls, len(files))
	}
}

// TestLuaKeysDeclaredCatches checks that the check refuses what it must.
func TestLuaKeysDeclaredCatches(t *testing.T) {
	bad := []string{
		`redis.call('DEL', ARGV[1] .. 'x')`,
		`redis.call('HGET', 'P:{S}:rec', 'ver')`,
		`local k = KEYS[1]; redis.call('GET', k)`,
		`redis.call('DEL', KEYS[1], ARGV[2])`,
		`redis.pcall('PTTL', KEYS[1] .. ':x')`,
		`redis.call(ARGV[1], KEYS[1])`,
		`redis.call('RENAME', KEYS[1], KEYS[2])`,
		`local c = redis.call; c('DEL', 'x')`,
		`KEYS[1] = ARGV[1]; redis.call('DEL', KEYS[1])`,
		`table.insert(KEYS, 'x')`,
		`local r = redis; r.call('DEL', 'x')`,
		`redis['call']('DEL', 'x')`,
		`redis.call('GET', unpack(KEYS))`,
		`redis.call('DEL', unpack(KEYS), 'x')`,
		`redis.call('DEL', unpack(ARGV))`,
		`redis.call('GET', KEYS[1]) .. [[x]]`,
		`redis.call('GET', KEYS[1]`,
		"redis.call('GET', 'a\\'b')",
	}
	for _, src := range bad {
		if _, errs := checkLuaKeys(src); len(errs) == 0 {
			t.Errorf("accepted %s", src)
		}
	}
	good := "-- redis.call('DEL', 'x') in a comment\n" +
		`local s = 'redis.call("DEL", "x")' .. "KEYS"` + "\n" +
		`redis.call('DEL', KEYS[2], KEYS[#KEYS], unpack(KEYS, 3, math.min(4, #KEYS)))` + "\n" +
		`if redis.call('GET', KEYS[ARGV[1] + 1]) == false then return redis.call('TIME') end`
	if n, errs := checkLuaKeys(good); len(errs) != 0 || n != 3 {
		t.Errorf("refused good source (%d calls): %v", n, errs)
	}
}

// TestLuaKeySpecsMatchRedis checks luaKeySpec against the key positions
// the server reports.
func TestLuaKeySpecsMatchRedis(t *testing.T) {
	t.Parallel()
	c := rawClient(t, testutil.StartRedis(t))
	infos, err := c.Command(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range luaKeySpec {
		info := infos[strings.ToLower(name)]
		if info == nil {
			t.Errorf("%s: unknown to the server", name)
			continue
		}
		if int(info.FirstKeyPos) != spec[0] || int(info.LastKeyPos) != spec[1] || info.StepCount > 1 {
			t.Errorf("%s: keys from %d to %d step %d, the table says %v",
				name, info.FirstKeyPos, info.LastKeyPos, info.StepCount, spec)
		}
	}
}

// luaToken is a token of Lua source: a name, a string literal (text
// quoted as written), a number or an operator.
type luaToken struct {
	text string
	str  bool // a string literal
	line int
}

// lexLua splits src into tokens, dropping comments. It refuses long
// brackets ([[ ]], --[[ ]]), which the scripts do not use.
func lexLua(src string) ([]luaToken, error) {
	var toks []luaToken
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if strings.HasPrefix(src[i:], "--[") {
				return nil, fmt.Errorf("%d: long comment", line)
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return nil, fmt.Errorf("%d: newline in a string", line)
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("%d: unterminated string", line)
			}
			toks = append(toks, luaToken{src[i : j+1], true, line})
			i = j + 1
		case c == '_' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '_' || src[j]|0x20 >= 'a' && src[j]|0x20 <= 'z' ||
				src[j] >= '0' && src[j] <= '9' || c >= '0' && c <= '9' && src[j] == '.' && !strings.HasPrefix(src[j:], "..")) {
				j++
			}
			toks = append(toks, luaToken{src[i:j], false, line})
			i = j
		case strings.HasPrefix(src[i:], "[[") || strings.HasPrefix(src[i:], "[="):
			return nil, fmt.Errorf("%d: long string", line)
		default:
			n := 1
			for _, op := range []string{"...", "==", "~=", "<=", ">=", ".."} {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			toks = append(toks, luaToken{src[i : i+n], false, line})
			i += n
		}
	}
	return toks, nil
}

// closing returns the index of the token that closes the bracket at
// toks[open], or -1.
func closing(toks []luaToken, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		if toks[i].str {
			continue
		}
		switch toks[i].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// checkLuaKeys checks src against the rule and returns how many
// redis.call and redis.pcall it has, and what breaks the rule, each
// error starting with its line.
func checkLuaKeys(src string) (calls int, errs []error) {
	toks, err := lexLua(src)
	if err != nil {
		return 0, []error{err}
	}
	is := func(i int, text string) bool { return i >= 0 && i < len(toks) && !toks[i].str && toks[i].text == text }
	for i, tk := range toks {
		if tk.str {
			continue
		}
		switch tk.text {
		case "KEYS":
			// Only read: KEYS[...] not followed by '=', #KEYS, or the
			// table of unpack(KEYS ...).
			if is(i+1, "[") {
				if end := closing(toks, i+1); end < 0 || is(end+1, "=") {
					errs = append(errs, fmt.Errorf("%d: KEYS written", tk.line))
				}
			} else if !is(i-1, "#") && !(is(i-1, "(") && is(i-2, "unpack")) {
				errs = append(errs, fmt.Errorf("%d: KEYS used other than as KEYS[i], #KEYS or unpack(KEYS, ...)", tk.line))
			}
		case "redis":
			if !is(i+1, ".") {
				errs = append(errs, fmt.Errorf("%d: redis used other than as redis.name", tk.line))
				continue
			}
			if !is(i+2, "call") && !is(i+2, "pcall") {
				continue
			}
			calls++
			if err := checkLuaCall(toks, i+3); err != nil {
				errs = append(errs, fmt.Errorf("%d: %w", tk.line, err))
			}
		}
	}
	return calls, errs
}

// checkLuaCall checks the call whose '(' is toks[open].
func checkLuaCall(toks []luaToken, open int) error {
	if open >= len(toks) || toks[open].text != "(" || toks[open].str {
		return fmt.Errorf("redis.call not called at once")
	}
	end := closing(toks, open)
	if end < 0 {
		return fmt.Errorf("unbalanced call")
	}
	// Split the arguments at the commas outside brackets.
	var args [][]luaToken
	depth, from := 0, open+1
	for i := open + 1; i < end; i++ {
		if toks[i].str {
			continue
		}
		switch toks[i].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",":
			if depth == 0 {
				args = append(args, toks[from:i])
				from = i + 1
			}
		}
	}
	args = append(args, toks[from:end])
	if len(args[0]) != 1 || !args[0][0].str {
		return fmt.Errorf("command name not a literal")
	}
	name := strings.ToUpper(strings.Trim(args[0][0].text, `'"`))
	if strings.ContainsAny(name, `\'"`) {
		return fmt.Errorf("command name %s with an escape", args[0][0].text)
	}
	spec, ok := luaKeySpec[name]
	if !ok {
		return fmt.Errorf("command %s not in luaKeySpec: add it with its key positions", name)
	}
	last := spec[1]
	if last < 0 {
		last = len(args) - 1
	}
	for k := spec[0]; k >= 1 && k <= last; k++ {
		if k >= len(args) {
			return fmt.Errorf("%s without its key argument %d", name, k)
		}
		a := args[k]
		switch {
		case len(a) >= 3 && a[0].text == "KEYS" && a[1].text == "[" && closing(a, 1) == len(a)-1:
		case spec[1] < 0 && k == len(args)-1 && len(a) >= 4 && a[0].text == "unpack" && a[1].text == "(" &&
			a[2].text == "KEYS" && (a[3].text == ")" || a[3].text == ",") && closing(a, 1) == len(a)-1:
		default:
			return fmt.Errorf("%s: key argument %d is not KEYS[i]", name, k)
		}
	}
	return nil
}
