package bus

import (
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

// maxBatchPending bounds the bytes a batchConn holds that its writer has
// not taken yet. A Write that would pass it waits for the writer (nats.go
// then waits as it waits for a socket that does not drain).
const maxBatchPending = 1 << 20

// inlineGap is how long a conn must have had no Write for the next one
// to go to the socket at once, from the caller's goroutine: a lone
// request gains nothing from waiting, and under load Writes come much
// closer together than this.
const inlineGap = 100 * time.Microsecond

// closeFlushTimeout bounds how long Close waits for what was written
// before it to reach the socket. A socket write waits only when the
// kernel's send buffer is full (a peer that stopped reading, a partition
// that lasts): nats.go closes such a conn to reconnect, and must not
// wait for it long.
const closeFlushTimeout = 200 * time.Millisecond

// batchConn is the connection to a NATS server that Connect dials. Its
// Write copies the bytes into a buffer and returns; a writer goroutine of
// its own, started when bytes are pending, hands what accumulated to the
// socket in one system call.
//
// nats.go writes each publish as soon as its flusher goroutine runs, and
// the Go scheduler runs the flusher right after the goroutine that
// published. A worker answering 64 requests at once so made one write
// (and woke nats-server once) per answer. The writer yields once before
// it takes the buffer, so the goroutines already runnable (the other
// answers, the other requests of a frontend) add theirs to the same
// write. A Write that finds nothing pending after a quiet spell
// (inlineGap without a Write) goes to the socket at once from the
// caller's goroutine, as before: a lone request pays no hop.
//
// Errors and deadlines keep nats.go's meaning:
//   - a socket write that fails, or stays blocked for writeTimeout, closes
//     the socket (so nats.go's read loop fails and it reconnects) and is
//     returned by every later Write;
//   - SetWriteDeadline bounds a Write that waits for room (see
//     maxBatchPending), not the socket write;
//   - Close first hands what was written before it to the socket, waiting
//     at most closeFlushTimeout.
//
// The writer goroutine is owned by the conn: it runs while bytes are
// pending, and ends once it finds none, at the first write error, or
// at Close.
type batchConn struct {
	net.Conn
	writeTimeout time.Duration

	mu        sync.Mutex
	pending   []byte        // written, not yet taken by the writer
	err       error         // sticky: the first socket write error, or net.ErrClosed
	closing   bool          // Close was called
	room      chan struct{} // closed when the writer took pending; made by a waiting Write
	deadline  time.Time     // set by SetWriteDeadline
	last      time.Time     // when Write was last called
	busy      bool          // the writer took pending and writes it
	writer    chan struct{} // non-nil while a writer runs; closed when it ends
	spare     []byte        // the writer's buffer while none runs
	inlineGap time.Duration // see the const; tests change it
	closeWait time.Duration // closeFlushTimeout; tests change it
}

// newBatchConn wraps c. writeTimeout bounds each socket write; 0 means
// none.
func newBatchConn(c net.Conn, writeTimeout time.Duration) *batchConn {
	return &batchConn{
		Conn:         c,
		writeTimeout: writeTimeout,
		inlineGap:    inlineGap,
		closeWait:    closeFlushTimeout,
	}
}

// Write copies p for the writer. It fails with the sticky error once a
// socket write failed or the conn was closed, and with
// os.ErrDeadlineExceeded when it had to wait for room past the write
// deadline.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	for {
		if b.err != nil {
			err := b.err
			b.mu.Unlock()
			return 0, err
		}
		if b.closing {
			b.mu.Unlock()
			return 0, net.ErrClosed
		}
		if len(b.pending) == 0 || len(b.pending)+len(p) <= maxBatchPending {
			break
		}
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room, deadline := b.room, b.deadline
		b.mu.Unlock()
		if !waitUntil(room, deadline) {
			return 0, os.ErrDeadlineExceeded
		}
		b.mu.Lock()
	}
	now := time.Now()
	quiet := now.Sub(b.last) > b.inlineGap
	b.last = now
	if quiet && len(b.pending) == 0 && !b.busy {
		// Nothing to join: write at once, and save the writer's hop.
		err := b.writeSocket(p)
		b.mu.Unlock()
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if b.pending == nil {
		b.pending = make([]byte, 0, 32<<10)
	}
	b.pending = append(b.pending, p...)
	if b.writer == nil {
		b.writer = make(chan struct{})
		go b.writeLoop(b.writer) // owned by the conn: ends once pending is empty, or at an error
	}
	b.mu.Unlock()
	return len(p), nil
}

// writeSocket writes p to the socket, bounded by the write timeout. On an
// error it makes it sticky, wakes the Writes waiting for room and closes
// the socket (so nats.go's read loop fails, and it reconnects). b.mu is
// held.
func (b *batchConn) writeSocket(p []byte) error {
	err := b.socketWrite(p)
	if err != nil {
		b.failLocked(err)
		_ = b.Conn.Close()
	}
	return err
}

// socketWrite writes p to the socket, bounded by the write timeout.
func (b *batchConn) socketWrite(p []byte) error {
	if b.writeTimeout > 0 {
		_ = b.Conn.SetWriteDeadline(time.Now().Add(b.writeTimeout))
	}
	_, err := b.Conn.Write(p)
	return err
}

// failLocked makes err sticky (unless an error already is) and wakes the
// Writes waiting for room. b.mu is held.
func (b *batchConn) failLocked(err error) {
	if b.err == nil {
		b.err = err
	}
	b.wakeRoomLocked()
}

// wakeRoomLocked wakes the Writes waiting for room. b.mu is held.
func (b *batchConn) wakeRoomLocked() {
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
}

// waitUntil waits for ch to close, until deadline (none when zero). It
// reports whether ch closed.
func waitUntil(ch <-chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		<-ch
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// writeLoop hands pending to the socket until it finds it empty or a
// write fails, then closes done. At most one runs at a time (b.writer);
// none runs while nothing is pending, so a conn nats.go abandons without
// closing it (a failed handshake on reconnection) keeps no goroutine and
// is collected, its socket closed by the runtime as before.
func (b *batchConn) writeLoop(done chan struct{}) {
	defer close(done)
	// Let the goroutines that are ready to run write theirs first.
	runtime.Gosched()
	b.mu.Lock()
	out := b.spare
	b.spare = nil
	b.mu.Unlock()
	for {
		b.mu.Lock()
		if len(b.pending) == 0 || b.err != nil {
			b.writer = nil
			b.spare = out[:0]
			b.mu.Unlock()
			return
		}
		out, b.pending = b.pending, out[:0]
		b.busy = true
		b.wakeRoomLocked()
		b.mu.Unlock()
		err := b.socketWrite(out)
		b.mu.Lock()
		b.busy = false
		if err != nil {
			b.failLocked(err)
			b.writer = nil
		}
		b.mu.Unlock()
		if err != nil {
			_ = b.Conn.Close() // nats.go's read loop fails, and it reconnects
			return
		}
		if cap(out) > 256<<10 {
			out = nil // do not keep a burst's buffer
		}
	}
}

// Close hands what was written to the socket (waiting at most
// closeFlushTimeout), then closes it. Later Writes fail with net.ErrClosed.
func (b *batchConn) Close() error {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return net.ErrClosed
	}
	b.closing = true
	writer := b.writer
	b.mu.Unlock()
	if writer != nil {
		t := time.NewTimer(b.closeWait)
		select {
		case <-writer:
		case <-t.C:
		}
		t.Stop()
	}
	err := b.Conn.Close()
	if writer != nil {
		<-writer // a blocked socket write returns once the socket is closed
	}
	b.mu.Lock()
	if b.err == nil {
		b.err = net.ErrClosed
	}
	b.mu.Unlock()
	return err
}

// Read reads from the socket. Once a socket write failed (which closed
// the socket), it returns that error, so nats.go reports the cause of the
// loss (a write timeout, a reset) rather than a closed connection.
func (b *batchConn) Read(p []byte) (int, error) {
	n, err := b.Conn.Read(p)
	if err != nil {
		b.mu.Lock()
		if b.err != nil && !b.closing {
			err = b.err
		}
		b.mu.Unlock()
	}
	return n, err
}

// SetWriteDeadline bounds a Write that waits for room. Socket writes are
// bounded by the conn's write timeout instead.
func (b *batchConn) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	b.deadline = t
	b.mu.Unlock()
	return nil
}

// SetDeadline sets the socket's read deadline and the Write deadline of
// SetWriteDeadline.
func (b *batchConn) SetDeadline(t time.Time) error {
	_ = b.SetWriteDeadline(t)
	return b.Conn.SetReadDeadline(t)
}

// batchDialer is the nats.CustomDialer of Connect: it dials TCP and wraps
// the connection in a batchConn.
type batchDialer struct {
	dialer       net.Dialer
	writeTimeout time.Duration
}

// Dial dials address and wraps the connection.
func (d *batchDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.dialer.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return newBatchConn(c, d.writeTimeout), nil
}
