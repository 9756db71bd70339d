package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/fleet"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

var discard = slog.New(slog.DiscardHandler)

// startBus starts an embedded NATS server for the test, stopped at its
// end.
func startBus(tb testing.TB) *bus.Embedded {
	tb.Helper()
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: discard})
	if err != nil {
		tb.Fatalf("starting embedded NATS: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.DefaultHangGuard)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			tb.Errorf("stopping embedded NATS: %v", err)
		}
	})
	return e
}

func connect(tb testing.TB, e *bus.Embedded, name string) *nats.Conn {
	tb.Helper()
	nc, err := e.Connect(name)
	if err != nil {
		tb.Fatalf("connecting %s: %v", name, err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// kinds records the list kinds a view raised.
type kinds struct {
	mu  sync.Mutex
	got []string
}

func (k *kinds) add(kind string) { k.mu.Lock(); k.got = append(k.got, kind); k.mu.Unlock() }

func (k *kinds) has(kind string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Contains(k.got, kind)
}

func newView(tb testing.TB, nc *nats.Conn, opts fleet.ViewOptions) *fleet.View {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = discard
	}
	v, err := fleet.NewView(bus.NATS(nc), opts)
	if err != nil {
		tb.Fatalf("NewView: %v", err)
	}
	tb.Cleanup(v.Close)
	return v
}

// serve starts an announcer for worker id serving cat.
func serve(tb testing.TB, nc *nats.Conn, id string, cat *mcp.Catalog, interval time.Duration) *fleet.Announcer {
	tb.Helper()
	a, err := fleet.NewAnnouncer(bus.NATS(nc), fleet.AnnouncerOptions{ID: id, Logger: discard, Interval: interval})
	if err != nil {
		tb.Fatalf("NewAnnouncer: %v", err)
	}
	tb.Cleanup(a.Close)
	if err := a.Start(tb.Context()); err != nil {
		tb.Fatalf("Announcer.Start: %v", err)
	}
	raw, err := json.Marshal(cat)
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Serve(cat.Hash(), raw); err != nil {
		tb.Fatalf("Serve: %v", err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	a.Announce(nil)
	return a
}

func tools(names ...string) *mcp.Catalog {
	c := &mcp.Catalog{Info: protocol.Implementation{Name: "t", Version: "1"}}
	for _, n := range names {
		c.Tools = append(c.Tools, &protocol.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return c
}

func str(s string) *string { return &s }

func decode(tb testing.TB, s string) *protocol.Message {
	tb.Helper()
	m, err := protocol.Decode([]byte(s), 0)
	if err != nil {
		tb.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

// A view learns pools from announcements, routes by them, answers the
// lists from their union, raises list_changed when a pool joins or leaves
// and forgets a leaving worker at once.
func TestViewFollowsPools(t *testing.T) {
	e := startBus(t)
	var raised kinds
	v := newView(t, connect(t, e, "fe"), fleet.ViewOptions{ListChanged: raised.add, StartWait: -1})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	subj := bus.Subjects{}
	// Without any pool, everything goes to any worker, by name.
	if r := v.RouteFor(protocol.EraLegacy, protocol.MethodToolsCall, &protocol.ParamsHead{Name: str("nope")}, nil); r.Subject != subj.Request(protocol.MethodToolsCall, "nope") || r.Local != nil {
		t.Fatalf("route without pools: %+v", r)
	}
	if _, ok := v.AnswerFromCatalog(protocol.EraLegacy, decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), nil); ok {
		t.Fatal("answered from an empty catalog")
	}

	serve(t, connect(t, e, "w1"), "w1", tools("echo"), time.Second)
	testutil.Poll(t, "the first pool", func() bool { return v.Alive("w1") && v.ToolScopes("echo") == nil && routes(v, "echo") })
	if r := v.RouteFor(protocol.EraLegacy, protocol.MethodToolsCall, &protocol.ParamsHead{Name: str("nope")}, nil); r.Local == nil || r.Local.Code != protocol.CodeInvalidParams || !strings.Contains(r.Local.Message, `unknown tool "nope"`) {
		t.Fatalf("a tool no pool serves: %+v", r)
	}
	testutil.Poll(t, "tools/list from the union", func() bool {
		resp, ok := v.AnswerFromCatalog(protocol.EraLegacy, decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), nil)
		return ok && strings.Contains(string(resp), `"echo"`)
	})

	// A second pool joins: its tool is routed, and tools changed.
	b := serve(t, connect(t, e, "w2"), "w2", tools("sleep"), time.Second)
	testutil.Poll(t, "the second pool", func() bool { return routes(v, "sleep") && raised.has("tools") })

	// It leaves: forgotten at once (well before three intervals).
	b.Leave()
	testutil.Poll(t, "the second pool leaving", func() bool { return !v.Alive("w2") && !routes(v, "sleep") })
	if !routes(v, "echo") || !v.Alive("w1") {
		t.Fatal("the first pool went with the second")
	}
}

// routes reports whether a pool v knows serves tool name: v routes
// tools/call name to its tool subject, and it knows a pool.
func routes(v *fleet.View, name string) bool {
	if _, live := v.AnswerFromCatalog(protocol.EraLegacy, &protocol.Message{ID: protocol.Int64ID(1), Method: protocol.MethodToolsList}, nil); !live {
		return false
	}
	r := v.RouteFor(protocol.EraLegacy, protocol.MethodToolsCall, &protocol.ParamsHead{Name: &name}, nil)
	return r.Local == nil && r.Subject == bus.Subjects{}.Request(protocol.MethodToolsCall, name)
}

// A worker that stops announcing is forgotten after three intervals.
func TestViewForgetsSilentWorker(t *testing.T) {
	e := startBus(t)
	v := newView(t, connect(t, e, "fe"), fleet.ViewOptions{SweepInterval: 10 * time.Millisecond, StartWait: -1})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	a := serve(t, connect(t, e, "w1"), "w1", tools("echo"), 20*time.Millisecond)
	testutil.Poll(t, "the worker", func() bool { return v.Alive("w1") && routes(v, "echo") })
	a.Close() // silent from now on, without saying it leaves
	testutil.Poll(t, "the silent worker forgotten", func() bool { return !v.Alive("w1") && !routes(v, "echo") })
	// Without any pool, requests go to any worker again.
	if r := v.RouteFor(protocol.EraLegacy, protocol.MethodToolsCall, &protocol.ParamsHead{Name: str("echo")}, nil); r.Local != nil {
		t.Fatalf("route after the last pool went: %+v", r)
	}
}

// A view's request format is the newest every live worker reads: none
// known, the JSON header; a worker of an earlier version (its
// announcements have no format) holds it at 0 until it leaves.
func TestViewRequestFormat(t *testing.T) {
	e := startBus(t)
	fe := connect(t, e, "fe")
	v := newView(t, fe, fleet.ViewOptions{SweepInterval: 10 * time.Millisecond, StartWait: -1})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := v.RequestFormat(); got != 0 {
		t.Errorf("RequestFormat without workers = %d, want 0", got)
	}
	cat := tools("echo")
	serve(t, connect(t, e, "w1"), "w1", cat, time.Hour)
	testutil.Poll(t, "the new worker's format", func() bool { return v.Alive("w1") && v.RequestFormat() == bus.RequestFormat })
	old := connect(t, e, "old")
	announce := func(leaving bool) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"w": "old", "p": cat.Hash(), "i": time.Hour.Milliseconds(), "l": leaving})
		if err := old.Publish(bus.Subjects{}.Announce(), b); err != nil {
			t.Fatal(err)
		}
	}
	announce(false)
	testutil.Poll(t, "the old worker's format", func() bool { return v.Alive("old") && v.RequestFormat() == 0 })
	announce(true)
	testutil.Poll(t, "the format once the old worker left", func() bool { return !v.Alive("old") && v.RequestFormat() == bus.RequestFormat })
}

// Resources, templates and completion references go to the pool serving
// them; an unknown resource is answered locally with the era's code.
func TestViewRoutesByURI(t *testing.T) {
	e := startBus(t)
	v := newView(t, connect(t, e, "fe"), fleet.ViewOptions{StartWait: -1})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	cat := tools("echo")
	cat.Resources = []*protocol.Resource{{URI: "test://static", Name: "static"}}
	cat.Templates = []*protocol.ResourceTemplate{{URITemplate: "test://item/{id}", Name: "item"}}
	cat.Prompts = []*protocol.Prompt{{Name: "greet"}}
	pool := cat.Hash()
	serve(t, connect(t, e, "w1"), "w1", cat, time.Second)
	testutil.Poll(t, "the pool", func() bool { return routes(v, "echo") })

	subj := bus.Subjects{}
	for _, uri := range []string{"test://static", "test://item/7"} {
		if r := v.RouteFor(protocol.EraModern, protocol.MethodResourcesRead, &protocol.ParamsHead{URI: str(uri)}, nil); r.Subject != subj.PoolRequest(pool, protocol.MethodResourcesRead) {
			t.Errorf("resources/read %s: %+v", uri, r)
		}
	}
	for era, code := range map[protocol.Era]int64{protocol.EraLegacy: protocol.CodeResourceNotFound, protocol.EraModern: protocol.CodeInvalidParams} {
		r := v.RouteFor(era, protocol.MethodResourcesRead, &protocol.ParamsHead{URI: str("test://none")}, nil)
		if r.Local == nil || int64(r.Local.Code) != code || r.Local.Message != "resource not found: test://none" {
			t.Errorf("an unknown resource (era %v): %+v", era, r)
		}
	}
	params := json.RawMessage(`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"x","value":""}}`)
	if r := v.RouteFor(protocol.EraModern, protocol.MethodCompletionComplete, &protocol.ParamsHead{}, params); r.Subject != subj.PoolRequest(pool, protocol.MethodCompletionComplete) {
		t.Errorf("completion of a prompt: %+v", r)
	}
	if r := v.RouteFor(protocol.EraModern, protocol.MethodPromptsGet, &protocol.ParamsHead{Name: str("greet")}, nil); r.Subject != subj.Request(protocol.MethodPromptsGet, "greet") {
		t.Errorf("prompts/get: %+v", r)
	}
	if r := v.RouteFor(protocol.EraModern, protocol.MethodPing, &protocol.ParamsHead{}, nil); r.Subject != subj.Request(protocol.MethodPing, "") {
		t.Errorf("ping: %+v", r)
	}
}

// Start waits for the first pool's catalog when workers are there, so a
// request right after it is answered from the union.
func TestViewStartSeesTheCluster(t *testing.T) {
	e := startBus(t)
	serve(t, connect(t, e, "w1"), "w1", tools("echo"), time.Hour) // answers the query; no periodic beat
	v := newView(t, connect(t, e, "fe"), fleet.ViewOptions{StartWait: testutil.DefaultHangGuard})
	if err := v.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !routes(v, "echo") {
		t.Fatal("Start returned before the first catalog was in")
	}
}

// Start returns ctx.Err() when ctx ends first, and leaves nothing running.
func TestViewStartHonoursContext(t *testing.T) {
	e := startBus(t)
	nc := connect(t, e, "fe")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := newView(t, nc, fleet.ViewOptions{}).Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %v", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	v := newView(t, nc, fleet.ViewOptions{StartWait: time.Hour}) // no worker: it would wait an hour
	var subscribed atomic.Bool
	go func() {
		testutil.WaitFor(testutil.DefaultHangGuard, func() bool { return nc.NumSubscriptions() > 0 })
		subscribed.Store(true)
		cancel()
	}()
	if err := v.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start cancelled while waiting: %v", err)
	}
	if !subscribed.Load() {
		t.Fatal("Start returned before it subscribed")
	}
	testutil.Poll(t, "Start's subscription gone", func() bool { return nc.NumSubscriptions() == 0 })
}

func TestOptionsValidation(t *testing.T) {
	e := startBus(t)
	nc := connect(t, e, "x")
	for name, o := range map[string]fleet.ViewOptions{
		"negative SweepInterval":  {SweepInterval: -1},
		"negative CatalogTimeout": {CatalogTimeout: -1},
	} {
		if _, err := fleet.NewView(bus.NATS(nc), o); !errors.Is(err, fleet.ErrInvalidOptions) {
			t.Errorf("NewView with %s: %v", name, err)
		}
	}
	if _, err := fleet.NewView(nil, fleet.ViewOptions{}); !errors.Is(err, fleet.ErrInvalidOptions) {
		t.Errorf("NewView without a connection: %v", err)
	}
	for name, o := range map[string]fleet.AnnouncerOptions{
		"no ID":             {},
		"negative Interval": {ID: "w", Interval: -1},
	} {
		if _, err := fleet.NewAnnouncer(bus.NATS(nc), o); !errors.Is(err, fleet.ErrInvalidOptions) {
			t.Errorf("NewAnnouncer with %s: %v", name, err)
		}
	}
}

// The announcer's wire format: what it publishes on the announce subject,
// and its answer to a catalog request.
func TestAnnouncerWire(t *testing.T) {
	e := startBus(t)
	fe := connect(t, e, "fe")
	subj := bus.Subjects{Prefix: "wire"}
	anns := make(chan *nats.Msg, 16)
	sub, err := fe.ChanSubscribe(subj.Announce(), anns)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	wnc := connect(t, e, "w")
	a, err := fleet.NewAnnouncer(bus.NATS(wnc), fleet.AnnouncerOptions{ID: "w1", Subjects: subj, Logger: discard, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.Announce(nil) // before Serve: nothing to announce
	cat := tools("echo")
	raw, _ := json.Marshal(cat)
	if err := a.Serve(cat.Hash(), raw); err != nil {
		t.Fatal(err)
	}
	if err := wnc.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Announce([]string{"tools"})
	next := func() fleet.Announcement {
		t.Helper()
		select {
		case m := <-anns:
			var got fleet.Announcement
			if err := json.Unmarshal(m.Data, &got); err != nil {
				t.Fatalf("announcement %s: %v", m.Data, err)
			}
			return got
		case <-time.After(testutil.DefaultHangGuard): // a hang guard
			t.Fatal("no announcement")
		}
		return fleet.Announcement{}
	}
	if got := next(); got.Worker != "w1" || got.Pool != cat.Hash() || got.IntervalMs != time.Hour.Milliseconds() || got.Leaving || !slices.Equal(got.Changed, []string{"tools"}) || got.RequestFormat != bus.RequestFormat {
		t.Fatalf("announcement: %+v", got)
	}
	// A frontend's query is answered at once.
	if err := fe.Publish(subj.AnnounceQuery(), nil); err != nil {
		t.Fatal(err)
	}
	if got := next(); got.Worker != "w1" || got.Leaving || got.Changed != nil {
		t.Fatalf("answer to a query: %+v", got)
	}
	m, err := fe.Request(subj.Catalog(cat.Hash()), nil, testutil.DefaultHangGuard)
	if err != nil || string(m.Data) != string(raw) {
		t.Fatalf("catalog request: %v, %s", err, m.Data)
	}
	a.Leave()
	if got := next(); got.Worker != "w1" || !got.Leaving {
		t.Fatalf("leaving: %+v", got)
	}
}
