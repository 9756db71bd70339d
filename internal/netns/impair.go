//go:build linux

package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpfleet/mcpfleet/internal/testenv"
)

// Impairment is what Netem does to a host's traffic: each packet (each
// direction) is dropped with probability Loss, and the others are
// delivered Delay late.
type Impairment struct {
	Loss  float64 // 0 to 1
	Delay time.Duration
}

// ParseNetem parses a netem-style spec: "loss 30%", "delay 100ms" or both
// ("loss 30% delay 100ms"); anything else is an error (no jitter, no
// correlation, no reordering).
func ParseNetem(spec string) (Impairment, error) {
	var im Impairment
	f := strings.Fields(spec)
	if len(f) == 0 || len(f)%2 != 0 {
		return im, fmt.Errorf("netem spec %q: want \"loss P%%\" and/or \"delay D\"", spec)
	}
	for i := 0; i < len(f); i += 2 {
		switch f[i] {
		case "loss":
			p, err := strconv.ParseFloat(strings.TrimSuffix(f[i+1], "%"), 64)
			if err != nil || !strings.HasSuffix(f[i+1], "%") || p < 0 || p > 100 {
				return im, fmt.Errorf("netem spec %q: loss %q: want a percentage from 0%% to 100%%", spec, f[i+1])
			}
			im.Loss = p / 100
		case "delay":
			d, err := time.ParseDuration(f[i+1])
			if err != nil || d < 0 || d > time.Minute {
				return im, fmt.Errorf("netem spec %q: delay %q: want a duration from 0 to 1m", spec, f[i+1])
			}
			im.Delay = d
		default:
			return im, fmt.Errorf("netem spec %q: %q is not supported (loss and delay only)", spec, f[i])
		}
	}
	return im, nil
}

// NetemStats counts what an impairment did.
type NetemStats struct {
	Packets, Dropped int64
}

// Netem impairs the host's traffic as spec says (see ParseNetem): its
// traffic with each of peers, both directions, or with every other host
// when no peer is given (not its loopback). One impairment per host at a
// time; ClearNetem ends it (and cleanup does).
func (tp *Topology) Netem(h *Host, spec string, peers ...*Host) {
	tp.tb.Helper()
	im, err := ParseNetem(spec)
	if err != nil {
		tp.tb.Fatalf("netns: %v", err)
	}
	h.mu.Lock()
	busy := h.impair != nil
	h.mu.Unlock()
	if busy {
		tp.tb.Fatalf("netns: host %s is impaired already (ClearNetem first)", h.Name)
	}
	ipt := testenv.FindBinary(tp.tb, "iptables", "apt-get install iptables")
	q, err := openQueue(h.NS, 0)
	if err != nil {
		tp.tb.Fatalf("netns: host %s: %v", h.Name, err)
	}
	a := &impairment{q: q, im: im, ipt: ipt, ns: h.NS, ip: tp.ip, due: make(chan pending, 1<<16), stop: make(chan struct{}), done: make(chan struct{})}
	a.wg.Add(2)
	go a.read()    // ends at stop
	go a.deliver() // ends at stop, once what is due was delivered
	h.mu.Lock()
	h.impair = a
	h.mu.Unlock()
	// The packets go to the queue only once it is read (without a reader
	// NFQUEUE drops them).
	var rules [][]string
	if len(peers) == 0 {
		rules = append(rules, []string{"-A", "OUTPUT", "-o", "eth0"}, []string{"-A", "INPUT", "-i", "eth0"})
	}
	for _, p := range peers {
		rules = append(rules, []string{"-A", "OUTPUT", "-d", p.Addr + "/32"}, []string{"-A", "INPUT", "-s", p.Addr + "/32"})
	}
	for _, r := range rules {
		args := append(append([]string{"-w"}, r...), "-j", "NFQUEUE", "--queue-num", "0")
		if out, err := a.iptables(args...); err != nil {
			tp.tb.Fatalf("netns: host %s: iptables %s: %v\n%s", h.Name, strings.Join(args, " "), err, out)
		}
	}
}

// ClearNetem ends the host's impairment (its rules go first, then what is
// still queued is delivered) and returns what it did. A host without an
// impairment returns zeros.
func (tp *Topology) ClearNetem(h *Host) NetemStats {
	tp.tb.Helper()
	st, err := h.stopImpairment(true)
	if err != nil {
		tp.tb.Fatalf("netns: host %s: %v", h.Name, err)
	}
	return st
}

// stopImpairment ends the host's impairment, if any.
func (h *Host) stopImpairment(check bool) (NetemStats, error) {
	h.mu.Lock()
	a := h.impair
	h.impair = nil
	h.mu.Unlock()
	if a == nil {
		return NetemStats{}, nil
	}
	var errs []error
	for _, chain := range []string{"OUTPUT", "INPUT"} {
		if out, err := a.iptables("-w", "-F", chain); err != nil {
			errs = append(errs, fmt.Errorf("iptables -F %s: %v: %s", chain, err, strings.TrimSpace(out)))
		}
	}
	close(a.stop)
	a.wg.Wait()
	a.q.close()
	st := NetemStats{Packets: a.packets.Load(), Dropped: a.dropped.Load()}
	if err := a.failure(); err != nil && check {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// impairment is one host's running impairment: a reader that takes the
// queued packets and drops some, and a deliverer that accepts the others
// when they are due.
type impairment struct {
	q      *queue
	im     Impairment
	ipt    string
	ns, ip string
	due    chan pending
	stop   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	packets, dropped atomic.Int64
	mu               sync.Mutex
	err              error
}

type pending struct {
	id  uint32
	due time.Time
}

func (a *impairment) iptables(args ...string) (string, error) {
	out, err := exec.Command(a.ip, append([]string{"netns", "exec", a.ns, a.ipt}, args...)...).CombinedOutput()
	return string(out), err
}

func (a *impairment) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

func (a *impairment) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// read takes packets off the queue until stop: each is dropped with
// probability Loss, or handed to deliver with the time it is due. After
// stop it accepts what is still queued.
func (a *impairment) read() {
	defer a.wg.Done()
	defer close(a.done)
	draining := false
	for {
		if !draining {
			select {
			case <-a.stop:
				// The rules are gone: what the kernel still queues is
				// accepted at once, until a receive times out empty.
				draining = true
			default:
			}
		}
		ids, err := a.q.receive()
		if err != nil {
			a.fail(err)
			return
		}
		if draining && len(ids) == 0 {
			return
		}
		now := time.Now()
		for _, id := range ids {
			a.packets.Add(1)
			if draining {
				if err := a.q.verdict(id, verdictAccept); err != nil {
					a.fail(err)
				}
				continue
			}
			if a.im.Loss > 0 && rand.Float64() < a.im.Loss {
				a.dropped.Add(1)
				if err := a.q.verdict(id, verdictDrop); err != nil {
					a.fail(err)
				}
				continue
			}
			select {
			case a.due <- pending{id: id, due: now.Add(a.im.Delay)}:
			default: // too many in flight: deliver this one now
				if err := a.q.verdict(id, verdictAccept); err != nil {
					a.fail(err)
				}
			}
		}
	}
}

// deliver accepts each packet when it is due (they are due in the order
// they came: the delay is constant). After stop, what is left is accepted
// at once.
func (a *impairment) deliver() {
	defer a.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	stopping := false
	for {
		var p pending
		select {
		case p = <-a.due:
		case <-a.done: // the reader stopped: nothing more comes
			stopping = true
			select {
			case p = <-a.due:
			default:
				return
			}
		}
		if wait := time.Until(p.due); wait > 0 && !stopping {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-a.done:
				stopping = true
			}
		}
		if err := a.q.verdict(p.id, verdictAccept); err != nil {
			a.fail(err)
		}
	}
}

// The nfnetlink_queue protocol (linux/netfilter/nfnetlink_queue.h): a
// netlink socket bound to a queue gets each queued packet's id and gives
// it a verdict.
const (
	nfnlSubsysQueue    = 3
	nfqnlMsgPacket     = 0
	nfqnlMsgVerdict    = 1
	nfqnlMsgConfig     = 2
	nfqaCfgCmd         = 1
	nfqaCfgParams      = 2
	nfqaCfgQueueMaxlen = 3
	nfqaPacketHdr      = 1
	nfqaVerdictHdr     = 2
	nfqnlCfgCmdBind    = 1
	nfqnlCopyMeta      = 1
	verdictDrop        = 0
	verdictAccept      = 1
	nlaTypeMask        = 0x3fff
)

// queue is a netlink socket bound to one NFQUEUE queue of a namespace.
type queue struct {
	fd  int
	num uint16
	buf []byte
	mu  sync.Mutex // serializes sends
	seq uint32
}

// openQueue opens a netfilter netlink socket inside namespace ns (a
// socket stays in the namespace it was made in) and binds it to queue
// num, metadata only (the packet's id is all a verdict needs).
func openQueue(ns string, num uint16) (*queue, error) {
	fd, err := socketIn(ns)
	if err != nil {
		return nil, err
	}
	q := &queue{fd: fd, num: num, buf: make([]byte, 1<<16)}
	ok := false
	defer func() {
		if !ok {
			q.close()
		}
	}()
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("nfqueue: bind: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	// A receive timeout lets the reader see stop.
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("nfqueue: SO_RCVTIMEO: %w", err)
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	binary.BigEndian.PutUint16(cmd[2:], unix.AF_INET)
	if err := q.request(nfqnlMsgConfig, attr(nfqaCfgCmd, cmd)); err != nil {
		return nil, fmt.Errorf("nfqueue: binding queue %d: %w", num, err)
	}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta
	maxlen := binary.BigEndian.AppendUint32(nil, 1<<16)
	if err := q.request(nfqnlMsgConfig, append(attr(nfqaCfgParams, params), attr(nfqaCfgQueueMaxlen, maxlen)...)); err != nil {
		return nil, fmt.Errorf("nfqueue: configuring queue %d: %w", num, err)
	}
	ok = true
	return q, nil
}

// socketIn makes a NETLINK_NETFILTER socket inside namespace ns: on a
// thread of its own that enters ns for the call and comes back (a thread
// that cannot come back is never reused: it ends with its goroutine).
func socketIn(ns string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("nfqueue: %w", err)}
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("nfqueue: namespace %s: %w", ns, err)}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("nfqueue: entering %s: %w", ns, err)}
			return
		}
		fd, serr := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		} // else: the thread stays locked and ends with this goroutine
		if serr != nil {
			ch <- result{-1, fmt.Errorf("nfqueue: socket in %s: %w", ns, serr)}
			return
		}
		ch <- result{fd, nil}
	}()
	r := <-ch
	return r.fd, r.err
}

func (q *queue) close() { _ = unix.Close(q.fd) }

// attr encodes one netlink attribute (padded to 4 bytes).
func attr(typ uint16, data []byte) []byte {
	n := 4 + len(data)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b, uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], data)
	return b
}

// message encodes a nfnetlink message of the queue subsystem.
func (q *queue) message(msg uint16, flags uint16, attrs []byte) []byte {
	q.seq++
	b := make([]byte, 16+4, 16+4+len(attrs))
	b = append(b, attrs...)
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msg)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], q.seq)
	b[16] = unix.AF_UNSPEC
	b[17] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], q.num)
	return b
}

// request sends a configuration message and waits for its ack.
func (q *queue) request(msg uint16, attrs []byte) error {
	q.mu.Lock()
	b := q.message(msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs)
	seq := q.seq
	q.mu.Unlock()
	if err := unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for range 10 {
		n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
		if err != nil {
			return err
		}
		for m := q.buf[:n]; len(m) >= 16; {
			l := int(binary.NativeEndian.Uint32(m))
			if l < 16 || l > len(m) {
				return errors.New("nfqueue: truncated netlink message")
			}
			typ := binary.NativeEndian.Uint16(m[4:])
			if typ == unix.NLMSG_ERROR && binary.NativeEndian.Uint32(m[8:]) == seq && l >= 20 {
				if e := int32(binary.NativeEndian.Uint32(m[16:])); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			m = m[(l+3)&^3:]
		}
	}
	return errors.New("nfqueue: no ack")
}

// receive waits (up to the socket's receive timeout) for queued packets
// and returns their ids; none after a timeout.
func (q *queue) receive() ([]uint32, error) {
	n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
	switch {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOBUFS):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("nfqueue: receive: %w", err)
	}
	var ids []uint32
	for m := q.buf[:n]; len(m) >= 16; {
		l := int(binary.NativeEndian.Uint32(m))
		if l < 16 || l > len(m) {
			return ids, errors.New("nfqueue: truncated netlink message")
		}
		if binary.NativeEndian.Uint16(m[4:]) == nfnlSubsysQueue<<8|nfqnlMsgPacket && l >= 20 {
			for a := m[20:l]; len(a) >= 4; {
				al := int(binary.NativeEndian.Uint16(a))
				if al < 4 || al > len(a) {
					break
				}
				if binary.NativeEndian.Uint16(a[2:])&nlaTypeMask == nfqaPacketHdr && al >= 8 {
					ids = append(ids, binary.BigEndian.Uint32(a[4:]))
				}
				a = a[min((al+3)&^3, len(a)):]
			}
		}
		m = m[min((l+3)&^3, len(m)):]
	}
	return ids, nil
}

// verdict gives packet id its verdict.
func (q *queue) verdict(id uint32, v uint32) error {
	hdr := binary.BigEndian.AppendUint32(nil, v)
	hdr = binary.BigEndian.AppendUint32(hdr, id)
	q.mu.Lock()
	b := q.message(nfqnlMsgVerdict, unix.NLM_F_REQUEST, attr(nfqaVerdictHdr, hdr))
	q.mu.Unlock()
	if err := unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfqueue: verdict: %w", err)
	}
	return nil
}
