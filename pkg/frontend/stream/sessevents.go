package stream

import (
	"context"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// SubscriberIndex finds the legacy sessions subscribed to a resource: the
// two methods of sessionstore.Sessions the session-event writer needs.
type SubscriberIndex interface {
	Subscribers(ctx context.Context, uri string) ([]string, error)
	DropSubscriber(ctx context.Context, uri, id string) error
}

// SubscribeSessionEvents joins the frontends' queue group on
// Subjects.SessionEvents: this frontend then logs session events for any
// session, whichever frontend holds its GET stream (OnSessionEvents). The
// caller unsubscribes.
func (s *Streams) SubscribeSessionEvents() (bus.Subscription, error) {
	sub, err := s.nc.QueueSubscribe(s.subj.SessionEvents(), bus.AppendQueue, s.OnSessionEvents)
	if err != nil {
		return nil, err
	}
	_ = sub.SetPendingLimits(-1, 64<<20)
	return sub, nil
}

// OnSessionEvents logs a batch of session events (see package bus): each
// event goes into the GET log of its session, or of every session
// subscribed to its URI, at most once per session (by its key, whatever
// the retries), in the batch's order, in one store round trip; each event
// logged is published on the log's live subject for the frontend holding
// the session's GET stream, and the reply says per event whether a log
// took it. A store failure is answered SessionEventsRetry: the sender
// resends the batch (here or elsewhere), and what was logged already is
// not logged again. A malformed batch is answered with nothing: retrying
// cannot mend it, and the sender gives it up at its deadline.
func (s *Streams) OnSessionEvents(m *nats.Msg) {
	reply := func(b []byte) {
		if m.Reply != "" {
			_ = bus.Respond(s.nc, m, b)
		}
	}
	evs, err := bus.DecodeSessionEvents(m.Data)
	if err != nil {
		s.log.Warn("frontend: dropping malformed session events", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	batch, owner, err := s.expand(ctx, evs)
	if err != nil {
		s.log.Warn("frontend: reading a resource's subscribers", "err", err)
		reply([]byte(bus.SessionEventsRetry))
		return
	}
	res := make([]byte, len(evs))
	for i := range res {
		res[i] = bus.SessionEventDropped
	}
	if len(batch) == 0 {
		reply(res)
		return
	}
	results, err := s.opts.Events.AppendOnce(ctx, batch)
	if err != nil || len(results) != len(batch) {
		s.log.Warn("frontend: logging session events", "err", err)
		reply([]byte(bus.SessionEventsRetry))
		return
	}
	fanned := 0
	for i, r := range results {
		a := &batch[i]
		switch r.Status {
		case sessionstore.NoLog:
			s.opts.Metrics.MessageDropped("no_log")
		case sessionstore.Appended, sessionstore.Duplicate:
			if r.Status == sessionstore.Appended {
				fanned++
			}
			// A duplicate is published again: the frontend that logged
			// it may have died before it did (the holder skips what it
			// has written).
			_ = s.nc.Publish(s.subj.Live(a.Session, bus.SessionLog), bus.AppendLiveEvent(nil, r.Index, a.Data))
			res[owner[i]] = bus.SessionEventLogged
		case sessionstore.NotSubscribed, sessionstore.NoSession:
			if a.URI != "" {
				if err := s.opts.Subscribers.DropSubscriber(ctx, a.URI, a.Session); err != nil {
					s.log.Warn("frontend: dropping a stale subscriber", "err", err)
				}
			}
		}
	}
	s.opts.Metrics.EventsFannedOut("session", fanned)
	reply(res)
}

// expand turns session events into appends: one per event for a session,
// one per subscriber of the URI for a resource's; owner[i] is the event
// batch[i] comes from.
func (s *Streams) expand(ctx context.Context, evs []bus.SessionEvent) (batch []sessionstore.OnceAppend, owner []int, err error) {
	subs := map[string][]string{} // uri -> subscribers, read once per batch
	for i, e := range evs {
		if e.Session != "" {
			batch = append(batch, sessionstore.OnceAppend{Session: e.Session, Stream: bus.SessionLog, Key: e.Key, Data: e.Msg})
			owner = append(owner, i)
			continue
		}
		ids, ok := subs[e.URI]
		if !ok {
			if ids, err = s.opts.Subscribers.Subscribers(ctx, e.URI); err != nil {
				return nil, nil, err
			}
			subs[e.URI] = ids
		}
		for _, id := range ids {
			batch = append(batch, sessionstore.OnceAppend{Session: id, Stream: bus.SessionLog, URI: e.URI, Key: e.Key, Data: e.Msg})
			owner = append(owner, i)
		}
	}
	return batch, owner, nil
}

// LogSessionEvent logs a message for a legacy session's GET stream on this
// frontend's own behalf (a task's status notification), under key, and
// publishes it for the frontend holding the stream. It reports whether a
// log took it (false: the session never opened a GET stream, or the store
// failed).
func (s *Streams) LogSessionEvent(ctx context.Context, session, key string, msg []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	res, err := s.opts.Events.AppendOnce(ctx, []sessionstore.OnceAppend{{Session: session, Stream: bus.SessionLog, Key: key, Data: msg}})
	if err != nil || len(res) != 1 {
		s.log.Warn("frontend: logging a session event", "err", err)
		return false
	}
	switch res[0].Status {
	case sessionstore.Appended, sessionstore.Duplicate:
		if res[0].Status == sessionstore.Appended {
			s.opts.Metrics.EventsFannedOut("session", 1)
		}
		_ = s.nc.Publish(s.subj.Live(session, bus.SessionLog), bus.AppendLiveEvent(nil, res[0].Index, msg))
		return true
	}
	return false
}
