package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// call is a server-to-client request waiting for the client's answer.
type call struct {
	session string
	answer  chan *protocol.Message // buffered 1
}

// ErrCallTimeout is returned when the client does not answer a
// server-to-client request within Options.CallTimeout.
var ErrCallTimeout = errors.New("worker: the client did not answer in time")

func (w *Worker) call(ctx context.Context, f *inflight, method string, params any) (json.RawMessage, error) {
	if f.session == "" {
		return nil, errors.New("worker: server-to-client requests need a legacy session")
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("worker: marshalling %s params: %w", method, err)
	}
	id := bus.ServerRequestID(w.opts.ID, w.seq.Add(1))
	key := id.Str()
	c := &call{session: f.session, answer: make(chan *protocol.Message, 1)}
	w.mu.Lock()
	w.calls[key] = c
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.calls, key)
		w.mu.Unlock()
	}()

	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	if f.pending == nil {
		f.pending = map[string]struct{}{} // made at the first call: most requests make none
	}
	f.pending[key] = struct{}{}
	frame := bus.AppendFrame(nil, bus.FrameServerRequest, protocol.AppendRequest(nil, id, method, raw))
	var logged <-chan bool // a session-level request: whether a session log took it
	if f.sessionLevel {
		logged, err = w.sess.enqueue(f.session, "", bus.FrameServerRequest, frame[1:], true)
	} else if f.acked == nil {
		err = w.nc.Publish(f.reply, frame)
	}
	f.mu.Unlock()
	if f.acked != nil && !f.sessionLevel {
		err = f.acked.send(bus.FrameServerRequest, frame[1:])
	}
	leftToEnd := false // the request's end cancels key (see ctx.Done below)
	defer func() {
		if leftToEnd {
			return
		}
		f.mu.Lock()
		delete(f.pending, key)
		f.mu.Unlock()
	}()
	if err != nil {
		return nil, fmt.Errorf("worker: sending %s: %w", method, err)
	}

	timer := time.NewTimer(w.opts.CallTimeout)
	defer timer.Stop()
	for {
		select {
		case ok := <-logged:
			if !ok {
				return nil, protocol.NewError(protocol.CodeInternalError, "no stream of the session is open to carry the request; the client must open its GET stream")
			}
			logged = nil // in the log: the client answers when it reads it
			continue
		case m := <-c.answer:
			if m.Error != nil {
				return nil, m.Error
			}
			return m.Result, nil
		case <-ctx.Done():
			// Tell the client to stop waiting.
			// When the request itself ended, its end (expire or abort)
			// cancels the open requests before its final answer; a handler's
			// own shorter context is the call's to report.
			if f.ctx != nil && f.ctx.Err() != nil {
				leftToEnd = true
			} else if f.takePending(key) {
				n, _ := protocol.EncodeNotification(protocol.NotificationCancelled, map[string]any{"requestId": key, "reason": "request ended"})
				f.publish(bus.FrameNotification, n, false)
			}
			return nil, context.Cause(ctx)
		case <-timer.C:
			// Tell the client to stop waiting on its side too.
			n, _ := protocol.EncodeNotification(protocol.NotificationCancelled, map[string]any{"requestId": key, "reason": "timed out"})
			f.publish(bus.FrameNotification, n, false)
			return nil, fmt.Errorf("%w (%s after %s)", ErrCallTimeout, method, w.opts.CallTimeout)
		}
	}
}

// onAnswer receives a client's answer to one of this worker's
// server-to-client requests, forwarded by whichever frontend got the POST.
// Answers from another session than the one asked are dropped.
func (w *Worker) onAnswer(m *nats.Msg) {
	hdr, raw, err := bus.DecodeAnswer(m.Data)
	if err != nil {
		return
	}
	msg, err := protocol.Decode(raw, 0)
	if err != nil || msg.Kind() != protocol.KindResponse || !msg.ID.IsString() {
		return
	}
	w.mu.Lock()
	c := w.calls[msg.ID.Str()]
	w.mu.Unlock()
	if c == nil {
		return
	}
	if c.session != hdr.Session {
		w.log.Warn("worker: dropping an answer from another session", "id", msg.ID.String())
		return
	}
	select {
	case c.answer <- msg:
	default: // a duplicate answer; the first one won
	}
}

// takePending removes key from the request's open server-to-client
// requests and reports whether it was there: whoever takes it sends its
// notifications/cancelled, once.
func (f *inflight) takePending(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pending[key]
	delete(f.pending, key)
	return ok
}

// cancelPending sends notifications/cancelled for every open
// server-to-client request of the request (before its final answer), and
// forgets them.
func (f *inflight) cancelPending(reason string) {
	f.mu.Lock()
	keys := make([]string, 0, len(f.pending))
	for k := range f.pending {
		keys = append(keys, k)
	}
	clear(f.pending)
	f.mu.Unlock()
	for _, k := range keys {
		n, _ := protocol.EncodeNotification(protocol.NotificationCancelled, map[string]any{"requestId": k, "reason": reason})
		f.publish(bus.FrameNotification, n, false)
	}
}
