package hub

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// epollWatcher reports, from one goroutine, the taken-over connections the
// client closed (EPOLLRDHUP, EPOLLHUP, EPOLLERR on an epoll set of its own,
// beside the runtime's).
type epollWatcher struct {
	epfd int
	gone func(*hubStream)
	mu   sync.Mutex
	gen  uint32
	byID map[uint64]watched
}

type watched struct {
	s  *hubStream
	fd int
}

// userTimeout is TCP_USER_TIMEOUT (linux/tcp.h), set on taken-over
// sockets: data the peer leaves unacknowledged that long (a peer gone
// without FIN or RST, behind a dead link) aborts the connection, so the
// next keepalive write fails and the slot is freed.
const (
	tcpUserTimeout = 0x12
	userTimeout    = 30 * time.Second
)

// startCloseWatcher starts the epoll watcher (owned by the caller's wg,
// ending at quit); with off (tests of the keepalive path) it only sets
// TCP_USER_TIMEOUT.
func startCloseWatcher(log *slog.Logger, off bool, gone func(*hubStream), wg *sync.WaitGroup, quit <-chan struct{}) closeWatcher {
	if off {
		return userTimeoutOnly{}
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		log.Warn("frontend: no epoll close watcher; closed listen streams are found by their next write", "err", err)
		return noWatcher{}
	}
	w := &epollWatcher{epfd: epfd, gone: gone, byID: map[uint64]watched{}}
	wg.Add(1)
	go w.loop(wg, quit) // owned by the hub: ends at quit
	return w
}

const epollEvents = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR

func (w *epollWatcher) add(conn net.Conn, s *hubStream) uint64 {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	var id uint64
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(userTimeout.Milliseconds()))
		id = uint64(w.gen)<<32 | uint64(uint32(fd))
		ev := syscall.EpollEvent{Events: epollEvents, Fd: int32(fd), Pad: int32(w.gen)}
		if syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) != nil {
			id = 0
			return
		}
		w.byID[id] = watched{s: s, fd: int(fd)}
	})
	return id
}

// remove stops watching; call it before the connection closes.
func (w *epollWatcher) remove(id uint64) {
	if id == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.byID[id]; ok {
		delete(w.byID, id)
		_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, e.fd, nil)
	}
}

func (w *epollWatcher) loop(wg *sync.WaitGroup, quit <-chan struct{}) {
	defer wg.Done()
	defer syscall.Close(w.epfd)
	events := make([]syscall.EpollEvent, 128)
	for {
		select {
		case <-quit:
			return
		default:
		}
		// A bounded wait, so quit is seen within 250 ms.
		n, err := syscall.EpollWait(w.epfd, events, 250)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Pad))<<32 | uint64(uint32(ev.Fd))
			w.mu.Lock()
			e, ok := w.byID[id]
			if ok {
				delete(w.byID, id)
				_ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, e.fd, nil)
			}
			w.mu.Unlock()
			if ok {
				w.gone(e.s)
			}
		}
	}
}

// userTimeoutOnly sets TCP_USER_TIMEOUT and watches nothing.
type userTimeoutOnly struct{}

func (userTimeoutOnly) add(conn net.Conn, _ *hubStream) uint64 {
	if sc, ok := conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(userTimeout.Milliseconds()))
			})
		}
	}
	return 0
}

func (userTimeoutOnly) remove(uint64) {}
