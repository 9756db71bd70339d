//go:build unix

package hub

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// tryWrite writes what the socket takes now without waiting for room:
// n is how much of b went out. A socket without a file descriptor (TLS)
// waits for room at most tryWriteWait.
func tryWrite(c net.Conn, b []byte) (n int, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return deadlineWrite(c, b)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := syscall.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return true // full: the caller comes back later
			case e != nil:
				werr = e
				return true
			case m <= 0:
				werr = errors.New("frontend: write made no progress")
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}

// tryWriteWait bounds a write on a socket tryWrite cannot reach directly.
const tryWriteWait = 5 * time.Millisecond

func deadlineWrite(c net.Conn, b []byte) (int, error) {
	_ = c.SetWriteDeadline(time.Now().Add(tryWriteWait))
	n, err := c.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	return n, err
}
