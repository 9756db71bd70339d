package bus

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// LocalMaxPayload is Local's largest message: that of the embedded NATS
// server (StartEmbedded), so the all-in-one refuses the same results
// whichever bus it runs on.
const LocalMaxPayload = 8 << 20

// Local is a Conn with no server: the bus of one process (the all-in-one
// that no other process can join). Every connection of the process is the
// same Local. It keeps the Conn contract:
//
//   - a message is copied when published and delivered to each matching
//     subscription (one member of each queue group, chosen at random), in
//     order per publisher, on the subscription's own goroutine (one per
//     handler subscription, like nats.go) or into its channel;
//   - a subscription's pending messages are bounded like nats.go's
//     (DefaultSubPendingMsgsLimit messages, DefaultSubPendingBytesLimit
//     bytes, or its SetPendingLimits): past them a message is dropped and a
//     warning logged once per episode (nats.go's slow consumer). Nothing
//     ever blocks a publisher: the frames that need delivery (legacy
//     frames) are acknowledged and sent again or elsewhere on a timeout,
//     as with NATS;
//   - a message to a reply subject nothing listens on is answered with a
//     "503" Status header, a request with nats.ErrNoResponders;
//   - a message over LocalMaxPayload fails with nats.ErrMaxPayload.
//
// The zero value is not usable: call NewLocal.
type Local struct {
	log   *slog.Logger
	inbox string // the reply subjects' prefix, "_INBOX.<nuid>."
	next  atomic.Uint64
	done  chan struct{} // closed by Close

	mu      sync.RWMutex
	closed  bool
	exact   map[string][]*localSub // by subject, those without wildcards
	wild    []*localSub            // those with wildcards
	replies map[string]chan *nats.Msg
}

// NewLocal returns an open Local; log (nil: slog.Default()) receives the
// slow consumer warnings.
func NewLocal(log *slog.Logger) *Local {
	if log == nil {
		log = slog.Default()
	}
	return &Local{log: log, inbox: nats.InboxPrefix + nuid.Next() + ".", done: make(chan struct{}),
		exact: map[string][]*localSub{}, replies: map[string]chan *nats.Msg{}}
}

// Publish implements Conn.
func (l *Local) Publish(subject string, data []byte) error {
	_, err := l.publish(subject, "", nil, data)
	return err
}

// PublishMsg implements Conn.
func (l *Local) PublishMsg(m *nats.Msg) error {
	_, err := l.publish(m.Subject, m.Reply, m.Header, m.Data)
	return err
}

// RequestWithContext implements Conn.
func (l *Local) RequestWithContext(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	return l.request(ctx, subject, nil, data)
}

// RequestMsgWithContext implements Conn.
func (l *Local) RequestMsgWithContext(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	return l.request(ctx, m.Subject, m.Header, m.Data)
}

func (l *Local) request(ctx context.Context, subject string, hdr nats.Header, data []byte) (*nats.Msg, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inbox := l.inbox + strconv.FormatUint(l.next.Add(1), 36)
	ch := make(chan *nats.Msg, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, nats.ErrConnectionClosed
	}
	l.replies[inbox] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.replies, inbox)
		l.mu.Unlock()
	}()
	n, err := l.publish(subject, inbox, hdr, data)
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, nats.ErrNoResponders
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, nats.ErrConnectionClosed
	}
}

// publish delivers a message to every matching subscription (one member
// of each queue group) and pending request, and returns how many got it.
// With a reply subject and no taker, the reply subject gets the no
// responders status.
func (l *Local) publish(subject, reply string, hdr nats.Header, data []byte) (int, error) {
	switch {
	case subject == "":
		return 0, nats.ErrBadSubject
	case len(data) > LocalMaxPayload:
		return 0, nats.ErrMaxPayload
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return 0, nats.ErrConnectionClosed
	}
	n := 0
	if ch, ok := l.replies[subject]; ok {
		select {
		case ch <- newMsg(subject, reply, hdr, data):
		default: // answered already: later answers are dropped
		}
		n++
	}
	var queued [8]*localSub
	var room [4]inlineCall // the inline calls, on the stack while few
	qs, calls := queued[:0], room[:0]
	for _, s := range l.exact[subject] {
		if s.queue != "" {
			qs = append(qs, s)
			continue
		}
		calls = give(calls, s, newMsg(subject, reply, hdr, data))
		n++
	}
	for _, s := range l.wild {
		if !matchSubject(s.tokens, subject) {
			continue
		}
		if s.queue != "" {
			qs = append(qs, s)
			continue
		}
		calls = give(calls, s, newMsg(subject, reply, hdr, data))
		n++
	}
	calls, groups := deliverQueues(calls, qs, func() *nats.Msg { return newMsg(subject, reply, hdr, data) })
	n += groups
	l.mu.RUnlock()
	// The inline handlers run once the index is unlocked: they may
	// publish, subscribe and unsubscribe.
	for _, c := range calls {
		c.s.call(c.m)
	}
	if n == 0 && reply != "" {
		_, _ = l.publish(reply, "", nats.Header{"Status": []string{"503"}}, nil)
	}
	return n, nil
}

// inlineCall is an inline subscription's handler to run on a message,
// reserved (localSub.reserve) while the index was locked.
type inlineCall struct {
	s *localSub
	m *nats.Msg
}

// give delivers m to s: queued for its goroutine or sent to its channel
// now, or, for an inline subscription, reserved and added to calls for
// the publisher to run once the index is unlocked. The index is locked.
func give(calls []inlineCall, s *localSub, m *nats.Msg) []inlineCall {
	if !s.inline {
		s.deliver(m)
		return calls
	}
	if s.reserve() {
		calls = append(calls, inlineCall{s, m})
	}
	return calls
}

// deliverQueues gives one message to one member, chosen at random, of
// each queue group among qs (see give), and returns calls and the number
// of groups.
func deliverQueues(calls []inlineCall, qs []*localSub, msg func() *nats.Msg) ([]inlineCall, int) {
	groups := 0
	for i, s := range qs {
		if s == nil {
			continue
		}
		members := 0
		for _, t := range qs[i:] {
			if t != nil && t.queue == s.queue {
				members++
			}
		}
		pick := rand.IntN(members)
		for j, t := range qs[i:] {
			if t == nil || t.queue != s.queue {
				continue
			}
			if pick == 0 {
				calls = give(calls, t, msg())
			}
			pick--
			qs[i+j] = nil
		}
		groups++
	}
	return calls, groups
}

// newMsg is a delivered message: its own copy of the data and header, so
// neither the publisher nor another subscriber sees a change.
func newMsg(subject, reply string, hdr nats.Header, data []byte) *nats.Msg {
	var m *nats.Msg
	n := len(data)
	switch {
	case data == nil:
		m = &nats.Msg{}
	case n <= len(msg208{}.data):
		b := &msg208{}
		m, b.m.Data = &b.m, append(b.data[:0:n], data...)
	case n <= len(msg288{}.data):
		b := &msg288{}
		m, b.m.Data = &b.m, append(b.data[:0:n], data...)
	case n <= len(msg384{}.data):
		b := &msg384{}
		m, b.m.Data = &b.m, append(b.data[:0:n], data...)
	case n <= len(msg512{}.data):
		b := &msg512{}
		m, b.m.Data = &b.m, append(b.data[:0:n], data...)
	default:
		m = &nats.Msg{Data: append(make([]byte, 0, n), data...)}
	}
	m.Subject, m.Reply = subject, reply
	if hdr != nil {
		m.Header = make(nats.Header, len(hdr))
		for k, v := range hdr {
			m.Header[k] = append([]string(nil), v...)
		}
	}
	return m
}

// msg208 to msg512 hold a delivered message and its data in one
// allocation, of that size class (a nats.Msg is 104 bytes): most messages
// of a request are small. Data's capacity ends at its length, so an
// append to it copies.
type (
	msg208 struct {
		m    nats.Msg
		data [208 - 104]byte
	}
	msg288 struct {
		m    nats.Msg
		data [288 - 104]byte
	}
	msg384 struct {
		m    nats.Msg
		data [384 - 104]byte
	}
	msg512 struct {
		m    nats.Msg
		data [512 - 104]byte
	}
)

// matchSubject reports whether subject matches the tokens of a
// subscription's subject ('*' one token, a last '>' one or more).
func matchSubject(tokens []string, subject string) bool {
	rest := subject
	for i, t := range tokens {
		if t == ">" {
			return rest != ""
		}
		tok, after, more := strings.Cut(rest, ".")
		if tok == "" || (t != "*" && t != tok) {
			return false
		}
		if !more {
			return i == len(tokens)-1
		}
		rest = after
	}
	return false // subject has more tokens
}

// Subscribe implements Conn.
func (l *Local) Subscribe(subject string, h nats.MsgHandler) (Subscription, error) {
	return l.subscribe(subject, "", h, nil, false)
}

// QueueSubscribe implements Conn.
func (l *Local) QueueSubscribe(subject, queue string, h nats.MsgHandler) (Subscription, error) {
	return l.subscribe(subject, queue, h, nil, false)
}

// subscribeInline implements SubscribeInline: h runs on the publisher's
// goroutine.
func (l *Local) subscribeInline(subject, queue string, h nats.MsgHandler) (Subscription, error) {
	return l.subscribe(subject, queue, h, nil, true)
}

// ChanSubscribe implements Conn.
func (l *Local) ChanSubscribe(subject string, ch chan *nats.Msg) (Subscription, error) {
	if ch == nil {
		return nil, nats.ErrBadSubscription
	}
	return l.subscribe(subject, "", nil, ch, false)
}

func (l *Local) subscribe(subject, queue string, h nats.MsgHandler, ch chan *nats.Msg, inline bool) (Subscription, error) {
	if strings.ContainsAny(queue, " \t\r\n") { // "": no group, as with nats.go
		return nil, nats.ErrBadQueueName
	}
	tokens, wild, ok := parsePattern(subject)
	if !ok {
		return nil, nats.ErrBadSubject
	}
	if h == nil && ch == nil {
		return nil, nats.ErrBadSubscription
	}
	s := newLocalSub(l, subject, queue, h, ch)
	s.inline = inline
	if wild {
		s.tokens = tokens
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nats.ErrConnectionClosed
	}
	if wild {
		l.wild = append(l.wild, s)
	} else {
		l.exact[subject] = append(l.exact[subject], s)
	}
	if h != nil && !inline {
		go s.run() // owned by s: returns once s is closed, or drained and empty
	}
	return s, nil
}

// parsePattern splits a subscription's subject into its tokens: none
// empty, '>' last only; wild reports a wildcard.
func parsePattern(subject string) (tokens []string, wild, ok bool) {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return nil, false, false
	}
	tokens = strings.Split(subject, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return nil, false, false
		case t == ">" && i != len(tokens)-1:
			return nil, false, false
		case t == "*" || t == ">":
			wild = true
		}
	}
	return tokens, wild, true
}

// remove takes s out of the index: it gets no more messages.
func (l *Local) remove(s *localSub) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.tokens != nil {
		l.wild = without(l.wild, s)
		return
	}
	if subs := without(l.exact[s.subject], s); len(subs) > 0 {
		l.exact[s.subject] = subs
	} else {
		delete(l.exact, s.subject)
	}
}

// without returns subs without s, in a new slice (publishers may be
// reading the old one).
func without(subs []*localSub, s *localSub) []*localSub {
	out := make([]*localSub, 0, len(subs))
	for _, t := range subs {
		if t != s {
			out = append(out, t)
		}
	}
	return out
}

// FlushTimeout implements Conn: a subscription is in effect, and a
// message delivered, once the call returns, so there is nothing to wait
// for; it fails once the Local is closed.
func (l *Local) FlushTimeout(time.Duration) error { return l.flush() }

// FlushWithContext implements Conn, as FlushTimeout.
func (l *Local) FlushWithContext(context.Context) error { return l.flush() }

func (l *Local) flush() error {
	if !l.IsConnected() {
		return nats.ErrConnectionClosed
	}
	return nil
}

// IsConnected implements Conn: true until Close.
func (l *Local) IsConnected() bool {
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// MaxPayload implements Conn: LocalMaxPayload.
func (l *Local) MaxPayload() int64 { return LocalMaxPayload }

// ConnectedAddr implements Conn: "" (no server).
func (l *Local) ConnectedAddr() string { return "" }

// NATSConn implements Conn: nil.
func (l *Local) NATSConn() *nats.Conn { return nil }

// Close implements Conn: every subscription ends at once (messages not
// yet delivered are lost) and pending requests fail with
// nats.ErrConnectionClosed.
func (l *Local) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.done)
	var subs []*localSub
	for _, ss := range l.exact {
		subs = append(subs, ss...)
	}
	subs = append(subs, l.wild...)
	l.exact, l.wild = map[string][]*localSub{}, nil
	l.mu.Unlock()
	for _, s := range subs {
		s.stop(false)
	}
}
