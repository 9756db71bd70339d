package stream

import (
	"context"
	"errors"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// SubscribeAppends joins the frontends' queue group on Subjects.Append:
// this frontend then logs, on behalf of any other, the acked frames their
// streams' subjects did not take (OnAppend). The caller unsubscribes.
func (s *Streams) SubscribeAppends() (bus.Subscription, error) {
	sub, err := s.nc.QueueSubscribe(s.subj.AllAppends(), bus.AppendQueue, s.OnAppend)
	if err != nil {
		return nil, err
	}
	_ = sub.SetPendingLimits(-1, 64<<20)
	return sub, nil
}

// OnAppend logs an acked frame that the frontend holding its stream did
// not take (dead, cut off, or the exchange is over): appended to the POST
// stream's log unless already there (by its sequence number), and only
// when that log exists (a stream that never started SSE has nobody to
// resume it), published on the stream's live subject for a client
// resuming elsewhere, then acked. A store failure is answered with a
// non-empty reply: the worker retries, here or at another frontend. A
// malformed envelope is acked and dropped: retrying cannot mend it.
func (s *Streams) OnAppend(m *nats.Msg) {
	ack := func(body string) {
		if m.Reply != "" {
			_ = bus.Respond(s.nc, m, []byte(body))
		}
	}
	h, fr, err := bus.DecodeAppend(m.Data)
	if err != nil || len(h.Frontend) > MaxFrontendIDLen {
		s.log.Warn("frontend: dropping a malformed append", "err", err)
		ack("")
		return
	}
	kind, payload := bus.ParseFrame(fr, "")
	switch kind {
	case bus.FrameNotification, bus.FrameServerRequest, bus.FrameResponse:
	case bus.FrameEnd:
		payload = []byte(markEnd)
	default:
		ack("")
		return
	}
	stream := PostStreamID(h.Frontend, h.Stream)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	idx, appended, err := s.opts.Events.AppendEventSeq(ctx, h.Session, stream, h.Seq, payload)
	cancel()
	switch {
	case errors.Is(err, sessionstore.ErrNotFound): // the session is gone: nothing to resume
	case err != nil:
		s.log.Warn("frontend: logging an event for another frontend", "err", err)
		ack("retry")
		return
	case appended:
		_ = s.nc.Publish(s.subj.Live(h.Session, stream), bus.AppendLiveEvent(nil, idx, payload))
	}
	ack("")
}
