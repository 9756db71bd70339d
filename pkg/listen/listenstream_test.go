package listen_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestHonoured(t *testing.T) {
	cases := []struct {
		name string
		in   protocol.SubscriptionFilter
		want protocol.SubscriptionFilter
	}{
		{"empty", protocol.SubscriptionFilter{}, protocol.SubscriptionFilter{}},
		{"list kinds kept",
			protocol.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true},
			protocol.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}},
		{"one kind", protocol.SubscriptionFilter{PromptsListChanged: true}, protocol.SubscriptionFilter{PromptsListChanged: true}},
		{"task ids dropped",
			protocol.SubscriptionFilter{ToolsListChanged: true, TaskIDs: []string{"t1", "t2"}},
			protocol.SubscriptionFilter{ToolsListChanged: true}},
		{"only task ids", protocol.SubscriptionFilter{TaskIDs: []string{"t1"}}, protocol.SubscriptionFilter{}},
		{"uris deduplicated in order, empty dropped",
			protocol.SubscriptionFilter{ResourceSubscriptions: []string{"file:///b", "", "file:///a", "file:///b", "", "file:///a", "file:///c"}},
			protocol.SubscriptionFilter{ResourceSubscriptions: []string{"file:///b", "file:///a", "file:///c"}}},
		{"only empty uris", protocol.SubscriptionFilter{ResourceSubscriptions: []string{"", ""}}, protocol.SubscriptionFilter{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			inURIs := append([]string(nil), c.in.ResourceSubscriptions...)
			got := listen.Honoured(&in, false)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Honoured(%+v) = %+v, want %+v", c.in, got, c.want)
			}
			if !reflect.DeepEqual(in.ResourceSubscriptions, inURIs) {
				t.Fatalf("Honoured changed its input: %+v", in)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("taskIds")) {
				t.Fatalf("honoured filter still has taskIds: %s", b)
			}
		})
	}
}

func TestListenAck(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	requested := protocol.SubscriptionFilter{
		ToolsListChanged:      true,
		ResourceSubscriptions: []string{"file:///project/config.json", "", "file:///project/config.json", "mem://x y"},
		TaskIDs:               []string{"task-1"},
	}
	cases := []struct {
		id     protocol.ID
		wantID string
	}{
		{protocol.StringID("listen-1"), `"listen-1"`},
		{protocol.StringID(`we"ird\id`), `"we\"ird\\id"`},
		{protocol.Int64ID(7), `7`},
		{protocol.Int64ID(0), `0`},
		{protocol.Int64ID(-9007199254740993), `-9007199254740993`},
	}
	for _, c := range cases {
		t.Run(c.id.String(), func(t *testing.T) {
			l, err := r.OpenListen("client", c.id, listen.Honoured(&requested, false))
			if err != nil {
				t.Fatalf("OpenListen: %v", err)
			}
			defer l.Close()
			if !reflect.DeepEqual(l.ID, c.id) {
				t.Fatalf("ID = %v, want %v", l.ID, c.id)
			}
			// Nothing is queued ahead of the ack.
			empty(t, l.C(), "fresh stream")
			raw := l.Ack()
			n := decodeNote(t, raw)
			if n.Method != protocol.NotificationSubscriptionsAck {
				t.Fatalf("method = %q in %s", n.Method, raw)
			}
			if got := subID(t, n, raw); string(got) != c.wantID {
				t.Fatalf("subscription id = %s, want %s in %s", got, c.wantID, raw)
			}
			if len(n.Params) != 2 {
				t.Fatalf("params keys: want _meta and notifications only: %s", raw)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(n.Params["notifications"], &fields); err != nil {
				t.Fatalf("params.notifications: %v in %s", err, raw)
			}
			if len(fields) != 2 || fields["toolsListChanged"] == nil || fields["resourceSubscriptions"] == nil {
				t.Fatalf("notifications = %s, want toolsListChanged and resourceSubscriptions only", n.Params["notifications"])
			}
			var f protocol.SubscriptionFilter
			if err := json.Unmarshal(n.Params["notifications"], &f); err != nil {
				t.Fatal(err)
			}
			want := protocol.SubscriptionFilter{ToolsListChanged: true,
				ResourceSubscriptions: []string{"file:///project/config.json", "mem://x y"}}
			if !reflect.DeepEqual(f, want) {
				t.Fatalf("acknowledged %+v, want %+v", f, want)
			}
		})
	}
}

func TestListenAckEmptyFilter(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	l, err := r.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := decodeNote(t, l.Ack())
	if got := string(n.Params["notifications"]); got != "{}" {
		t.Fatalf("notifications = %s, want {} (the filter is required)", got)
	}
}

// TestListenOnlyRequestedListKinds relies on every list_changed event going
// through the registry's one wildcard subscription, in publication order:
// once the last event reached a stream, the earlier ones were handled.
func TestListenOnlyRequestedListKinds(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	open := func(id protocol.ID, f protocol.SubscriptionFilter) *listen.ListenStream {
		l, err := r.OpenListen("client", id, f)
		if err != nil {
			t.Fatalf("OpenListen(%v): %v", id, err)
		}
		t.Cleanup(l.Close)
		return l
	}
	toolsRes := open(protocol.StringID("a"), protocol.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true})
	prompts := open(protocol.Int64ID(2), protocol.SubscriptionFilter{PromptsListChanged: true})
	all := open(protocol.StringID("all"), protocol.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true})
	none := open(protocol.StringID("none"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{"file:///x"}})

	v.listChanged("tools")
	v.listChanged("prompts")
	v.publish(v.subj.ListChanged("bogus"), []byte(`{"jsonrpc":"2.0","method":"notifications/bogus/list_changed"}`))
	v.listChanged("resources")

	checkTagged(t, recv(t, toolsRes.C(), "a: tools"), "notifications/tools/list_changed", "", toolsRes.ID)
	checkTagged(t, recv(t, toolsRes.C(), "a: resources"), "notifications/resources/list_changed", "", toolsRes.ID)
	for _, kind := range []string{"tools", "prompts", "resources"} {
		checkTagged(t, recv(t, all.C(), "all: "+kind), "notifications/"+kind+"/list_changed", "", all.ID)
	}
	checkTagged(t, recv(t, prompts.C(), "2: prompts"), "notifications/prompts/list_changed", "", prompts.ID)
	r.Barrier() // the resources event (the last) was offered to every stream
	empty(t, toolsRes.C(), "a")
	empty(t, prompts.C(), "2")
	empty(t, all.C(), "all")
	empty(t, none.C(), "none")
}

func TestListenResourceSubscriptionsFilterByURI(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	u1, u2, u3 := "file:///project/config.json", "mem://a b/ü.txt?x=<1>&y", "file:///nobody"
	open := func(id protocol.ID, f protocol.SubscriptionFilter) *listen.ListenStream {
		l, err := r.OpenListen("client", id, f)
		if err != nil {
			t.Fatalf("OpenListen(%v): %v", id, err)
		}
		t.Cleanup(l.Close)
		return l
	}
	a := open(protocol.StringID("a"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u1}})
	b := open(protocol.Int64ID(2), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u2}})
	w := open(protocol.StringID("witness"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u1, u2}})
	tools := open(protocol.StringID("tools"), protocol.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true})

	if got := r.Watchers(); len(got) != 2 || got[u1] != 2 || got[u2] != 2 {
		t.Fatalf("watchers = %v", got)
	}
	v.noInterest(v.pub, v.subj.ResourceUpdated(u3))

	v.resourceUpdated(u2)
	v.resourceUpdated(u3)
	v.resourceUpdated(u1)

	seen := map[string]bool{}
	for range 2 {
		raw := recv(t, w.C(), "witness")
		n := decodeNote(t, raw)
		var uri string
		_ = json.Unmarshal(n.Params["uri"], &uri)
		checkTagged(t, raw, protocol.NotificationResourceUpdated, uri, w.ID)
		seen[uri] = true
	}
	if !seen[u1] || !seen[u2] {
		t.Fatalf("witness saw %v", seen)
	}
	r.Barrier() // both events were offered to every watcher
	checkTagged(t, recv(t, a.C(), "a"), protocol.NotificationResourceUpdated, u1, a.ID)
	checkTagged(t, recv(t, b.C(), "b"), protocol.NotificationResourceUpdated, u2, b.ID)
	empty(t, a.C(), "a")
	empty(t, b.C(), "b")
	empty(t, w.C(), "witness")
	empty(t, tools.C(), "list-only stream")
}

// TestListenEventRightAfterOpen publishes from another connection as soon
// as OpenListen returns: the stream's subscriptions must already be known
// to the server.
func TestListenEventRightAfterOpen(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	for i := range 25 {
		uri := fmt.Sprintf("file:///fresh/%d", i)
		l, err := r.OpenListen("client", protocol.Int64ID(int64(i)), protocol.SubscriptionFilter{
			ToolsListChanged: true, ResourceSubscriptions: []string{uri}})
		if err != nil {
			t.Fatalf("OpenListen: %v", err)
		}
		if err := v.pub.Publish(v.subj.ResourceUpdated(uri), resourceUpdatedMsg(uri)); err != nil {
			t.Fatal(err)
		}
		if err := v.pub.Publish(v.subj.ListChanged("tools"), listChangedMsg("tools")); err != nil {
			t.Fatal(err)
		}
		if err := v.pub.FlushTimeout(deadline); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for range 2 {
			raw := recv(t, l.C(), fmt.Sprintf("stream %d", i))
			got[decodeNote(t, raw).Method] = true
		}
		if !got[protocol.NotificationResourceUpdated] || !got["notifications/tools/list_changed"] {
			t.Fatalf("stream %d got %v", i, got)
		}
		l.Close()
	}
	if n := len(r.Watchers()); n != 0 {
		t.Fatalf("%d URIs still watched after every stream closed", n)
	}
}

func TestListenCap(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{MaxListen: 2})
	a, err := r.OpenListen("c", protocol.Int64ID(1), protocol.SubscriptionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.OpenListen("d", protocol.Int64ID(1), protocol.SubscriptionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenListen("e", protocol.Int64ID(1), protocol.SubscriptionFilter{ResourceSubscriptions: []string{"file:///refused"}}); !errors.Is(err, listen.ErrTooMany) {
		t.Fatalf("third stream: err = %v, want ErrTooMany", err)
	}
	if _, ok := r.Watchers()["file:///refused"]; ok {
		t.Fatal("a refused stream left a URI subscription")
	}
	if n := r.ListenCount(); n != 2 {
		t.Fatalf("ListenCount = %d", n)
	}
	a.Close()
	c, err := r.OpenListen("e", protocol.Int64ID(1), protocol.SubscriptionFilter{})
	if err != nil {
		t.Fatalf("after a Close: %v", err)
	}
	b.Close()
	c.Close()
	if n := r.ListenCount(); n != 0 {
		t.Fatalf("ListenCount = %d", n)
	}

	t.Run("default 1000", func(t *testing.T) {
		r := v.registry(v.conn("fe-default"), listen.Options{})
		for i := range 1000 {
			l, err := r.OpenListen("c", protocol.Int64ID(int64(i)), protocol.SubscriptionFilter{})
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
			defer l.Close()
		}
		if _, err := r.OpenListen("c", protocol.Int64ID(1000), protocol.SubscriptionFilter{}); !errors.Is(err, listen.ErrTooMany) {
			t.Fatalf("stream 1001: err = %v, want ErrTooMany", err)
		}
	})
	t.Run("negative is unlimited", func(t *testing.T) {
		r := v.registry(v.conn("fe-unlimited"), listen.Options{MaxListen: -1})
		for i := range 1200 {
			l, err := r.OpenListen("c", protocol.Int64ID(int64(i)), protocol.SubscriptionFilter{})
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
			defer l.Close()
		}
		if n := r.ListenCount(); n != 1200 {
			t.Fatalf("ListenCount = %d", n)
		}
	})
}

func TestListenDuplicate(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	uri, other := "file:///dup", "file:///dup-other"
	orig, err := r.OpenListen("alice", protocol.StringID("x"), protocol.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{uri}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenListen("alice", protocol.StringID("x"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{other}}); !errors.Is(err, listen.ErrDuplicate) {
		t.Fatalf("same client and id: err = %v, want ErrDuplicate", err)
	}
	if w := r.Watchers(); len(w) != 1 || w[uri] != 1 {
		t.Fatalf("a refused duplicate changed the URI subscriptions: %v", w)
	}
	// The original goes on.
	notDone(t, orig.Done(), "original")
	v.resourceUpdated(uri)
	checkTagged(t, recv(t, orig.C(), "original"), protocol.NotificationResourceUpdated, uri, orig.ID)

	var others []*listen.ListenStream
	for _, o := range []struct {
		client string
		id     protocol.ID
	}{
		{"bob", protocol.StringID("x")},   // another client
		{"alice", protocol.StringID("y")}, // another id
		{"alice", protocol.Int64ID(1)},    // the integer 1 ...
		{"alice", protocol.StringID("1")}, // ... is not the string "1"
	} {
		l, err := r.OpenListen(o.client, o.id, protocol.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatalf("OpenListen(%s, %v): %v", o.client, o.id, err)
		}
		others = append(others, l)
	}
	if n := r.ListenCount(); n != 5 {
		t.Fatalf("ListenCount = %d, want 5", n)
	}
	orig.Close()
	again, err := r.OpenListen("alice", protocol.StringID("x"), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatalf("same id after Close: %v", err)
	}
	// Closing the old stream again must not unregister the new one.
	orig.Close()
	if n := r.ListenCount(); n != 5 {
		t.Fatalf("ListenCount = %d after a second Close of the old stream, want 5", n)
	}
	v.listChanged("tools")
	checkTagged(t, recv(t, again.C(), "reopened"), "notifications/tools/list_changed", "", again.ID)
	for _, l := range others {
		checkTagged(t, recv(t, l.C(), "other "+l.ID.String()), "notifications/tools/list_changed", "", l.ID)
		l.Close()
	}
	again.Close()
}

func TestListenCloseDropsURIs(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	u1, u2 := "file:///shared", "file:///only-a"
	a, err := r.OpenListen("c", protocol.StringID("a"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u1, u2}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.OpenListen("c", protocol.StringID("b"), protocol.SubscriptionFilter{ResourceSubscriptions: []string{u1}})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Watchers(); w[u1] != 2 || w[u2] != 1 {
		t.Fatalf("watchers = %v", w)
	}
	if a.Reason() != "" {
		t.Fatalf("Reason before the end = %q", a.Reason())
	}
	a.Close()
	a.Close()
	waitDone(t, a.Done(), "closed stream")
	if a.Reason() != listen.ReasonClosed {
		t.Fatalf("Reason = %q, want %q", a.Reason(), listen.ReasonClosed)
	}
	if n := r.ListenCount(); n != 1 {
		t.Fatalf("ListenCount = %d", n)
	}
	if w := r.Watchers(); len(w) != 1 || w[u1] != 1 {
		t.Fatalf("watchers after closing a = %v", w)
	}
	v.noInterest(nc, v.subj.ResourceUpdated(u2))

	v.resourceUpdated(u1)
	checkTagged(t, recv(t, b.C(), "b"), protocol.NotificationResourceUpdated, u1, b.ID)
	r.Barrier()
	empty(t, a.C(), "closed stream")

	b.Close()
	if w := r.Watchers(); len(w) != 0 {
		t.Fatalf("watchers after closing every stream = %v", w)
	}
	v.noInterest(nc, v.subj.ResourceUpdated(u1))
	b.Close()
	if n := r.ListenCount(); n != 0 {
		t.Fatalf("ListenCount = %d", n)
	}
}

func TestShutdown(t *testing.T) {
	v := newEnv(t)
	nc := v.conn("fe")
	r := v.registry(nc, listen.Options{})
	ids := []protocol.ID{protocol.StringID("listen-1"), protocol.Int64ID(1), protocol.StringID(`q"`)}
	var ls []*listen.ListenStream
	for _, id := range ids {
		l, err := r.OpenListen("c", id, protocol.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///l"}})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	g, err := r.OpenSession(t.Context(), "sess")
	if err != nil {
		t.Fatal(err)
	}

	r.Shutdown()
	r.Shutdown()
	for _, l := range ls {
		waitDone(t, l.Done(), "listen "+l.ID.String())
		if l.Reason() != listen.ReasonShutdown {
			t.Fatalf("Reason = %q, want %q", l.Reason(), listen.ReasonShutdown)
		}
		raw := l.Final()
		var resp struct {
			JSONRPC string                     `json:"jsonrpc"`
			ID      json.RawMessage            `json:"id"`
			Result  map[string]json.RawMessage `json:"result"`
			Method  *string                    `json:"method"`
			Error   json.RawMessage            `json:"error"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			t.Fatalf("Final is not JSON: %v: %s", err, raw)
		}
		idJSON := l.ID.AppendJSON(nil)
		if resp.JSONRPC != "2.0" || !bytes.Equal(resp.ID, idJSON) || resp.Method != nil || resp.Error != nil {
			t.Fatalf("Final = %s: want a response with id %s", raw, idJSON)
		}
		if len(resp.Result) != 2 || string(resp.Result["resultType"]) != `"complete"` {
			t.Fatalf("Final result = %s", raw)
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(resp.Result["_meta"], &meta); err != nil || len(meta) != 1 ||
			!bytes.Equal(meta[protocol.MetaSubscriptionID], idJSON) {
			t.Fatalf("Final _meta = %s, want {%q: %s}", resp.Result["_meta"], protocol.MetaSubscriptionID, idJSON)
		}
	}
	waitDone(t, g.Done(), "session stream")
	if g.Reason() != listen.ReasonShutdown {
		t.Fatalf("session Reason = %q", g.Reason())
	}
	if _, err := r.OpenListen("c", protocol.StringID("late"), protocol.SubscriptionFilter{}); !errors.Is(err, listen.ErrClosed) {
		t.Fatalf("OpenListen after Shutdown: err = %v, want ErrClosed", err)
	}
	if _, err := r.OpenListen("c", ids[0], protocol.SubscriptionFilter{}); !errors.Is(err, listen.ErrClosed) {
		t.Fatalf("OpenListen after Shutdown: err = %v, want ErrClosed", err)
	}
	if _, err := r.OpenSession(t.Context(), "sess2"); !errors.Is(err, listen.ErrClosed) {
		t.Fatalf("OpenSession after Shutdown: err = %v, want ErrClosed", err)
	}
	// The handlers close their streams: then nothing is left subscribed.
	for _, l := range ls {
		l.Close()
	}
	g.Close()
	if l := ls[0]; l.Reason() != listen.ReasonShutdown {
		t.Fatalf("Close after Shutdown changed the reason to %q", l.Reason())
	}
	if n := r.ListenCount(); n != 0 {
		t.Fatalf("ListenCount = %d", n)
	}
	for _, subj := range []string{v.subj.ListChanged("tools"), v.subj.ResourceUpdated("file:///l"),
		v.subj.Live("sess", bus.SessionLog), v.subj.SessionControl("sess")} {
		v.noInterest(nc, subj)
	}
}

func TestListenSlowReader(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{ListenBuffer: 2})
	f := protocol.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///r"}}
	slow, err := r.OpenListen("c", protocol.StringID("slow"), f)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := r.OpenListen("c", protocol.StringID("fast"), f)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	// The fast reader reads each event before the next is published; the
	// slow one reads nothing and overflows its buffer of 2 on the third.
	for i := range 5 {
		v.listChanged("tools")
		checkTagged(t, recv(t, fast.C(), fmt.Sprintf("fast %d", i)), "notifications/tools/list_changed", "", fast.ID)
	}
	r.Barrier()
	waitDone(t, slow.Done(), "slow reader")
	if slow.Reason() != listen.ReasonSlow {
		t.Fatalf("Reason = %q, want %q", slow.Reason(), listen.ReasonSlow)
	}
	notDone(t, fast.Done(), "fast reader")
	if fast.Reason() != "" {
		t.Fatalf("fast Reason = %q", fast.Reason())
	}
	// What was buffered before the overflow is still there, in order.
	for i := range 2 {
		checkTagged(t, recv(t, slow.C(), fmt.Sprintf("slow buffered %d", i)), "notifications/tools/list_changed", "", slow.ID)
	}
	// The others keep receiving; the ended stream gets nothing more.
	v.resourceUpdated("file:///r")
	checkTagged(t, recv(t, fast.C(), "fast after"), protocol.NotificationResourceUpdated, "file:///r", fast.ID)
	v.listChanged("tools")
	checkTagged(t, recv(t, fast.C(), "fast after"), "notifications/tools/list_changed", "", fast.ID)
	r.Barrier()
	empty(t, slow.C(), "ended slow stream")
}

// SetNotify's function runs after each queued message and when the stream
// ends, so a transport can write streams without a goroutine each.
func TestListenNotify(t *testing.T) {
	v := newEnv(t)
	r := v.registry(v.conn("fe"), listen.Options{})
	l, err := r.OpenListen("c", protocol.StringID("n"), protocol.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	l.SetNotify(func() { calls.Add(1) })
	r.ListChanged("tools")
	r.ListChanged("prompts") // not asked for: no message, no call
	if got := calls.Load(); got != 1 {
		t.Fatalf("notify called %d times after one queued message, want 1", got)
	}
	recv(t, l.C(), "the queued message")
	r.Shutdown()
	if got := calls.Load(); got != 2 {
		t.Fatalf("notify called %d times after the stream ended, want 2", got)
	}
	if l.Reason() != listen.ReasonShutdown {
		t.Fatalf("Reason = %q", l.Reason())
	}
}
