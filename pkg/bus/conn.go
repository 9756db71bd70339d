package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Conn is the bus seam: the operations frontends, workers and their
// helpers perform on the message bus. Two implementations exist: NATS (a
// nats.go connection, for every deployment other processes may join) and
// Local (one process, no server: the all-in-one without --nats-listen).
// Both pass one test suite (suite_test.go) and keep NATS's contract:
//
//   - subjects are dot-separated tokens; a subscription's subject may hold
//     the wildcards '*' (one token) and '>' (one or more trailing tokens);
//   - every subscription matching a published subject gets the message,
//     but the members of one queue group share it: one member each;
//   - one subscription receives the messages of one publisher in the order
//     they were published, each delivered asynchronously, one at a time,
//     on the subscription's own goroutine (or into its channel);
//   - a message published with a reply subject to which nothing listens
//     is answered at once on that reply subject with a message whose
//     "Status" header is "503" (no responders, see ParseFrame), and a
//     request to which nothing listens fails with nats.ErrNoResponders;
//   - a subscription whose pending messages exceed its limits (see
//     Subscription.SetPendingLimits) loses the new ones (a slow consumer:
//     logged, never blocking the publisher).
//
// Messages are *nats.Msg values (a plain struct). A message received from
// a Conn is not bound to a nats.go subscription: answer it with Respond,
// never with nats.Msg.Respond. Data and Header published are the
// caller's again once Publish returns.
type Conn interface {
	// Publish sends data to subject.
	Publish(subject string, data []byte) error
	// PublishMsg sends m (its Subject, Reply, Header and Data).
	PublishMsg(m *nats.Msg) error
	// RequestWithContext sends data to subject with a fresh reply subject
	// and returns the first answer, or ctx's error, or
	// nats.ErrNoResponders when nothing listens on subject.
	RequestWithContext(ctx context.Context, subject string, data []byte) (*nats.Msg, error)
	// RequestMsgWithContext is RequestWithContext for a whole message
	// (its Reply is replaced).
	RequestMsgWithContext(ctx context.Context, m *nats.Msg) (*nats.Msg, error)
	// Subscribe delivers the messages on subject to h.
	Subscribe(subject string, h nats.MsgHandler) (Subscription, error)
	// QueueSubscribe is Subscribe as a member of queue group queue.
	QueueSubscribe(subject, queue string, h nats.MsgHandler) (Subscription, error)
	// ChanSubscribe sends the messages on subject to ch; when ch is full a
	// message is lost (a slow consumer).
	ChanSubscribe(subject string, ch chan *nats.Msg) (Subscription, error)
	// FlushTimeout returns once every subscription and message sent before
	// it is in effect at the server, or fails after timeout.
	FlushTimeout(timeout time.Duration) error
	// FlushWithContext is FlushTimeout bounded by ctx.
	FlushWithContext(ctx context.Context) error
	// IsConnected reports whether the bus is reachable now.
	IsConnected() bool
	// MaxPayload is the largest message the bus carries, in bytes (0: no
	// known limit).
	MaxPayload() int64
	// ConnectedAddr is the server's host:port ("" when there is none).
	ConnectedAddr() string
	// NATSConn returns the nats.go connection behind a NATS Conn, nil
	// for any other: its statistics and status changes exist only there.
	NATSConn() *nats.Conn
	// Close closes the connection: its subscriptions end, later calls
	// fail. It is idempotent.
	Close()
}

// LocalSystem is the messaging.system attribute of the spans of a
// message carried by the in-process bus (Local); a NATS Conn's is "nats".
const LocalSystem = "mcpfleet_local"

// SystemOf names c's messaging system as spans record it
// (messaging.system): "nats" for a NATS Conn, LocalSystem for any other.
func SystemOf(c Conn) string {
	if c.NATSConn() != nil {
		return "nats"
	}
	return LocalSystem
}

// Subscription is one subscription of a Conn.
type Subscription interface {
	// Unsubscribe ends the subscription at once: messages not yet
	// delivered are lost.
	Unsubscribe() error
	// Drain ends the interest at once and closes the subscription once
	// the messages it received are delivered; it returns without waiting.
	Drain() error
	// DrainWait is Drain, then waits until the subscription is closed or
	// ctx ends (ctx.Err()).
	DrainWait(ctx context.Context) error
	// SetPendingLimits bounds the messages received and not yet delivered
	// (msgs messages, bytes bytes; -1: no bound on that count).
	SetPendingLimits(msgs, bytes int) error
}

// Respond answers m on its reply subject through nc (a message received
// from a Conn is not bound to a nats.go subscription: nats.Msg.Respond
// would fail). It returns nats.ErrMsgNoReply when m has none.
func Respond(nc Conn, m *nats.Msg, data []byte) error {
	if m.Reply == "" {
		return nats.ErrMsgNoReply
	}
	return nc.Publish(m.Reply, data)
}

// NATS returns the Conn of a nats.go connection: every call is nc's own,
// behaviour unchanged. Closing the Conn closes nc.
func NATS(nc *nats.Conn) Conn { return natsConn{nc} }

type natsConn struct{ nc *nats.Conn }

func (c natsConn) Publish(subject string, data []byte) error { return c.nc.Publish(subject, data) }
func (c natsConn) PublishMsg(m *nats.Msg) error              { return c.nc.PublishMsg(m) }
func (c natsConn) RequestWithContext(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	return c.nc.RequestWithContext(ctx, subject, data)
}

func (c natsConn) RequestMsgWithContext(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	return c.nc.RequestMsgWithContext(ctx, m)
}

func (c natsConn) Subscribe(subject string, h nats.MsgHandler) (Subscription, error) {
	return natsSub(c.nc.Subscribe(subject, h))
}

func (c natsConn) QueueSubscribe(subject, queue string, h nats.MsgHandler) (Subscription, error) {
	return natsSub(c.nc.QueueSubscribe(subject, queue, h))
}

func (c natsConn) ChanSubscribe(subject string, ch chan *nats.Msg) (Subscription, error) {
	return natsSub(c.nc.ChanSubscribe(subject, ch))
}

func (c natsConn) FlushTimeout(timeout time.Duration) error   { return c.nc.FlushTimeout(timeout) }
func (c natsConn) FlushWithContext(ctx context.Context) error { return c.nc.FlushWithContext(ctx) }
func (c natsConn) IsConnected() bool                          { return c.nc.IsConnected() }
func (c natsConn) MaxPayload() int64                          { return c.nc.MaxPayload() }
func (c natsConn) ConnectedAddr() string                      { return c.nc.ConnectedAddr() }
func (c natsConn) NATSConn() *nats.Conn                       { return c.nc }
func (c natsConn) Close()                                     { c.nc.Close() }

// natsSub wraps a nats.go subscription (nil on error: a nil interface,
// not a nil pointer in one).
func natsSub(s *nats.Subscription, err error) (Subscription, error) {
	if err != nil {
		return nil, err
	}
	return natsSubscription{s}, nil
}

type natsSubscription struct{ s *nats.Subscription }

func (s natsSubscription) Unsubscribe() error { return s.s.Unsubscribe() }
func (s natsSubscription) Drain() error       { return s.s.Drain() }
func (s natsSubscription) SetPendingLimits(msgs, bytes int) error {
	return s.s.SetPendingLimits(msgs, bytes)
}

func (s natsSubscription) DrainWait(ctx context.Context) error {
	closed := s.s.StatusChanged(nats.SubscriptionClosed)
	if err := s.s.Drain(); err != nil {
		return err
	}
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inlineSubscriber is a Conn that can run a handler on the publishers'
// goroutines (Local).
type inlineSubscriber interface {
	subscribeInline(subject, queue string, h nats.MsgHandler) (Subscription, error)
}

// SubscribeInline delivers the messages on subject to h, as a member of
// queue group queue ("" for none), for a handler that only hands messages
// on. On a Local, h runs on each publisher's goroutine before Publish
// returns (no queue, no hand-off to a goroutine of the subscription: the
// all-in-one's request and reply paths, issue 21), so h may run
// concurrently with itself, must be safe for that, must not block, and
// must not wait for anything a publisher may hold while publishing; its
// messages from one publisher still arrive in order. Drain takes no more
// messages, but those already routed to h are still handled, and
// DrainWait returns once they have been. On any other
// Conn it is Subscribe or QueueSubscribe: one message at a time on the
// subscription's goroutine.
func SubscribeInline(c Conn, subject, queue string, h nats.MsgHandler) (Subscription, error) {
	if is, ok := c.(inlineSubscriber); ok {
		return is.subscribeInline(subject, queue, h)
	}
	if queue == "" {
		return c.Subscribe(subject, h)
	}
	return c.QueueSubscribe(subject, queue, h)
}
