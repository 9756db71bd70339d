package sessionstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// openRedisForTest opens a store on url under a prefix of its own and
// closes it in t.Cleanup.
func openRedisForTest(t testing.TB, url string, opts Options) *Redis {
	t.Helper()
	r, err := OpenRedis(t.Context(), url, &RedisOptions{Options: opts, KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatalf("OpenRedis: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// rawClient returns a client of its own on url, for looking at keys.
func rawClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedis(t *testing.T) {
	url := testutil.StartRedis(t)
	runStoreSuite(t, func(t *testing.T, opts Options) Store {
		return openRedisForTest(t, url, opts)
	}, realClock)
}

func TestRedisKeyLayout(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{TTL: time.Hour})
	c := rawClient(t, url)
	ctx := t.Context()

	s := fullSession()
	mustCreate(t, r, s)
	if err := r.Subscribe(ctx, s.ID, "file:///a"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r, s.ID, "a", "{}")
	mustAppend(t, r, s.ID, "b:with:colons", "{}")
	onceKey := "a}b{c: ☃" // a dedupe key that would break the hash tag as it is
	checkOnce(t, r, "AppendOnce", []OnceAppend{oa(s.ID, "a", onceKey, "{}")}, res(Appended, 2))
	// Request ids that would break the hash tag or spell other keys if
	// they were used as they are.
	rids := []string{`"a}b{c: ☃"`, `42`, `}:rec`}
	for _, rid := range rids {
		mustBegin(t, r, s.ID, rid, "token "+rid, 10*time.Minute)
	}
	mustBegin(t, r, s.ID, "ended", "e", 10*time.Minute)
	if err := r.End(ctx, s.ID, "ended", "e"); err != nil {
		t.Fatal(err)
	}

	base := r.prefix + ":{" + s.ID + "}:"
	wantTypes := map[string]string{
		base + "rec":              "hash",
		base + "subs":             "set",
		base + "streams":          "hash",
		base + "ev:a":             "list",
		base + "ev:b:with:colons": "list",
		base + "once:a":           "zset",
	}
	// The subscribers index of the URI: not a session key.
	uriSum := sha256.Sum256([]byte("file:///a"))
	uriTag := base64.RawURLEncoding.EncodeToString(uriSum[:])
	subKey := r.prefix + ":sub:{" + uriTag + "}"
	gen := c.HGet(ctx, base+"rec", "gen").Val()
	if gen == "" || strings.Contains(gen, "#") {
		t.Errorf("record generation %q, want one without '#'", gen)
	}
	var claims []string
	for _, rid := range rids {
		sum := sha256.Sum256([]byte(rid))
		k := base + "rq:" + base64.RawURLEncoding.EncodeToString(sum[:])
		wantTypes[k] = "string"
		claims = append(claims, k)
		if got, want := c.Get(ctx, k).Val(), "#"+gen+"#token "+rid; got != want {
			t.Errorf("claim of %q holds %q, want %q: the generation and the token", rid, got, want)
		}
	}
	keys, err := c.Keys(ctx, r.prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	wantKeys := []string{subKey}
	for k := range wantTypes {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("keys = %q, want %q", keys, wantKeys)
	}
	for k, typ := range wantTypes {
		if got := c.Type(ctx, k).Val(); got != typ {
			t.Errorf("TYPE %s = %s, want %s", k, got, typ)
		}
		// A read slides the expiry up to the slack beyond the TTL.
		if ttl, most := c.PTTL(ctx, k).Val(), time.Hour+slideSlack(time.Hour); ttl <= 0 || ttl > most {
			t.Errorf("PTTL %s = %v, want in (0, %v]", k, ttl, most)
		}
		// Every key is in the session's slot: its hash tag is the id.
		if tag := hashTag(k); tag != s.ID {
			t.Errorf("key %q has hash tag %q, want the session id", k, tag)
		}
	}
	if got := c.Type(ctx, subKey).Val(); got != "set" {
		t.Errorf("TYPE %s = %s, want set", subKey, got)
	}
	if ttl := c.PTTL(ctx, subKey).Val(); ttl != -1 {
		t.Errorf("PTTL %s = %v, want none (-1)", subKey, ttl)
	}
	if tag := hashTag(subKey); tag != uriTag {
		t.Errorf("key %q has hash tag %q, want the URI's digest", subKey, tag)
	}
	if got := c.SMembers(ctx, subKey).Val(); !slices.Equal(got, []string{s.ID}) {
		t.Errorf("%s members = %q, want the session", subKey, got)
	}
	keySum := sha256.Sum256([]byte(onceKey))
	if got := c.ZRangeWithScores(ctx, base+"once:a", 0, -1).Val(); len(got) != 1 ||
		got[0].Member != base64.RawURLEncoding.EncodeToString(keySum[:]) || got[0].Score != 2 {
		t.Errorf("once:a = %v, want the key's digest scored 2", got)
	}
	fields, err := c.HKeys(ctx, base+"rec").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(fields)
	wantFields := []string{"clientCapabilities", "clientInfo", "clientInitialized", "createdAt", "gen", "id",
		"initialized", "lastSeen", "logLevel", "principal", "protocolVersion", "ver"}
	if !slices.Equal(fields, wantFields) {
		t.Errorf("record fields = %q, want %q", fields, wantFields)
	}
	if got := c.HGetAll(ctx, base+"streams").Val(); got["a"] != "2" || got["b:with:colons"] != "1" {
		t.Errorf("streams hash = %v, want a at 2 and b:with:colons at 1", got)
	}

	if err := r.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	// Delete leaves the index entry (stale, for DropSubscriber) and the
	// claims, which expire on their own (or go with their End).
	want := append([]string{subKey}, claims...)
	slices.Sort(want)
	if keys := c.Keys(ctx, r.prefix+":*").Val(); !slices.Equal(slices.Sorted(slices.Values(keys)), want) {
		t.Errorf("keys left after Delete: %q, want only %q", keys, want)
	}
}

// hashTag returns the part of key that Redis Cluster hashes: what is
// between the first '{' and the next '}' if that is not empty, else key.
func hashTag(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key
	}
	tag, _, ok := strings.Cut(rest, "}")
	if !ok || tag == "" {
		return key
	}
	return tag
}

// TestRedisClaimsOneRoundTrip checks that Begin, which replaces Get on the
// hot path, is a single command like Get, whatever its outcome, and so is
// End.
func TestRedisClaimsOneRoundTrip(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	var calls atomic.Int64
	c.AddHook(countHook{&calls})
	r, err := NewRedis(c, &RedisOptions{KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	// Load the scripts.
	mustBegin(t, r, s.ID, "warm", "w", time.Minute)
	if err := r.End(t.Context(), s.ID, "warm", "w"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		call func() error
	}{
		{"Begin", func() error { _, err := r.Begin(t.Context(), s.ID, "1", "a", time.Minute); return err }},
		{"Begin in flight", func() error { _, err := r.Begin(t.Context(), s.ID, "1", "b", time.Minute); return err }},
		{"Begin unknown session", func() error { _, err := r.Begin(t.Context(), NewID(), "1", "a", time.Minute); return err }},
		{"End other token", func() error { return r.End(t.Context(), s.ID, "1", "b") }},
		{"End", func() error { return r.End(t.Context(), s.ID, "1", "a") }},
	}
	for _, step := range steps {
		calls.Store(0)
		_ = step.call()
		if n := calls.Load(); n != 1 {
			t.Errorf("%s made %d round trips, want 1", step.name, n)
		}
	}
}

// TestRedisGetOneRoundTrip checks that Get, the hot path of every legacy
// request, is a single command (EVALSHA) once the script is cached.
func TestRedisGetOneRoundTrip(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	var calls atomic.Int64
	c.AddHook(countHook{&calls})
	r, err := NewRedis(c, &RedisOptions{KeyPrefix: testutil.UniquePrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	if _, err := r.Get(t.Context(), s.ID); err != nil { // loads the script
		t.Fatal(err)
	}
	for _, id := range []string{s.ID, NewID()} {
		calls.Store(0)
		_, _ = r.Get(t.Context(), id)
		if n := calls.Load(); n != 1 {
			t.Errorf("Get made %d round trips, want 1", n)
		}
	}
}

// countHook counts the commands and pipelines a client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestRedisLogOutlivedBySession checks the documented case of a log that
// expires while other calls keep its session alive: the index counter
// survives, so indices never restart and the lost events are reported as
// purged, never silently skipped.
func TestRedisLogOutlivedBySession(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	// The session is kept alive by a Get every 10ms; a long TTL keeps a
	// loaded machine from letting it expire.
	r := openRedisForTest(t, url, Options{TTL: time.Second})
	c := rawClient(t, url)
	s := &Session{ID: NewID()}
	mustCreate(t, r, s)
	appendN(t, r, s.ID, "s", 1, 2)

	logKey := r.prefix + ":{" + s.ID + "}:ev:s"
	eventually(t, "log expires", func() error {
		if _, err := r.Get(t.Context(), s.ID); err != nil {
			return err
		}
		if c.Exists(t.Context(), logKey).Val() != 0 {
			return errors.New("log still there")
		}
		return nil
	})
	checkEventsAfter(t, r, s.ID, []eventsCase{
		{stream: "s", after: 0, wantPurged: true},
		{stream: "s", after: 1, wantPurged: true},
		{stream: "s", after: 2, want: []Event{}},
	})
	appendN(t, r, s.ID, "s", 3, 1)
	checkEventsAfter(t, r, s.ID, []eventsCase{
		{stream: "s", after: 1, wantPurged: true},
		{stream: "s", after: 2, want: events(3, 3)},
	})
}

// TestRedisCreateWipesLeftovers checks that keys left by an earlier
// session with the same id (say, after an eviction of the record alone)
// are not inherited.
func TestRedisCreateWipesLeftovers(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	r := openRedisForTest(t, url, Options{})
	c := rawClient(t, url)
	ctx := t.Context()
	id := NewID()
	base := r.prefix + ":{" + id + "}:"
	c.SAdd(ctx, base+"subs", "file:///stale")
	c.HSet(ctx, base+"streams", "s", 7)
	c.RPush(ctx, base+"ev:s", "stale")
	// A claim as older versions made them: the token alone, listed in rq.
	claim := r.claimKey(id, freshRequestID)
	c.Set(ctx, claim, "stale", 0)
	c.ZAdd(ctx, r.claimsKey(id), redis.Z{Score: 1, Member: digest(freshRequestID)})
	checkFreshSession(t, r, id)
	if n := c.Exists(ctx, base+"ev:s").Val(); n != 1 || c.LLen(ctx, base+"ev:s").Val() != 1 {
		t.Errorf("stale log not replaced")
	}
	if v := c.Get(ctx, claim).Val(); v == "stale" {
		t.Errorf("stale claim not replaced")
	}
}

func TestRedisBorrowedClientStaysOpen(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	c := rawClient(t, url)
	r, err := NewRedis(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.prefix != DefaultKeyPrefix {
		t.Errorf("prefix = %q, want %q", r.prefix, DefaultKeyPrefix)
	}
	for range 2 {
		if err := r.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Errorf("client closed by a store that does not own it: %v", err)
	}
}

func TestRedisOwnedClientClosed(t *testing.T) {
	t.Parallel()
	url := testutil.StartRedis(t)
	r, err := OpenRedis(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := r.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded: the owned client is still open")
	}
}

func TestNewRedisOptions(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   *RedisOptions
	}{
		{"nil client", nil, nil},
		{"negative TTL", client, &RedisOptions{Options: Options{TTL: -time.Second}}},
		{"negative MaxEvents", client, &RedisOptions{Options: Options{MaxEvents: -5}}},
		{"brace in prefix", client, &RedisOptions{KeyPrefix: "a{b"}},
		{"closing brace in prefix", client, &RedisOptions{KeyPrefix: "a}b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewRedis(tt.client, tt.opts); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewRedis error = %v, want ErrInvalidConfig", err)
			}
		})
	}
	r, err := NewRedis(client, &RedisOptions{Options: Options{TTL: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ttlMS != 1 {
		t.Errorf("sub-millisecond TTL gives %dms, want 1ms (0 would delete keys)", r.ttlMS)
	}
}

func TestOpenRedisInvalid(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts *RedisOptions
	}{
		{"wrong scheme", "http://127.0.0.1:6379", nil},
		{"malformed with password", "redis://user:s3cr3t@[::1", nil},
		{"bad database", "redis://127.0.0.1:6379/notanumber", nil},
		{"negative TTL", "redis://127.0.0.1:1/0", &RedisOptions{Options: Options{TTL: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenRedis(t.Context(), tt.url, tt.opts)
			if !errors.Is(err, ErrInvalidConfig) {
				if r != nil {
					_ = r.Close(context.Background())
				}
				t.Fatalf("OpenRedis error = %v, want ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q reveals the password", err)
			}
		})
	}
}

// TestOpenRedisUnreachable checks that a dead or silent server gives a
// clear error within the context's deadline rather than a hang.
func TestOpenRedisUnreachable(t *testing.T) {
	t.Parallel()
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	_ = l.Close()

	// A server that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()

	for _, addr := range []string{closedAddr, silent.Addr().String()} {
		t.Run(addr, func(t *testing.T) {
			const bound = 500 * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), bound)
			defer cancel()
			start := time.Now()
			r, err := OpenRedis(ctx, "redis://:s3cr3t@"+addr+"/0", nil)
			elapsed := time.Since(start)
			if err == nil {
				_ = r.Close(context.Background())
				t.Fatal("OpenRedis succeeded on a dead server")
			}
			if elapsed > bound+2*time.Second {
				t.Errorf("OpenRedis took %v with a %v context", elapsed, bound)
			}
			msg := err.Error()
			if !strings.Contains(msg, "unreachable") || !strings.Contains(msg, addr) {
				t.Errorf("error %q does not say which server is unreachable", msg)
			}
			if strings.Contains(msg, "s3cr3t") {
				t.Errorf("error %q reveals the password", msg)
			}
		})
	}
}

// TestRedisRejectsBraces checks that ids with braces, which NewID never
// makes, cannot name a session: they would displace the hash tag.
func TestRedisRejectsBraces(t *testing.T) {
	t.Parallel()
	r := openRedisForTest(t, testutil.StartRedis(t), Options{})
	for _, id := range []string{"a{b}c", "x}:ev:y", "{"} {
		if err := r.Create(t.Context(), &Session{ID: id}); err == nil || errors.Is(err, ErrExists) {
			t.Errorf("Create(%q) error = %v, want a validation error", id, err)
		}
		checkAllNotFound(t, r, id)
	}
}
