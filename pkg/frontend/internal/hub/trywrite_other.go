//go:build !unix

package hub

import (
	"errors"
	"net"
	"os"
	"time"
)

// tryWrite writes what the socket takes within a few milliseconds: n is
// how much of b went out.
func tryWrite(c net.Conn, b []byte) (int, error) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Millisecond))
	n, err := c.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	return n, err
}
