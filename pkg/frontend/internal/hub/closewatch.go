package hub

import "net"

// closeWatcher reports taken-over connections that the client closed.
type closeWatcher interface {
	// add watches conn for s and returns a handle for remove (0: not
	// watched).
	add(conn net.Conn, s *hubStream) uint64
	// remove stops watching; call it before the connection closes.
	remove(id uint64)
}

// noWatcher watches nothing: a closed connection is found by the next
// write (an event or a keepalive).
type noWatcher struct{}

func (noWatcher) add(net.Conn, *hubStream) uint64 { return 0 }
func (noWatcher) remove(uint64)                   {}
