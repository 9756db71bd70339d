package bus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testutil"
)

// hang bounds every wait of these tests; none of them takes it when the
// code is right.
const hang = 10 * time.Second

// listen returns the address of a loopback listener and what receives
// the one connection it accepts (nil when the accept fails).
func listen(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	return ln.Addr().String(), accepted
}

// acceptedConn waits for the connection of listen.
func acceptedConn(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		if c == nil {
			t.Fatal("accept failed")
		}
		return c
	case <-time.After(hang):
		t.Fatal("accept hung")
		return nil
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	addr, accepted := listen(t)
	client, err := net.DialTimeout("tcp", addr, hang)
	if err != nil {
		t.Fatal(err)
	}
	server = acceptedConn(t, accepted)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// gatedConn counts the socket writes a batchConn makes. The write
// numbered gateAt (from 1) first reports that it started, then waits for
// the gate to open; the write numbered failAt fails with errInjected.
type gatedConn struct {
	net.Conn
	writes  atomic.Int32
	gateAt  int32
	started chan struct{}
	gate    chan struct{}
	failAt  int32
	closed  atomic.Bool
}

var errInjected = errors.New("injected write error")

func newGated(c net.Conn) *gatedConn {
	return &gatedConn{Conn: c, started: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gatedConn) Write(p []byte) (int, error) {
	n := g.writes.Add(1)
	if n == g.failAt {
		return 0, errInjected
	}
	if n == g.gateAt {
		close(g.started)
		select {
		case <-g.gate:
		case <-time.After(hang):
			return 0, errors.New("gate never opened")
		}
	}
	return g.Conn.Write(p)
}

func (g *gatedConn) Close() error {
	g.closed.Store(true)
	return g.Conn.Close()
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hang):
		t.Fatalf("%s: hung", what)
	}
}

// blockedWriter returns a batchConn whose Writes all go to its writer,
// after first was written and the writer's socket write of it is blocked
// at g's gate; server is the socket's other end.
func blockedWriter(t *testing.T, first string) (b *batchConn, g *gatedConn, server net.Conn) {
	t.Helper()
	client, server := tcpPair(t)
	g = newGated(client)
	g.gateAt = 1
	b = newBatchConn(g, 0)
	b.inlineGap = time.Hour
	b.last = time.Now() // not quiet: every Write goes to the writer
	if _, err := b.Write([]byte(first)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, g.started, "the writer's socket write")
	return b, g, server
}

// whileGateOpens runs fn in a goroutine, opens g's gate and returns fn's
// error, bounded by hang.
func whileGateOpens(t *testing.T, g *gatedConn, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	close(g.gate)
	select {
	case err := <-done:
		return err
	case <-time.After(hang):
		t.Fatal("hung after the gate opened")
		return nil
	}
}

// writerOf returns what closes when b's writer ends (closed already when
// none runs).
func writerOf(b *batchConn) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writer == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return b.writer
}

// readN reads n bytes from c, bounded by hang.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(hang))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return buf
}

// TestBatchConnCoalesces pins the batching: while the writer's socket
// write is blocked, 48 Writes wait in the buffer and then go out in one
// socket write, in order. Without the writer (each Write to the socket)
// there would be 50 socket writes.
func TestBatchConnCoalesces(t *testing.T) {
	client, server := tcpPair(t)
	g := newGated(client)
	g.gateAt = 2
	b := newBatchConn(g, 0)
	b.inlineGap = time.Hour // only the very first Write is quiet
	defer b.Close()

	var want bytes.Buffer
	write := func(i int) {
		rec := fmt.Sprintf("rec-%02d;", i)
		want.WriteString(rec)
		if n, err := b.Write([]byte(rec)); err != nil || n != len(rec) {
			t.Fatalf("Write(%d) = %d, %v", i, n, err)
		}
	}
	write(0) // quiet: written at once, from this goroutine
	if got := g.writes.Load(); got != 1 {
		t.Fatalf("after the first Write: %d socket writes, want 1 (inline)", got)
	}
	write(1) // handed to the writer, whose socket write blocks
	waitClosed(t, g.started, "the writer's socket write")
	for i := 2; i < 50; i++ {
		write(i)
	}
	close(g.gate)
	got := readN(t, server, want.Len())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %q, want %q", got, want.Bytes())
	}
	if n := g.writes.Load(); n != 3 {
		t.Errorf("%d socket writes for 50 Writes, want 3 (inline, blocked, the 48 batched)", n)
	}
}

// TestBatchConnConcurrentWrites checks that Writes from many goroutines
// arrive whole, each goroutine's in its order, and that the Writes of a
// burst share socket writes.
func TestBatchConnConcurrentWrites(t *testing.T) {
	client, server := tcpPair(t)
	g := newGated(client)
	b := newBatchConn(g, time.Minute)
	defer b.Close()

	const writers, each = 32, 200
	var total atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				rec := fmt.Sprintf("%d:%d\n", w, i)
				if _, err := b.Write([]byte(rec)); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
				total.Add(int64(len(rec)))
			}
		})
	}
	close(start)
	wg.Wait()

	_ = server.SetReadDeadline(time.Now().Add(hang))
	r := bufio.NewReader(io.LimitReader(server, total.Load()))
	next := make([]int, writers)
	for range writers * each {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read after %v: %v", next, err)
		}
		w, i, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		wi, err1 := strconv.Atoi(w)
		ii, err2 := strconv.Atoi(i)
		if !ok || err1 != nil || err2 != nil || wi < 0 || wi >= writers {
			t.Fatalf("torn record %q", line)
		}
		if ii != next[wi] {
			t.Fatalf("writer %d: record %d, want %d", wi, ii, next[wi])
		}
		next[wi]++
	}
	if n := g.writes.Load(); n >= writers*each {
		t.Errorf("%d socket writes for %d Writes: none shared", n, writers*each)
	}
	t.Logf("%d Writes in %d socket writes", writers*each, g.writes.Load())
}

// TestBatchConnWriteErrorSticks checks that a failed socket write closes
// the socket, ends the writer and fails every later Write with its error.
func TestBatchConnWriteErrorSticks(t *testing.T) {
	client, _ := tcpPair(t)
	g := newGated(client)
	g.failAt = 2
	b := newBatchConn(g, 0)
	b.inlineGap = time.Hour
	defer b.Close()

	if _, err := b.Write([]byte("one")); err != nil {
		t.Fatalf("first Write: %v", err)
	}
	if _, err := b.Write([]byte("two")); err != nil {
		t.Fatalf("second Write (buffered): %v", err)
	}
	waitClosed(t, writerOf(b), "the writer's end after the error")
	if !g.closed.Load() {
		t.Error("the socket was not closed after its write failed")
	}
	if _, err := b.Write([]byte("three")); !errors.Is(err, errInjected) {
		t.Errorf("Write after the error = %v, want %v", err, errInjected)
	}

	// A quiet Write written inline fails the same way.
	client2, _ := tcpPair(t)
	g2 := newGated(client2)
	g2.failAt = 1
	b2 := newBatchConn(g2, 0)
	defer b2.Close()
	if _, err := b2.Write([]byte("x")); !errors.Is(err, errInjected) {
		t.Errorf("inline Write = %v, want %v", err, errInjected)
	}
	if _, err := b2.Write([]byte("y")); !errors.Is(err, errInjected) {
		t.Errorf("Write after an inline error = %v, want %v", err, errInjected)
	}
	if !g2.closed.Load() {
		t.Error("the socket was not closed after an inline write failed")
	}
}

// TestBatchConnCloseFlushes checks that Close hands what was buffered to
// the socket before closing it, ends the writer, and that Write then
// fails with net.ErrClosed.
func TestBatchConnCloseFlushes(t *testing.T) {
	b, g, server := blockedWriter(t, "first;")
	b.closeWait = hang // the test's machine may be slow to run the writer
	if _, err := b.Write([]byte("second;")); err != nil {
		t.Fatal(err)
	}
	if err := whileGateOpens(t, g, b.Close); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_ = server.SetReadDeadline(time.Now().Add(hang))
	got, err := io.ReadAll(server)
	if err != nil {
		t.Fatalf("reading to EOF: %v", err)
	}
	if string(got) != "first;second;" {
		t.Errorf("read %q before EOF, want %q", got, "first;second;")
	}
	waitClosed(t, writerOf(b), "the writer's end")
	if _, err := b.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close = %v, want net.ErrClosed", err)
	}
	if err := b.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
}

// TestBatchConnRoomDeadline checks the bound on buffered bytes: a Write
// that would pass maxBatchPending waits for the writer, until the write
// deadline, and goes through once the writer took the buffer.
func TestBatchConnRoomDeadline(t *testing.T) {
	b, g, server := blockedWriter(t, "a")
	defer b.Close()
	big := bytes.Repeat([]byte("b"), maxBatchPending)
	if _, err := b.Write(big); err != nil { // an empty buffer takes any size
		t.Fatal(err)
	}
	_ = b.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := b.Write([]byte("c")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past the bound = %v, want os.ErrDeadlineExceeded", err)
	}

	_ = b.SetWriteDeadline(time.Time{})
	err := whileGateOpens(t, g, func() error {
		_, err := b.Write([]byte("c"))
		return err
	})
	if err != nil {
		t.Fatalf("Write once there is room: %v", err)
	}
	got := readN(t, server, 2+maxBatchPending)
	if got[0] != 'a' || got[len(got)-1] != 'c' || !bytes.Equal(got[1:len(got)-1], big) {
		t.Error("bytes out of order")
	}
}

// TestBatchConnWriteTimeout checks that a socket write blocked for the
// write timeout (a peer that stopped reading) fails, closes the socket
// and fails the Writes after it.
func TestBatchConnWriteTimeout(t *testing.T) {
	client, _ := tcpPair(t) // the server end is never read
	g := newGated(client)
	b := newBatchConn(g, 100*time.Millisecond)
	defer b.Close()

	chunk := make([]byte, 256<<10)
	var err error
	deadlineAt := time.Now().Add(hang)
	for i := 0; i < 4096 && err == nil && time.Now().Before(deadlineAt); i++ {
		_, err = b.Write(chunk) // no write deadline: only the socket write can time out
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || !oe.Timeout() {
		t.Fatalf("Write to a peer that does not read = %v, want the socket write's timeout", err)
	}
	waitClosed(t, writerOf(b), "the writer's end after the timeout")
	// The writer closes the socket just after it lets go of the conn.
	testutil.Poll(t, "the socket to be closed after a write timed out", g.closed.Load)
}

// TestBatchConnNoInlineWhileWriting checks that a quiet Write does not go
// to the socket while the writer's own write is in progress: its bytes
// would pass those the writer holds.
func TestBatchConnNoInlineWhileWriting(t *testing.T) {
	b, g, server := blockedWriter(t, "first;")
	defer b.Close()
	b.mu.Lock()
	b.last = time.Time{} // the next Write is quiet
	b.mu.Unlock()
	if _, err := b.Write([]byte("second;")); err != nil {
		t.Fatal(err)
	}
	if n := g.writes.Load(); n != 1 {
		t.Fatalf("%d socket writes while the writer's first is blocked, want 1", n)
	}
	close(g.gate)
	if got := readN(t, server, len("first;second;")); string(got) != "first;second;" {
		t.Errorf("read %q, want %q", got, "first;second;")
	}
}

// TestBatchConnCloseBounded checks that Close does not wait for a socket
// write that stays blocked (a peer that stopped reading) longer than
// closeFlushTimeout: nats.go closes such a conn, holding its lock, to
// reconnect.
func TestBatchConnCloseBounded(t *testing.T) {
	client, _ := tcpPair(t) // the server end is never read
	b := newBatchConn(client, time.Minute)
	b.inlineGap = time.Hour // every Write goes to the writer
	b.last = time.Now()
	chunk := make([]byte, 256<<10)
	// Fill the socket until a Write has to wait for room: the writer's
	// socket write is then blocked.
	for i := 0; i < 4096; i++ {
		_ = b.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := b.Write(chunk); errors.Is(err, os.ErrDeadlineExceeded) {
			break
		} else if err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hang): // far below the write timeout (a minute)
		t.Fatal("Close waited for the blocked socket write")
	}
	waitClosed(t, writerOf(b), "the writer's end after Close")
}

// TestBatchConnIdleHoldsNothing checks that no writer runs while nothing
// is pending, so that a conn nats.go drops without closing it (a failed
// handshake on reconnection) is collected and its socket closed by the
// runtime, as a plain TCP conn is.
func TestBatchConnIdleHoldsNothing(t *testing.T) {
	addr, accepted := listen(t)
	func() {
		client, err := net.DialTimeout("tcp", addr, hang)
		if err != nil {
			t.Fatal(err)
		}
		b := newBatchConn(client, time.Minute)
		b.last = time.Now() // the Writes go to the writer
		for range 10 {
			if _, err := b.Write([]byte("abandoned;")); err != nil {
				t.Fatal(err)
			}
		}
		waitClosed(t, writerOf(b), "the writer's end once nothing is pending")
	}() // b and client are now unreachable
	server := acceptedConn(t, accepted)
	defer server.Close()
	readN(t, server, 10*len("abandoned;"))
	buf := make([]byte, 1)
	for range 200 {
		runtime.GC()
		_ = server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := server.Read(buf)
		if errors.Is(err, io.EOF) {
			return // the runtime closed the abandoned socket
		}
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read on the abandoned conn's peer: %v", err)
		}
	}
	t.Fatal("the abandoned conn was never collected: something still holds it")
}
