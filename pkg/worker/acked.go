package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/nats-io/nats.go"
)

// Acked frames (see package bus): a legacy request's stream can be
// resumed at any frontend, so its payload frames must reach the stream's
// log even while the frontend holding it is dead or cut off. Each goes as
// a NATS request to the stream's subject, one outstanding at a time, in
// order, with its sequence number; without an ack within AckTimeout (or
// at once on "no responders" or bus.AckGone) it goes to Subjects.Append,
// which every frontend serves, retried with backoff until acked or the
// request's deadline. Heartbeats and SSE close requests stay plain
// publishes: they matter only to a live holder; so does a response that
// comes first (a plain JSON answer, which has no log to resume).

// errSenderOver is returned for a frame after the request's final one.
var errSenderOver = errors.New("worker: the request's stream is over")

// ackedSender sends one legacy request's payload frames.
type ackedSender struct {
	w        *Worker
	inbox    string // the stream subject (the request's reply subject)
	hdr      bus.AppendHeader
	deadline time.Time // the request's, plus an ack timeout: frames are tried until then

	started atomic.Bool // a frame that may start the stream's log was sent

	mu   sync.Mutex // one frame outstanding at a time
	seq  uint64
	over bool // a final frame (response or end) was sent
}

// newAckedSender returns the sender of a legacy request's frames, or nil
// when the request is not one (modern, or its reply subject is not a
// frontend's stream).
func (w *Worker) newAckedSender(hdr *bus.RequestHeader, reply string, deadline time.Time) *ackedSender {
	if hdr.Session == nil || hdr.Frontend == "" || hdr.Stream == "" || !w.subj.IsStream(reply, hdr.Frontend, hdr.Stream) {
		return nil
	}
	return &ackedSender{
		w: w, inbox: reply,
		hdr:      bus.AppendHeader{Session: hdr.Session.ID, Frontend: hdr.Frontend, Stream: hdr.Stream},
		deadline: deadline.Add(w.opts.AckTimeout),
	}
}

// takes reports whether a frame of kind k goes acked: notifications and
// server-to-client requests always (the frontend starts the stream's SSE
// and log on the first), the response and the end only once the stream
// may have a log (a frame went before, or the SEP-1699 close, which
// starts SSE too). A response that comes first is a plain JSON answer,
// never logged: it goes as a plain publish, at the old cost.
func (a *ackedSender) takes(k bus.FrameKind) bool {
	switch k {
	case bus.FrameNotification, bus.FrameServerRequest:
		return true
	case bus.FrameResponse, bus.FrameEnd:
		return a.started.Load()
	case bus.FrameClose:
		a.started.Store(true)
	}
	return false
}

// send delivers one frame, blocking until it is acked, the request's
// deadline passes or the worker stops; frames after the final one
// (response or end) are refused.
func (a *ackedSender) send(kind bus.FrameKind, payload []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		return errSenderOver
	}
	a.seq++
	a.over = kind == bus.FrameResponse || kind == bus.FrameEnd
	a.started.Store(true)
	// A frame made at or past the deadline (its timeout error, say) still
	// gets its tries.
	deadline := a.deadline
	if least := time.Now().Add(2 * a.w.opts.AckTimeout); deadline.Before(least) {
		deadline = least
	}
	ctx, cancel := context.WithDeadline(a.w.sendCtx, deadline)
	defer cancel()
	err := a.deliver(ctx, a.seq, bus.AppendFrame(make([]byte, 0, len(payload)+1), kind, payload))
	if err != nil {
		a.w.log.Warn("worker: a frame of a legacy stream could not be delivered", "kind", string(kind), "seq", a.seq, "err", err)
	}
	return err
}

// deliver tries the stream subject once, then Subjects.Append until acked.
func (a *ackedSender) deliver(ctx context.Context, seq uint64, frame []byte) error {
	m := &nats.Msg{Subject: a.inbox, Data: frame}
	bus.SetFrameSeq(m, seq)
	if a.request(ctx, m) {
		return nil
	}
	h := a.hdr
	h.Seq = seq
	data, err := bus.EncodeAppend(&h, frame)
	if err != nil {
		return err
	}
	a.w.log.Debug("worker: a frame goes through any frontend", "seq", seq)
	fallback := a.w.subj.Append(a.hdr.Frontend, a.hdr.Stream)
	backoff := 20 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if a.request(ctx, &nats.Msg{Subject: fallback, Data: data}) {
			return nil
		}
		t.Reset(backoff)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// request sends m and reports whether it was acked (an empty reply)
// within AckTimeout.
func (a *ackedSender) request(ctx context.Context, m *nats.Msg) bool {
	if ctx.Err() != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, a.w.opts.AckTimeout)
	defer cancel()
	resp, err := a.w.nc.RequestMsgWithContext(rctx, m)
	return err == nil && len(resp.Data) == 0
}

// publishAcked is publish for an acked frame: done is checked and set as
// in publish, the frame is sent outside the request's lock.
func (f *inflight) publishAcked(kind bus.FrameKind, payload []byte, final bool) bool {
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return false
	}
	if final {
		f.done = true
	}
	f.mu.Unlock()
	_ = f.acked.send(kind, payload)
	return true
}

// abortAcked sends the cancellations of an aborted legacy request's open
// server-to-client requests (notes) then its end, in the background so
// the caller (a NATS callback) is not held; counted in the worker's
// running requests unless the worker has stopped taking requests (then
// sent before returning).
func (f *inflight) abortAcked(notes [][]byte) {
	sendAll := func() {
		for _, n := range notes {
			_ = f.acked.send(bus.FrameNotification, n)
		}
		_ = f.acked.send(bus.FrameEnd, nil)
	}
	w := f.w
	w.mu.Lock()
	background := !w.closed
	if background {
		w.wg.Add(1)
	}
	w.mu.Unlock()
	if !background {
		sendAll()
		return
	}
	go func() { // owned by the request: ends once the end is acked or at its deadline
		defer w.wg.Done()
		sendAll()
	}()
}
