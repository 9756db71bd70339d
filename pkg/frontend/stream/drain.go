package stream

import (
	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// drain runs a detached legacy exchange to its end: events go to the log
// and to the live subject of the stream, where a resuming client gets them.
func (ex *exchange) drain() {
	opts := &ex.s.opts
	for _, fr := range ex.rest {
		over := ex.drainFrame(fr)
		ex.s.ack(fr)
		if over {
			return
		}
	}
	ex.rest = nil
	l := &Loop[struct{}]{
		Events:   ex.st.signal,
		Deadline: ex.deadline,
		Liveness: opts.WorkerTimeout,
		// Cut off from NATS: the frames go to another frontend's log
		// through the append subject; this one stops logging.
		Ended:   ex.s.busLost(),
		OnEnded: func() { ex.busLost = true },
	}
	l.OnEvent = func(struct{}) bool {
		var overflowed bool
		ex.frames, overflowed = ex.st.take(ex.frames)
		l.Alive()
		for _, fr := range ex.frames {
			over := ex.drainFrame(fr)
			ex.s.ack(fr)
			if over {
				return false
			}
		}
		if overflowed {
			ex.cancelWorker()
			return false
		}
		return true
	}
	l.OnLost = func() {
		ex.cancelWorker()
		ex.fail(nil, 0, errWorkerLost(ex.spec.Msg.Method))
	}
	l.OnDeadline = func() {
		ex.cancelWorker()
		ex.fail(nil, 0, errTimedOut(opts.RequestTimeout))
	}
	l.Run()
}

// drainFrame handles one frame of a detached exchange; it reports whether
// the exchange is over.
func (ex *exchange) drainFrame(fr frame) bool {
	switch fr.kind {
	case bus.FrameNotification:
		ex.emitSeq(fr.payload, fr.seq)
	case bus.FrameServerRequest:
		if ex.sseID == "" {
			// Nobody can ever see it: answer it for the client so
			// the handler does not wait for nothing.
			ex.refuseServerRequest(fr.payload)
			return false
		}
		ex.emitSeq(fr.payload, fr.seq)
	case bus.FrameResponse:
		if e := ex.spec.Effect; e != nil {
			if err := e(fr.payload); err != nil {
				ex.s.log.ErrorContext(ex.logCtx, "frontend: completing a detached response", "method", ex.spec.Msg.Method, "err", err)
			}
		}
		ex.emitSeq(fr.payload, fr.seq)
		ex.ended = true
		return true
	case bus.FrameEnd:
		return true
	case bus.FrameNoResponders:
		ex.fail(nil, 0, errNoWorker(ex.spec.Msg.Method))
		return true
	}
	return false
}

// refuseServerRequest answers a server-to-client request that can reach no
// client with an error, on behalf of the client.
func (ex *exchange) refuseServerRequest(payload []byte) {
	m, err := protocol.Decode(payload, 0)
	if err != nil || m.Kind() != protocol.KindRequest {
		return
	}
	worker, ok := bus.ParseServerRequestID(m.ID)
	if !ok {
		return
	}
	answer := protocol.AppendErrorResponse(nil, m.ID, protocol.NewError(protocol.CodeInternalError, "the client's stream is gone"))
	if data, err := bus.EncodeAnswer(&bus.ClientAnswer{Session: ex.spec.Session.ID}, answer); err == nil {
		_ = ex.s.nc.Publish(ex.s.subj.WorkerInbox(worker), data)
	}
}
