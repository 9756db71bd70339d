package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Note is one note.
type Note struct {
	ID      string    `json:"id" jsonschema:"the note's id"`
	Title   string    `json:"title"`
	Body    string    `json:"body"`
	Tags    []string  `json:"tags,omitempty"`
	Updated time.Time `json:"updated" jsonschema:"when the note last changed"`
}

// errNotFound is returned for a note that does not exist.
var errNotFound = errors.New("no such note")

// Store keeps the notes. Every worker of a cluster serves any request, so
// a cluster's workers must share one Store: RedisStore. MemoryStore is for
// one process (serve, stdio, tests).
type Store interface {
	Add(ctx context.Context, title, body string, tags []string) (*Note, error)
	Get(ctx context.Context, id string) (*Note, error)
	Append(ctx context.Context, id, text string) (*Note, error)
	Delete(ctx context.Context, id string) error
	// List returns every note, oldest first.
	List(ctx context.Context) ([]*Note, error)
}

// MemoryStore is a Store in this process's memory.
type MemoryStore struct {
	mu    sync.Mutex
	seq   int
	notes map[string]*Note
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{notes: map[string]*Note{}} }

func (m *MemoryStore) Add(_ context.Context, title, body string, tags []string) (*Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	n := &Note{ID: strconv.Itoa(m.seq), Title: title, Body: body, Tags: slices.Clone(tags), Updated: time.Now().UTC()}
	m.notes[n.ID] = n
	c := *n
	return &c, nil
}

func (m *MemoryStore) Get(_ context.Context, id string) (*Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.notes[id]
	if !ok {
		return nil, errNotFound
	}
	c := *n
	return &c, nil
}

func (m *MemoryStore) Append(_ context.Context, id, text string) (*Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.notes[id]
	if !ok {
		return nil, errNotFound
	}
	n.Body += text
	n.Updated = time.Now().UTC()
	c := *n
	return &c, nil
}

func (m *MemoryStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.notes[id]; !ok {
		return errNotFound
	}
	delete(m.notes, id)
	return nil
}

func (m *MemoryStore) List(_ context.Context) ([]*Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Note, 0, len(m.notes))
	for _, n := range m.notes {
		c := *n
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *Note) int { return compareIDs(a.ID, b.ID) })
	return out, nil
}

func compareIDs(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x - y
}

// RedisStore keeps the notes in Redis, where every worker sees the same
// notes: a hash per note (notes:note:<id>), a sorted set of ids
// (notes:ids) and a counter for new ids (notes:seq).
type RedisStore struct {
	rdb *redis.Client
}

// OpenRedisStore connects to the Redis at url (redis://host:port/db).
func OpenRedisStore(ctx context.Context, url string) (*RedisStore, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("--notes-redis-url: want redis://[user:password@]host:port/db")
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("notes: connecting to Redis: %w", err)
	}
	return &RedisStore{rdb: rdb}, nil
}

// Close closes the connection.
func (r *RedisStore) Close() error { return r.rdb.Close() }

func noteKey(id string) string { return "notes:note:" + id }

func (r *RedisStore) Add(ctx context.Context, title, body string, tags []string) (*Note, error) {
	seq, err := r.rdb.Incr(ctx, "notes:seq").Result()
	if err != nil {
		return nil, err
	}
	n := &Note{ID: strconv.FormatInt(seq, 10), Title: title, Body: body, Tags: tags, Updated: time.Now().UTC()}
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, noteKey(n.ID), "title", n.Title, "body", n.Body, "tags", strings.Join(n.Tags, ","), "updated", n.Updated.Format(time.RFC3339Nano))
		p.ZAdd(ctx, "notes:ids", redis.Z{Score: float64(seq), Member: n.ID})
		return nil
	})
	return n, err
}

func (r *RedisStore) Get(ctx context.Context, id string) (*Note, error) {
	m, err := r.rdb.HGetAll(ctx, noteKey(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, errNotFound
	}
	n := &Note{ID: id, Title: m["title"], Body: m["body"]}
	if m["tags"] != "" {
		n.Tags = strings.Split(m["tags"], ",")
	}
	n.Updated, _ = time.Parse(time.RFC3339Nano, m["updated"])
	return n, nil
}

// appendScript appends to an existing note's body only (atomic: two
// workers appending at once both land).
var appendScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'body', redis.call('HGET', KEYS[1], 'body') .. ARGV[1], 'updated', ARGV[2])
return 1`)

func (r *RedisStore) Append(ctx context.Context, id, text string) (*Note, error) {
	ok, err := appendScript.Run(ctx, r.rdb, []string{noteKey(id)}, text, time.Now().UTC().Format(time.RFC3339Nano)).Int()
	if err != nil {
		return nil, err
	}
	if ok == 0 {
		return nil, errNotFound
	}
	return r.Get(ctx, id)
}

func (r *RedisStore) Delete(ctx context.Context, id string) error {
	n, err := r.rdb.Del(ctx, noteKey(id)).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return errNotFound
	}
	return r.rdb.ZRem(ctx, "notes:ids", id).Err()
}

func (r *RedisStore) List(ctx context.Context) ([]*Note, error) {
	ids, err := r.rdb.ZRange(ctx, "notes:ids", 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]*Note, 0, len(ids))
	for _, id := range ids {
		n, err := r.Get(ctx, id)
		if errors.Is(err, errNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
