// Package hub serves a frontend's subscriptions/listen streams once they
// are open: the Hub takes their connections over and writes them without
// a goroutine per stream; Plain serves a stream in its handler, the plain
// net/http way, for the connections the Hub cannot take (and as the
// reference the Hub behaves like). Both implement [Server].
//
// Subscriptions/listen streams are many, long-lived and
// mostly idle. A stream served the usual way holds a goroutine (its
// handler), net/http's background reader and two bufio buffers for its
// whole life: about 40 KiB. The hub takes the connection over once the
// stream is open (http.Hijacker) and the handler returns: an idle stream
// is then its socket and a few small structs. A few writer goroutines
// write whatever the registry queues, as HTTP/1.1 chunks; a shared ticker
// queues the keepalives; on Linux one goroutine watches every socket for
// the client's close (epoll, EPOLLRDHUP), so a closed stream frees its
// slot at once, as a handler's request context would. Elsewhere the next
// keepalive or event write finds it.
//
// Streams that cannot be taken over (HTTP/2, HTTP/1.0, TLS, a writer
// without Hijack) are refused by Hub.Adopt: serve them with Plain.
package hub

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/frontend/stream"
	"github.com/mcpfleet/mcpfleet/pkg/listen"
)

const (
	// hubWriters is the number of writer goroutines.
	hubWriters = 8
)

// hubStream is one taken-over listen stream. state serializes its writes:
// at most one writer works on it at a time.
type hubStream struct {
	conn    net.Conn
	ls      *listen.ListenStream
	state   atomic.Int32 // hubIdle, hubQueued, hubRunning, hubDirty
	ping    atomic.Bool  // a keepalive is due
	gone    atomic.Bool  // the client closed the connection
	removed atomic.Bool  // over: nothing more is written
	gauge   func()       // closes the open-streams gauge
	ended   func()       // Adopt's ended (nil: none), called by remove
	buf     []byte       // the chunk being written; only its writer touches it
	pending []byte       // what the socket has not taken yet (its writer's)
	since   time.Time    // when pending began to wait
	watchID uint64       // the close watcher's handle (0: not watched); guarded by Hub.mu
}

const (
	hubIdle int32 = iota
	hubQueued
	hubRunning
	hubDirty // running, and something new arrived meanwhile
)

// Hub writes taken-over listen streams. Safe for concurrent use.
type Hub struct {
	opts    Options
	start   sync.Once
	mu      sync.Mutex
	ready   []*hubStream
	streams map[*hubStream]struct{}
	wake    chan struct{}
	blocked map[*hubStream]struct{} // streams waiting for room in their socket
	kick    chan struct{}           // blocked became non-empty
	quit    chan struct{}
	stopped bool
	wg      sync.WaitGroup
	watch   closeWatcher

	noCloseWatch bool // tests of the keepalive path: no epoll watcher
}

// New returns a hub; its goroutines start with the first adopted stream
// and end at Stop.
func New(opts Options) (*Hub, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	return &Hub{
		opts: opts, streams: map[*hubStream]struct{}{}, blocked: map[*hubStream]struct{}{},
		wake: make(chan struct{}, hubWriters), kick: make(chan struct{}, 1), quit: make(chan struct{}),
	}, nil
}

func (h *Hub) run() {
	h.start.Do(func() {
		for range hubWriters {
			h.wg.Add(1)
			go h.writer() // owned by the hub: ends at stop
		}
		h.wg.Add(1)
		go h.retrier() // owned by the hub: ends at stop
		if ka := h.opts.KeepAlive; ka > 0 {
			h.wg.Add(1)
			go h.keepalives(ka) // owned by the hub: ends at stop
		}
		h.watch = startCloseWatcher(h.opts.Logger, h.noCloseWatch, h.peerGone, &h.wg, h.quit)
	})
}

// Adopt takes over an open listen stream whose acknowledgement has not
// been written: it writes the response head and the acknowledgement
// itself and returns true, after which the handler returns and the hub
// owns the connection and ls, and calls ended (when not nil) once the
// stream is over. It returns false, having touched nothing, when the
// connection cannot be taken over or the hub is stopped.
func (h *Hub) Adopt(w http.ResponseWriter, r *http.Request, ls *listen.ListenStream, ended func()) bool {
	// TLS streams stay with their handler: a crypto/tls connection whose
	// write timed out is broken for good, so tryWrite cannot serve it.
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.TLS != nil || !canHijack(w) {
		return false
	}
	h.mu.Lock()
	stopped := h.stopped
	h.mu.Unlock()
	if stopped {
		return false
	}
	head := responseHead(w.Header())
	// Nothing was written yet, so the hijacked writer holds nothing; the
	// client sends nothing more on a listen stream, so neither does the
	// reader.
	conn, _, err := http.NewResponseController(w).Hijack()
	if errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if err != nil {
		// The connection is gone or in an unknown state: the stream ends.
		ls.Close()
		callEnded(ended)
		return true
	}
	h.run()
	s := &hubStream{conn: conn, ls: ls, ended: ended}
	s.buf = append(head, chunk(nil, stream.FormatEvent("", ls.Ack()))...)
	_ = conn.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
	if _, err := conn.Write(s.buf); err != nil {
		_ = conn.Close()
		ls.Close()
		callEnded(ended)
		return true
	}
	_ = conn.SetWriteDeadline(time.Time{}) // the writers never wait (tryWrite)
	s.buf = s.buf[:0]
	s.gauge = h.opts.Metrics.StreamOpened("listen")
	h.opts.Active.Add(1) // the owner waits for the final results
	h.mu.Lock()
	if h.stopped {
		// Stop came after the check above: it did not see s, so s ends
		// here.
		h.mu.Unlock()
		_ = conn.Close()
		ls.Close()
		s.gauge()
		callEnded(ended)
		h.opts.Active.Done()
		return true
	}
	h.streams[s] = struct{}{}
	h.mu.Unlock()
	// The close watcher's handle is read by remove under h.mu; a stream
	// removed before it was set is unwatched here.
	id := h.watch.add(conn, s)
	h.mu.Lock()
	_, live := h.streams[s]
	if live {
		s.watchID = id
	}
	h.mu.Unlock()
	if !live {
		h.watch.remove(id)
	}
	ls.SetNotify(func() { h.schedule(s) })
	h.schedule(s) // anything queued before SetNotify
	return true
}

// canHijack reports whether the innermost writer under w's Unwrap chain
// can hand over its connection. Wrappers that delegate Hijack without
// checking (gin's) would fail, or worse, only once called.
func canHijack(w http.ResponseWriter) bool {
	_, ok := httpx.Innermost(w).(http.Hijacker)
	return ok
}

// responseHead is the status line and headers of a taken-over stream:
// those the handler set (CORS and the like) and the SSE ones.
func responseHead(hdr http.Header) []byte {
	b := []byte("HTTP/1.1 200 OK\r\n")
	for k, vs := range hdr {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Content-Type", "Cache-Control", "X-Accel-Buffering":
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"...)
	b = append(b, "Date: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	return append(b, "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"...)
}

// chunk appends data as one HTTP/1.1 chunk.
func chunk(b, data []byte) []byte {
	b = strconv.AppendInt(b, int64(len(data)), 16)
	b = append(b, "\r\n"...)
	b = append(b, data...)
	return append(b, "\r\n"...)
}

// schedule queues s for a writer unless it is queued or being written (a
// running writer looks again before it lets go). Never blocks.
func (h *Hub) schedule(s *hubStream) {
	for {
		switch st := s.state.Load(); st {
		case hubIdle:
			if !s.state.CompareAndSwap(hubIdle, hubQueued) {
				continue
			}
			h.mu.Lock()
			h.ready = append(h.ready, s)
			h.mu.Unlock()
			select {
			case h.wake <- struct{}{}:
			default:
			}
			return
		case hubRunning:
			if s.state.CompareAndSwap(hubRunning, hubDirty) {
				return
			}
		default: // queued or dirty: it will be looked at
			return
		}
	}
}

func (h *Hub) next() *hubStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ready) == 0 {
		return nil
	}
	s := h.ready[0]
	h.ready[0] = nil
	h.ready = h.ready[1:]
	if len(h.ready) == 0 {
		h.ready = nil // let the backing array go after a burst
	}
	return s
}

func (h *Hub) writer() {
	defer h.wg.Done()
	for {
		s := h.next()
		if s == nil {
			select {
			case <-h.wake:
				continue
			case <-h.quit:
				return
			}
		}
		s.state.Store(hubRunning)
		for {
			if done := h.serve(s); done {
				break // removed: its state no longer matters
			}
			if s.state.CompareAndSwap(hubRunning, hubIdle) {
				break
			}
			s.state.Store(hubRunning) // dirty: look again
		}
		// Another writer may be waiting for work this one took a wake for.
		h.mu.Lock()
		more := len(h.ready) > 0
		h.mu.Unlock()
		if more {
			select {
			case h.wake <- struct{}{}:
			default:
			}
		}
	}
}

// serve writes what s has: queued messages, a due keepalive, and at the
// end of the stream its final result (on shutdown or a lost bus). It never waits for
// the client: what its socket does not take stays pending, the stream is
// looked at again shortly (retrier), and nothing new is taken from its
// queue meanwhile, so a stalled client fills only its own bounded queue
// (the registry then drops it as slow) and holds no writer. A stream
// whose pending bytes wait longer than WriteTimeout is dropped as slow.
// It returns true when the stream is over and removed.
func (h *Hub) serve(s *hubStream) bool {
	if s.removed.Load() {
		return true
	}
	if s.gone.Load() {
		h.remove(s, false)
		return true
	}
	if len(s.pending) > 0 {
		if !h.push(s) {
			return true
		}
		if len(s.pending) > 0 {
			return false
		}
	}
	ls := s.ls
	var events []byte
drain:
	for {
		select {
		case m := <-ls.C():
			events = stream.AppendEvent(events, "", m)
		default:
			break drain
		}
	}
	if s.ping.Swap(false) && len(events) == 0 {
		events = append(events, ": keepalive\n\n"...)
	}
	reason := ls.Reason()
	if reason == listen.ReasonShutdown || reason == listen.ReasonBusLost {
		events = stream.AppendEvent(events, "", ls.Final())
	}
	s.buf = s.buf[:0]
	if len(events) > 0 {
		s.buf = chunk(s.buf, events)
	}
	if reason != "" {
		s.buf = append(s.buf, "0\r\n\r\n"...)
	}
	if len(s.buf) > 0 {
		s.pending, s.since = s.buf, time.Now()
		ok := h.push(s)
		if cap(s.buf) > 16<<10 {
			s.buf = nil
		}
		if !ok {
			return true
		}
		if len(s.pending) > 0 {
			// Keep the rest apart from buf, which the next round reuses.
			s.pending = append([]byte(nil), s.pending...)
			if reason == listen.ReasonSlow {
				h.remove(s, true)
				return true
			}
			return false
		}
	}
	if reason != "" {
		h.remove(s, reason == listen.ReasonSlow)
		return true
	}
	return false
}

// push writes as much of s.pending as the socket takes now. It returns
// false when the stream was removed: the write failed, or pending has
// waited past WriteTimeout. With bytes left it asks the retrier to come
// back.
func (h *Hub) push(s *hubStream) bool {
	n, err := tryWrite(s.conn, s.pending)
	s.pending = s.pending[n:]
	if err != nil {
		h.remove(s, stream.SlowWrite(err))
		return false
	}
	if len(s.pending) == 0 {
		s.pending = nil
		return true
	}
	if time.Since(s.since) > h.opts.WriteTimeout {
		h.opts.Logger.Warn("frontend: closing a listen stream whose client stopped reading")
		h.remove(s, true)
		return false
	}
	h.mu.Lock()
	h.blocked[s] = struct{}{}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
	return true
}

// hubRetry is how often streams whose sockets were full are tried again.
const hubRetry = 20 * time.Millisecond

// retrier schedules the streams whose sockets were full, hubRetry after
// one of them was blocked.
func (h *Hub) retrier() {
	defer h.wg.Done()
	t := time.NewTimer(hubRetry)
	t.Stop()
	var batch []*hubStream
	for {
		select {
		case <-h.kick:
		case <-h.quit:
			return
		}
		t.Reset(hubRetry)
		select {
		case <-t.C:
		case <-h.quit:
			return
		}
		h.mu.Lock()
		for s := range h.blocked {
			batch = append(batch, s)
		}
		clear(h.blocked)
		h.mu.Unlock()
		for _, s := range batch {
			h.schedule(s)
		}
		clear(batch)
		batch = batch[:0]
	}
}

// remove ends a stream: the socket closes, the registry forgets it.
func (h *Hub) remove(s *hubStream, slow bool) {
	h.mu.Lock()
	_, ok := h.streams[s]
	delete(h.streams, s)
	delete(h.blocked, s)
	watchID := s.watchID
	h.mu.Unlock()
	if !ok {
		return
	}
	s.removed.Store(true)
	h.watch.remove(watchID)
	_ = s.conn.Close()
	s.ls.Close()
	if slow {
		h.opts.Metrics.DroppedStream("listen")
	}
	s.gauge()
	callEnded(s.ended)
	h.opts.Active.Done()
}

// peerGone is the close watcher's report: the client closed s's
// connection.
func (h *Hub) peerGone(s *hubStream) {
	s.gone.Store(true)
	h.schedule(s)
}

func (h *Hub) keepalives(every time.Duration) {
	defer h.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var batch []*hubStream
	for {
		select {
		case <-t.C:
		case <-h.quit:
			return
		}
		h.mu.Lock()
		for s := range h.streams {
			batch = append(batch, s)
		}
		h.mu.Unlock()
		for _, s := range batch {
			s.ping.Store(true)
			h.schedule(s)
		}
		clear(batch)
		batch = batch[:0]
	}
}

// Stop ends the hub after the registry ended its streams (their final
// results are written by then, or deadline passed): the remaining sockets
// close and the goroutines end before it returns. Adopt refuses from then
// on. It is idempotent.
func (h *Hub) Stop() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	var left []*hubStream
	for s := range h.streams {
		left = append(left, s)
	}
	h.mu.Unlock()
	for _, s := range left {
		h.remove(s, false)
	}
	close(h.quit)
	h.wg.Wait()
}
