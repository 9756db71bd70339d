package taskhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/mcpfleet/mcpfleet/pkg/tasks"
	"github.com/nats-io/nats.go"
)

// env is a Handler on an embedded NATS server and a memory store.
type env struct {
	h       *Handler
	nc      *nats.Conn
	st      *sessionstore.Memory
	subj    bus.Subjects
	closing chan struct{}
	events  *events

	mu    sync.Mutex
	alive map[string]bool
}

func newEnv(t *testing.T, change func(*Options)) *env {
	t.Helper()
	e, err := bus.StartEmbedded(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := sessionstore.NewMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	v := &env{nc: nc, st: st, closing: make(chan struct{}), alive: map[string]bool{}, events: &events{ch: make(chan []byte, 16)}}
	opts := Options{
		Conn: bus.NATS(nc), Store: st,
		Alive:     func(w string) bool { v.mu.Lock(); defer v.mu.Unlock(); return v.alive[w] },
		Principal: func(r *http.Request) string { return r.Header.Get("X-Principal") },
		StartSSE: func(w http.ResponseWriter) EventWriter {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			return v.events
		},
		Closing: v.closing,
	}
	if change != nil {
		change(&opts)
	}
	if v.h, err = New(opts); err != nil {
		t.Fatal(err)
	}
	return v
}

// events is an EventWriter that hands each event to the test.
type events struct{ ch chan []byte }

func (e *events) Event(data []byte) error {
	e.ch <- append([]byte(nil), data...)
	return nil
}

func (v *env) setAlive(worker string, alive bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.alive[worker] = alive
}

// task stores a new working task of principal run by worker.
func (v *env) task(t *testing.T, principal, worker string, legacy bool) *tasks.Record {
	t.Helper()
	rec := tasks.New(tasks.NewID(), principal, worker, time.Now(), time.Hour)
	rec.Legacy = legacy
	reply, _ := tasks.Apply(context.Background(), v.st, &tasks.WriteOp{Op: "create", Record: rec}, time.Now())
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	return rec
}

func (v *env) update(t *testing.T, rec *tasks.Record, change func(*tasks.Record) bool) {
	t.Helper()
	if _, err := tasks.Update(context.Background(), v.st, rec.TaskID, rec.Principal, change); err != nil {
		t.Fatal(err)
	}
}

func (v *env) get(t *testing.T, rec *tasks.Record) *tasks.Record {
	t.Helper()
	r, _, err := tasks.Get(context.Background(), v.st, rec.TaskID, rec.Principal)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// worker answers the controls of task id, handing them to the test.
func (v *env) worker(t *testing.T, id string) <-chan tasks.Control {
	t.Helper()
	ch := make(chan tasks.Control, 8)
	sub, err := v.nc.Subscribe(v.subj.TaskControl(id), func(m *nats.Msg) {
		var c tasks.Control
		_ = json.Unmarshal(m.Data, &c)
		ch <- c
		_ = m.Respond([]byte("ok"))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := v.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// watch subscribes to subject, handing its messages to the test.
func (v *env) watch(t *testing.T, subject string) <-chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 16)
	sub, err := v.nc.ChanSubscribe(subject, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := v.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// request decodes body as the frontend does: the message and its params
// head.
func request(t *testing.T, body string) (*protocol.Message, *protocol.ParamsHead) {
	t.Helper()
	msg, err := protocol.Decode([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	var head protocol.ParamsHead
	if msg.Params != nil {
		if err := json.Unmarshal(msg.Params, &head); err != nil {
			t.Fatal(err)
		}
	}
	return msg, &head
}

// reply is a decoded JSON-RPC response.
type reply struct {
	Result map[string]json.RawMessage `json:"result"`
	Error  *protocol.Error            `json:"error"`
}

func decode(t *testing.T, b []byte) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return r
}

func field(t *testing.T, r reply, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(r.Result[name], &s); err != nil {
		t.Fatalf("result %v: %s: %v", r.Result, name, err)
	}
	return s
}

// recv waits for a value of ch (the hang guard is generous).
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func TestNewValidates(t *testing.T) {
	v := newEnv(t, nil)
	sse := func(http.ResponseWriter) EventWriter { return nil }
	alive := func(string) bool { return true }
	for name, o := range map[string]Options{
		"no conn":          {Store: v.st, Alive: alive, StartSSE: sse},
		"no store":         {Conn: bus.NATS(v.nc), Alive: alive, StartSSE: sse},
		"no alive":         {Conn: bus.NATS(v.nc), Store: v.st, StartSSE: sse},
		"no sse":           {Conn: bus.NATS(v.nc), Store: v.st, Alive: alive},
		"negative timeout": {Conn: bus.NATS(v.nc), Store: v.st, Alive: alive, StartSSE: sse, RequestTimeout: -1},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v, want ErrInvalidOptions", name, err)
		}
	}
	h, err := New(Options{Conn: bus.NATS(v.nc), Store: v.st, Alive: alive, StartSSE: sse})
	if err != nil {
		t.Fatal(err)
	}
	if h.requestTimeout != 10*time.Minute || h.log == nil || h.principal(httptest.NewRequest("GET", "/", nil)) != "" {
		t.Fatalf("defaults: %+v", h)
	}
	release, ok := h.admit(nil, nil, protocol.ID{}, "s")
	if !ok {
		t.Fatal("the default Admit refused")
	}
	release()
}

func TestStart(t *testing.T) {
	v := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := v.h.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v", err)
	}
	if _, err := v.nc.Request(v.subj.TaskWrite(), []byte("{}"), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a failed Start left a subscription: %v", err)
	}
	v.h.Stop(context.Background()) // before Start: a no-op
	if err := v.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := v.h.Start(context.Background()); err == nil {
		t.Fatal("a second Start succeeded")
	}
	v.h.Close()
	v.h.Close()
	if _, err := v.nc.Request(v.subj.TaskWrite(), []byte("{}"), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("Close left the subscription: %v", err)
	}
}

func TestTaskWriter(t *testing.T) {
	v := newEnv(t, nil)
	if err := v.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := tasks.New(tasks.NewID(), "p", "w1", time.Now(), time.Hour)
	changes := v.watch(t, v.subj.TaskEvent(rec.TaskID))
	write := func(data []byte) tasks.WriteReply {
		t.Helper()
		m, err := v.nc.Request(v.subj.TaskWrite(), data, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r tasks.WriteReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	b, _ := json.Marshal(&tasks.WriteOp{Op: "create", Record: rec})
	if r := write(b); r.Error != "" {
		t.Fatal(r.Error)
	}
	if got := v.get(t, rec); got.Status != protocol.TaskWorking || got.Worker != "w1" {
		t.Fatalf("stored: %+v", got)
	}
	recv(t, changes, "task event for the create")
	if r := write([]byte("{")); r.Error != "malformed task write" {
		t.Fatalf("a malformed write: %+v", r)
	}
	v.h.Stop(context.Background())
	v.h.Stop(context.Background())
	if _, err := v.nc.Request(v.subj.TaskWrite(), b, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a stopped handler still takes writes: %v", err)
	}
}

// blockingStore blocks CreateRecord until released.
type blockingStore struct {
	sessionstore.Records
	entered, release chan struct{}
}

func (s *blockingStore) CreateRecord(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	s.entered <- struct{}{}
	<-s.release
	return s.Records.CreateRecord(ctx, key, data, ttl)
}

func TestStopWaitsForWrites(t *testing.T) {
	bs := &blockingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	v := newEnv(t, func(o *Options) {
		bs.Records = o.Store
		o.Store = bs
	})
	if err := v.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := tasks.New(tasks.NewID(), "p", "w1", time.Now(), time.Hour)
	b, _ := json.Marshal(&tasks.WriteOp{Op: "create", Record: rec})
	replied := make(chan error, 1)
	go func() { // ends with the request: answered, or timed out by its bound
		_, err := v.nc.Request(v.subj.TaskWrite(), b, 10*time.Second)
		replied <- err
	}()
	recv(t, bs.entered, "the write in the store")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	v.h.Stop(done) // bounded by its context while the write is held
	close(bs.release)
	v.h.Stop(context.Background())
	if err := recv(t, replied, "the write's reply"); err != nil {
		t.Fatal("the write in progress was not answered:", err)
	}
	v.get(t, rec)
}
