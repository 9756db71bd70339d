package hub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/metrics"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// The shared suite: every Server implementation (the Hub, with and without
// its close watcher, and Plain, the reference) passes the same tests.

// kinds builds each implementation under test.
var kinds = []struct {
	name string
	make func(t *testing.T, opts Options) Server
}{
	{"hub", func(t *testing.T, opts Options) Server { return newHub(t, opts, false) }},
	{"hub-nowatch", func(t *testing.T, opts Options) Server { return newHub(t, opts, true) }},
	{"plain", func(t *testing.T, opts Options) Server {
		p, err := NewPlain(opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

func newHub(t *testing.T, opts Options, noWatch bool) *Hub {
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.noCloseWatch = noWatch
	return h
}

// harness serves listen streams through one Server, fed by a registry.
type harness struct {
	reg   *listen.Registry
	srv   Server
	addr  string
	prom  *prometheus.Registry
	next  int
	mu    sync.Mutex
	stops []func()
	ended atomic.Int64 // calls of Adopt's ended
}

func forEachKind(t *testing.T, opts Options, test func(t *testing.T, h *harness)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			test(t, startHarness(t, opts, k.make))
		})
	}
}

func startHarness(t *testing.T, opts Options, mk func(*testing.T, Options) Server) *harness {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	e, err := bus.StartEmbedded(&bus.EmbeddedOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	nc, err := e.Connect("hub-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := &harness{prom: prometheus.NewRegistry()}
	h.reg = listen.New(bus.NATS(nc), listen.Options{Logger: log, ListenBuffer: 4})
	if err := h.reg.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	opts.Logger, opts.Metrics = log, metrics.New(h.prom, nil)
	h.srv = mk(t, opts)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		ls, err := h.reg.OpenListen(r.RemoteAddr, protocol.Int64ID(id), protocol.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !h.srv.Adopt(w, r, ls, func() { h.ended.Add(1) }) {
			t.Errorf("%T refused a plain HTTP/1.1 stream", h.srv)
			ls.Close()
		}
	}))
	t.Cleanup(func() {
		h.reg.Shutdown()
		h.srv.Stop()
		hs.Close()
	})
	h.addr = strings.TrimPrefix(hs.URL, "http://")
	return h
}

// client is one listen stream's client, reading the raw connection.
type client struct {
	conn *net.TCPConn
	br   *bufio.Reader
}

// open opens a listen stream and reads its acknowledgement.
func (h *harness) open(t *testing.T) *client {
	t.Helper()
	h.next++
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	fmt.Fprintf(conn, "GET /?id=%d HTTP/1.1\r\nHost: %s\r\n\r\n", h.next, h.addr)
	// A hang guard, not a measure: every read below is of something due.
	_ = conn.SetReadDeadline(time.Now().Add(testutil.DefaultHangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: HTTP %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &client{conn: conn.(*net.TCPConn), br: bufio.NewReader(resp.Body)}
	if data, err := c.event(); err != nil || !strings.Contains(data, protocol.NotificationSubscriptionsAck) {
		t.Fatalf("acknowledgement: %q, %v", data, err)
	}
	return c
}

// read returns the next SSE block: an event's data, or a comment
// (starting with ':').
func (c *client) read() (string, error) {
	var data, comment string
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if comment != "" {
				return comment, nil
			}
			return data, nil
		case strings.HasPrefix(line, ":"):
			comment = line
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// event returns the next event's data, skipping keepalives.
func (c *client) event() (string, error) {
	for {
		b, err := c.read()
		if err != nil || !strings.HasPrefix(b, ":") {
			return b, err
		}
	}
}

// dropped is the number of listen streams dropped as slow.
func (h *harness) dropped(t *testing.T) float64 {
	t.Helper()
	fams, err := h.prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "mcpfleet_frontend_dropped_streams_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "listen" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestEventsInOrder(t *testing.T) {
	forEachKind(t, Options{KeepAlive: -1}, func(t *testing.T, h *harness) {
		c := h.open(t)
		kinds := []string{"tools", "prompts", "resources"}
		for round := range 10 {
			// At most ListenBuffer (4) queued at once: the client reads
			// each batch before the next.
			for _, k := range kinds {
				h.reg.ListChanged(k)
			}
			for _, k := range kinds {
				data, err := c.event()
				if err != nil || !strings.Contains(data, "notifications/"+k+"/list_changed") {
					t.Fatalf("round %d: got %q, %v; want %s list_changed", round, data, err, k)
				}
			}
		}
	})
}

func TestKeepalives(t *testing.T) {
	forEachKind(t, Options{KeepAlive: 20 * time.Millisecond}, func(t *testing.T, h *harness) {
		c := h.open(t)
		for range 3 {
			b, err := c.read()
			if err != nil || b != ": keepalive" {
				t.Fatalf("got %q, %v; want a keepalive", b, err)
			}
		}
	})
}

// A client that stops reading is dropped as slow (the registry's bounded
// queue or the write timeout), counted, and its slot freed.
func TestSlowReaderDropped(t *testing.T) {
	forEachKind(t, Options{KeepAlive: -1, WriteTimeout: 200 * time.Millisecond}, func(t *testing.T, h *harness) {
		c := h.open(t)
		_ = c.conn.SetReadBuffer(4096)
		testutil.Poll(t, "the stream of a client that does not read to be dropped", func() bool {
			for range 1000 {
				h.reg.ListChanged("tools")
			}
			return h.reg.ListenCount() == 0
		})
		testutil.Poll(t, "the dropped stream to be counted", func() bool { return h.dropped(t) == 1 })
	})
}

// A client that resets its connection frees its slot: the close watcher
// sees it at once; without one (or on Plain) the keepalive write or the
// handler's request context does.
func TestPeerGoneDetected(t *testing.T) {
	forEachKind(t, Options{KeepAlive: 50 * time.Millisecond}, func(t *testing.T, h *harness) {
		c := h.open(t)
		if n := h.reg.ListenCount(); n != 1 {
			t.Fatalf("%d open listen streams, want 1", n)
		}
		_ = c.conn.SetLinger(0) // RST: the next write to it fails
		_ = c.conn.Close()
		testutil.Poll(t, "the gone peer's stream to end", func() bool { return h.reg.ListenCount() == 0 })
		if d := h.dropped(t); d != 0 {
			t.Errorf("a gone peer was counted as %v slow streams", d)
		}
		h.waitEnded(t, 1)
	})
}

// On shutdown the registry ends the streams (each writes its final
// result), then Stop ends what is left: every client sees its stream end.
func TestStopEndsStreams(t *testing.T) {
	forEachKind(t, Options{KeepAlive: -1}, func(t *testing.T, h *harness) {
		c1, c2 := h.open(t), h.open(t)
		h.reg.Shutdown()
		for i, c := range []*client{c1, c2} {
			data, err := c.event()
			if err != nil || !strings.Contains(data, `"resultType":"complete"`) {
				t.Fatalf("stream %d: got %q, %v; want the final result", i, data, err)
			}
		}
		h.srv.Stop()
		for i, c := range []*client{c1, c2} {
			if b, err := c.read(); err == nil || isTimeout(err) {
				t.Fatalf("stream %d after Stop: got %q, %v; want its end", i, b, err)
			}
		}
		testutil.Poll(t, "every stream to be closed", func() bool { return h.reg.ListenCount() == 0 })
		h.waitEnded(t, 2)
	})
}

// waitEnded waits until Adopt's ended was called n times, and fails if
// it was called more often.
func (h *harness) waitEnded(t *testing.T, n int64) {
	t.Helper()
	testutil.Poll(t, fmt.Sprintf("ended to be called for the %d streams", n), func() bool { return h.ended.Load() >= n })
	if got := h.ended.Load(); got != n {
		t.Fatalf("ended was called %d times for %d streams, want once each", got, n)
	}
}

// Stop alone (the registry still running) ends the streams too.
func TestStopAloneEndsStreams(t *testing.T) {
	forEachKind(t, Options{KeepAlive: -1}, func(t *testing.T, h *harness) {
		c := h.open(t)
		h.srv.Stop()
		for {
			b, err := c.read()
			if err == nil {
				continue // Plain writes the final result first
			}
			if isTimeout(err) {
				t.Fatalf("the stream did not end at Stop (last %q)", b)
			}
			break
		}
		testutil.Poll(t, "the stream to be closed", func() bool { return h.reg.ListenCount() == 0 })
	})
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// When the bus is lost the registry ends the streams: each writes what
// was queued before the loss, then its final result, and its response
// ends (the client listens again elsewhere), with no Stop.
func TestBusLostEndsStreams(t *testing.T) {
	forEachKind(t, Options{KeepAlive: -1}, func(t *testing.T, h *harness) {
		c1, c2 := h.open(t), h.open(t)
		h.reg.ListChanged("tools")
		if gets, listens := h.reg.BusLost(); gets != 0 || listens != 2 {
			t.Fatalf("BusLost ended %d GET and %d listen streams, want 0 and 2", gets, listens)
		}
		for i, c := range []*client{c1, c2} {
			if data, err := c.event(); err != nil || !strings.Contains(data, "notifications/tools/list_changed") {
				t.Fatalf("stream %d: got %q, %v; want the event queued before the loss", i, data, err)
			}
			if data, err := c.event(); err != nil || !strings.Contains(data, `"resultType":"complete"`) {
				t.Fatalf("stream %d: got %q, %v; want the final result", i, data, err)
			}
			if b, err := c.read(); err != io.EOF {
				t.Fatalf("stream %d after its result: got %q, %v; want the end of the response", i, b, err)
			}
		}
		testutil.Poll(t, "every stream to be closed", func() bool { return h.reg.ListenCount() == 0 })
	})
}
