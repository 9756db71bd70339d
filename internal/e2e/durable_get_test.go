package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// getRun is one legacy client's GET stream: the updates it got, by URI,
// and the event ids they came with.
type getRun struct {
	cl    *testenv.Client
	got   map[string]int
	lists map[string]int // list_changed notifications, by method
	ids   []string
	last  string // the last event id seen
}

// take records updates (and their ids) until one for stop arrives, or
// the stream ends; it reports whether stop arrived.
func (g *getRun) take(t *testing.T, s *testenv.Stream, stop string) bool {
	t.Helper()
	guard := time.NewTimer(testenv.HangGuard(20 * time.Second))
	defer guard.Stop()
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				return false
			}
			if ev.ID != "" {
				g.last = ev.ID
			}
			if ev.Comment || ev.Data == "" {
				continue
			}
			var m testenv.Message
			_ = json.Unmarshal([]byte(ev.Data), &m)
			u := updatedURI(m)
			if strings.HasSuffix(m.Method, "/list_changed") {
				g.lists[m.Method]++
				continue
			}
			if u == "" {
				t.Errorf("unexpected message on a GET stream: %s", ev.Data)
				continue
			}
			g.got[u]++
			g.ids = append(g.ids, ev.ID)
			if u == stop {
				return true
			}
		case <-guard.C:
			t.Fatalf("no update for %s within the hang guard", stop)
		}
	}
}

// TestFrontendKilledGetStreamsDurable: legacy clients subscribed to the
// same resources hold their GET streams on frontend A while a steady flow
// of resources/updated goes on (a tool called through frontend B raises
// one every 40 ms). A is SIGKILLed mid-flow; for seconds no frontend holds
// the streams and updates go on. Each client then resumes with
// Last-Event-ID at B: every update it is subscribed to arrives, each once,
// with strictly increasing event ids, whatever it missed while A was
// dead; and the tool list's change made in that gap arrives once as
// tools/list_changed.
func TestFrontendKilledGetStreamsDurable(t *testing.T) {
	const clients, n, killAt = 4, 110, 15
	c := testenv.StartCluster(t, testenv.ClusterOptions{Frontends: 2, Workers: 2})
	urlA, urlB := c.URLs[0], c.URLs[1]
	uri := func(k int) string { return "test://getdur/" + strconv.Itoa(k) }
	const before, after, final = "test://getdur/before", "test://getdur/after", "test://getdur/final"

	runs := make([]*getRun, clients)
	streams := make([]*testenv.Stream, clients)
	for i := range runs {
		g := &getRun{cl: testenv.NewClient(t, urlA), got: map[string]int{}, lists: map[string]int{}}
		g.cl.Initialize(nil)
		for k, u := range append([]string{before, after, final}, func() (us []string) {
			for k := range n {
				us = append(us, uri(k))
			}
			return us
		}()...) {
			g.cl.Call(100+k, "resources/subscribe", map[string]any{"uri": u})
		}
		s := g.cl.OpenGet(nil)
		if s.Status != http.StatusOK {
			t.Fatalf("client %d: GET on A: HTTP %d %s", i, s.Status, s.Body)
		}
		runs[i], streams[i] = g, s
	}
	toucher := testenv.NewClient(t, urlB)
	toucher.Initialize(nil)
	touch := func(id any, u string) error {
		r := toucher.Post(testenv.Request(id, "tools/call", callParams("touch_resource", map[string]any{"uri": u})), nil)
		if r.Status != http.StatusOK || r.ErrorCode() != 0 || !strings.Contains(string(r.Body), "touched") {
			return fmt.Errorf("touch_resource %s: %s", u, r)
		}
		return nil
	}
	if err := touch("before", before); err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		if !runs[i].take(t, s, before) {
			t.Fatalf("client %d: the GET stream ended before the first update", i)
		}
	}

	// The steady flow, from B: n updates, 40 ms apart.
	var wg sync.WaitGroup
	killNow := make(chan struct{})
	var flowErr error
	wg.Add(1)
	go func() { // ends after n touches (each bounded by the client's timeout)
		defer wg.Done()
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for k := range n {
			<-tick.C
			if err := touch(k, uri(k)); err != nil {
				flowErr = err
				close(killNow)
				return
			}
			if k == killAt {
				close(killNow)
			}
		}
	}()
	<-killNow
	c.Frontends[0].Kill()
	killed := time.Now()
	beforeKill := make([]int, clients)
	for i, s := range streams {
		if runs[i].take(t, s, after) {
			t.Fatalf("client %d: the last update arrived before the kill", i)
		}
		beforeKill[i] = len(runs[i].ids) - 1 // less the first one
	}
	wg.Wait() // the flow goes on while no frontend holds the streams
	if flowErr != nil {
		t.Fatal(flowErr)
	}
	// The tool list changes too while no frontend holds the streams: B
	// raises list_changed only for the streams it holds (none yet), so the
	// resumed streams get it from their log's catch-up, once.
	toolsAt := func() int {
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		_ = json.Unmarshal(toucher.Call("tools", "tools/list", nil), &res)
		return len(res.Tools)
	}
	tools := toolsAt()
	toucher.Call("change", "tools/call", callParams("test_trigger_tool_change", nil))
	testutil.PollFor(t, testenv.HangGuard(10*time.Second), "B to see the new tool list", func() bool { return toolsAt() != tools })
	gap := time.Since(killed)
	if err := touch("after", after); err != nil {
		t.Fatal(err)
	}

	for i, g := range runs {
		g.cl.URLs = []string{urlB}
		s := g.cl.OpenGet(map[string]string{"Last-Event-ID": g.last})
		if s.Status != http.StatusOK {
			t.Fatalf("client %d: resuming after %s at B: HTTP %d %s", i, g.last, s.Status, s.Body)
		}
		if !g.take(t, s, after) {
			t.Fatalf("client %d: the resumed stream ended before the last update", i)
		}
		streams[i] = s
	}
	// What the resumptions logged after the last update (the list_changed
	// of the gap) arrives before a final update raised now.
	if err := touch("final", final); err != nil {
		t.Fatal(err)
	}
	for i, g := range runs {
		if !g.take(t, streams[i], final) {
			t.Fatalf("client %d: the resumed stream ended before the final update", i)
		}
		streams[i].Close()
	}
	for i, g := range runs {
		delivered := 0
		for k := range n {
			if g.got[uri(k)] != 1 {
				t.Errorf("client %d: update %d delivered %d times, want once", i, k, g.got[uri(k)])
			}
			delivered += g.got[uri(k)]
		}
		prev := uint64(0)
		for _, id := range g.ids {
			idx, _ := strconv.ParseUint(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
			if idx <= prev {
				t.Errorf("client %d: event ids not strictly increasing: %v", i, g.ids)
				break
			}
			prev = idx
		}
		if n := g.lists["notifications/tools/list_changed"]; n != 1 || len(g.lists) != 1 {
			t.Errorf("client %d: list_changed delivered %v, want tools/list_changed once", i, g.lists)
		}
		t.Logf("client %d: produced %d updates, delivered %d (%d before the kill, the rest resumed at B); no frontend held the stream for %s",
			i, n, delivered, beforeKill[i], gap.Round(100*time.Millisecond))
	}
}
