package stream

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/httpx"
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
	"github.com/nats-io/nats.go"
)

// resumer is one resumption of a POST response stream (resumePost).
type resumer struct {
	s       *Streams
	r       *http.Request
	session string
	stream  string // the SSE stream id
	fe      string // the frontend named in the stream id
	busID   string // its bus stream
	frames  string // the subject of the worker's frames for the stream

	ch       chan *nats.Msg
	subs     []bus.Subscription
	takeover bool // this frontend relays the worker's frames itself
	sse      *SSE
	last     uint64      // the index of the last event written
	reqID    protocol.ID // the resumed request's id
	loop     *Loop[*nats.Msg]
}

// resumePost resumes a POST response stream of this session on any
// frontend. It subscribes first (so nothing published during the replay is
// lost), then replays the logged events after `after`, then relays new
// events until the response (or the end marker), which ends the stream.
// New events come from the live subject of the frontend that holds the
// stream; a gap in them, or an end without the response, is filled from the
// log. When no frontend holds the stream any more (the one named in its id
// does not answer, or it is this one and the exchange is gone), this
// frontend takes the stream over: it subscribes to the worker's frames for
// the stream and logs (idempotently, by their sequence numbers), acks and
// writes them itself. Frames the worker sent while no frontend held the
// stream were logged by any frontend (OnAppend): the replay has them.
func (s *Streams) resumePost(w http.ResponseWriter, r *http.Request, sess *sessionstore.Session, stream string, after uint64) {
	// A resumed stream waits like the request it resumes: it holds the
	// session's in-flight slots.
	held, ok := s.opts.Admit(w, r, protocol.ID{}, sess.ID)
	if !ok {
		return
	}
	defer held()
	fe, busID, _ := SplitPostStream(stream)
	rs := &resumer{s: s, r: r, session: sess.ID, stream: stream, fe: fe, busID: busID,
		frames: s.subj.Stream(fe, busID), ch: make(chan *nats.Msg, 4*s.opts.StreamBuffer)}
	defer rs.unsubscribe()
	err := rs.subscribe(s.subj.Live(sess.ID, stream))
	if err == nil && rs.orphaned() {
		err = rs.takeOver()
	}
	if err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, protocol.ID{}, protocol.ErrBusUnavailable())
		return
	}
	start, all, err := s.streamLog(r.Context(), sess.ID, stream)
	if err != nil {
		s.storeErr(r.Context(), w, err)
		return
	}
	if start == nil || after == 0 {
		httpx.HTTPError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "no such stream in this session, or its events are gone; retry the request")
		return
	}
	_ = rs.reqID.UnmarshalJSON(start[len(markStart):])
	defer s.opts.Metrics.StreamOpened("resume")()
	rs.sse = StartSSE(w, s.opts.WriteTimeout, nil)
	rs.last = after
	if over, _ := rs.replay(all); over {
		return
	}
	rs.relay()
}

func (rs *resumer) subscribe(subject string) error {
	sub, err := rs.s.nc.ChanSubscribe(subject, rs.ch)
	if err != nil {
		return err
	}
	rs.subs = append(rs.subs, sub)
	return rs.s.nc.FlushTimeout(storeTimeout)
}

func (rs *resumer) unsubscribe() {
	for _, sub := range rs.subs {
		_ = sub.Unsubscribe()
	}
}

// takeOver subscribes to the worker's frames for the stream.
func (rs *resumer) takeOver() error {
	rs.takeover = true
	return rs.subscribe(rs.frames)
}

// orphaned reports whether no frontend holds the stream any more.
func (rs *resumer) orphaned() bool {
	if rs.fe == rs.s.id {
		return !rs.s.hasInbox(rs.busID)
	}
	return !rs.s.frontendAlive(rs.r.Context(), rs.fe)
}

// replay writes the logged events after last; it reports whether the
// stream is over (response or end marker).
func (rs *resumer) replay(evs []sessionstore.Event) (over bool, err error) {
	for _, ev := range evs {
		if ev.Index <= rs.last {
			continue
		}
		rs.last = ev.Index
		if isMarker(ev.Data) {
			if string(ev.Data) == markEnd {
				return true, nil
			}
			continue
		}
		if err := rs.sse.Event(FormatEventID(rs.stream, ev.Index), ev.Data); err != nil {
			return true, err
		}
		if isResponse(ev.Data) {
			return true, nil
		}
	}
	return false, nil
}

// refill replays what the log has after last; it reports whether the
// stream is over (or the log cannot be read).
func (rs *resumer) refill() bool {
	ctx, cancel := context.WithTimeout(rs.r.Context(), storeTimeout)
	evs, err := rs.s.opts.Events.EventsAfter(ctx, rs.session, rs.stream, rs.last)
	cancel()
	if err != nil {
		return true
	}
	over, err := rs.replay(evs)
	return over || err != nil
}

// relay writes new events until the stream is over. While another
// frontend holds the stream, it checks now and then that it is still
// there; in a takeover, the worker's heartbeats tell that it still runs
// the request, and without them the request is lost.
func (rs *resumer) relay() {
	opts := &rs.s.opts
	l := &Loop[*nats.Msg]{
		Events:        rs.ch,
		OnEvent:       rs.onMsg,
		KeepAlive:     opts.KeepAlive,
		OnKeepAlive:   func() bool { return rs.sse.Comment("keepalive") == nil },
		Deadline:      time.Now().Add(opts.RequestTimeout),
		Liveness:      opts.WorkerTimeout,
		LivenessLater: !rs.takeover,
		OnLost:        rs.lost,
		Stop:          opts.Shutdown,
		Gone:          rs.r.Context().Done(),
		Ended:         rs.s.busLost(), // cut off: the client resumes elsewhere
	}
	if !rs.takeover {
		l.Probe, l.OnProbe = opts.WorkerTimeout/4, rs.probe
	}
	rs.loop = l
	l.Run()
}

// onMsg handles a message on the stream's subscriptions; false ends the
// stream.
func (rs *resumer) onMsg(m *nats.Msg) bool {
	if m.Subject == rs.frames {
		return rs.onFrame(m)
	}
	idx, data, end, ok := bus.ParseLiveEvent(m.Data)
	switch {
	case !ok:
	case end:
		rs.refill() // anything the live subject dropped is in the log
		return false
	case idx <= rs.last:
	case idx > rs.last+1:
		if rs.refill() {
			return false
		}
	default:
		if over, err := rs.replay([]sessionstore.Event{{Index: idx, Data: data}}); over || err != nil {
			return false
		}
	}
	return true
}

// onFrame handles a frame of the worker in a takeover: logged, acked
// (an acked frame), then written.
func (rs *resumer) onFrame(m *nats.Msg) bool {
	status := ""
	if m.Header != nil {
		status = m.Header.Get("Status")
	}
	kind, payload := bus.ParseFrame(m.Data, status)
	rs.loop.Alive()
	switch kind {
	case bus.FrameNotification, bus.FrameServerRequest, bus.FrameResponse:
	case bus.FrameEnd:
		payload = []byte(markEnd)
	default:
		return true
	}
	if seq := bus.FrameSeq(m); seq > 0 && m.Reply != "" {
		return rs.onAckedFrame(m, seq, payload)
	}
	if kind == bus.FrameEnd {
		rs.s.logEvent(rs.session, rs.stream, payload)
		return false
	}
	idx, ok := rs.s.logEvent(rs.session, rs.stream, payload)
	id := ""
	if ok {
		id, rs.last = FormatEventID(rs.stream, idx), idx
	}
	return rs.sse.Event(id, payload) == nil && kind != bus.FrameResponse
}

// onAckedFrame logs an acked frame unless it is logged already, acks it,
// then writes what the log has after the last event written (the frame,
// and anything another frontend logged before it).
func (rs *resumer) onAckedFrame(m *nats.Msg, seq uint64, data []byte) bool {
	idx, appended, err := rs.s.logEventSeq(rs.session, rs.stream, seq, data)
	if err != nil {
		return true // not acked: the worker sends it through another frontend
	}
	if appended {
		_ = rs.s.nc.Publish(rs.s.subj.Live(rs.session, rs.stream), bus.AppendLiveEvent(nil, idx, data))
	}
	_ = bus.Respond(rs.s.nc, m, nil)
	if appended && idx == rs.last+1 {
		over, err := rs.replay([]sessionstore.Event{{Index: idx, Data: data}})
		return !over && err == nil
	}
	return !rs.refill()
}

// probe takes the stream over when the frontend holding it is gone.
func (rs *resumer) probe() bool {
	if !rs.orphaned() {
		return true
	}
	rs.loop.StopProbe()
	if err := rs.takeOver(); err != nil {
		return false
	}
	if rs.refill() {
		return false
	}
	rs.loop.ArmLiveness()
	return true
}

// lost ends a taken-over stream whose worker stopped sending heartbeats.
func (rs *resumer) lost() {
	e := protocol.NewError(protocol.CodeInternalError, "the request was lost with the frontend and worker that held it; retry")
	resp := protocol.AppendErrorResponse(nil, rs.reqID, e)
	if idx, ok := rs.s.logEvent(rs.session, rs.stream, resp); ok {
		_ = rs.sse.Event(FormatEventID(rs.stream, idx), resp)
	} else {
		_ = rs.sse.Event("", resp)
	}
}
