package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/bus"
	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/nats-io/nats.go"
)

// run runs one request's handler and answers the request. The request
// ends at its deadline, cancellation or shutdown whatever the handler
// does: expire answers it then (the error, or the end of the stream for a
// cancellation) and forgets it, while this goroutine waits on for the
// handler, holding its MaxInFlight slot and counted as stuck in the
// metrics until the handler returns. Exactly one of run and expire answers.
func (w *Worker) run(ctx context.Context, cancelDeadline context.CancelFunc, f *inflight, req *mcp.Request, msg *protocol.Message) {
	start := w.opts.Metrics.start(f, msg.Method)
	stop := context.AfterFunc(ctx, func() { w.expire(ctx, f, msg.Method, msg.ID, start) })
	out, outcome := w.answerTraced(ctx, req, msg)
	answered := !stop() // expire runs (or ran): the request is its to answer
	cancelDeadline()
	w.mu.Lock()
	w.handlers--
	w.mu.Unlock()
	f.mu.Lock()
	f.returned = true
	wasStuck := f.stuck
	f.mu.Unlock()
	if wasStuck {
		w.opts.Metrics.unstuck()
		w.log.WarnContext(ctx, "worker: a handler returned after its request ended", "method", msg.Method, "ran", time.Since(start).Round(time.Millisecond))
	}
	if answered {
		return
	}
	f.publish(bus.FrameResponse, out, true)
	w.endRequest(f, msg.Method, outcome, out, start)
}

// expire answers a request whose context ended before its handler
// returned: a timeout or shutdown error, or (cancelled by the client) the
// end of its stream and no response.
func (w *Worker) expire(ctx context.Context, f *inflight, method string, id protocol.ID, start time.Time) {
	cause := context.Cause(ctx)
	var outcome string
	switch {
	case errors.Is(cause, errShutdown):
		outcome = "shutdown"
		f.cancelPending("request ended")
		f.publish(bus.FrameResponse, protocol.AppendErrorResponse(nil, id, shuttingDownError()), true)
	case errors.Is(cause, context.DeadlineExceeded):
		outcome = "timeout"
		f.cancelPending("request ended")
		f.publish(bus.FrameResponse, protocol.AppendErrorResponse(nil, id, protocol.ErrRequestTimedOut()), true)
	default:
		outcome = "cancelled"
		f.abort("cancelled") // a no-op when a client's cancel already ended the stream
	}
	f.mu.Lock()
	stuck := !f.returned
	f.stuck = stuck
	f.mu.Unlock()
	if stuck {
		w.opts.Metrics.stuck()
	}
	w.endRequest(f, method, outcome, nil, start)
}

// endRequest forgets an answered request: its cancel key may be used
// again, and Shutdown no longer waits for it. out is the answer sent (nil
// when expire ended the request).
func (w *Worker) endRequest(f *inflight, method, outcome string, out []byte, start time.Time) {
	w.mu.Lock()
	if w.inflight[f.key] == f {
		delete(w.inflight, f.key)
	}
	w.mu.Unlock()
	w.opts.Metrics.done(f, method, outcome, out, start)
	endConsume(f.ctx, outcome, nil)
	w.wg.Done()
}

// answer runs the handler and encodes its answer. A panic anywhere in it
// (the catalog path, a handler, a result's MarshalJSON) becomes -32603.
func (w *Worker) answer(ctx context.Context, req *mcp.Request, msg *protocol.Message) (out []byte, outcome string) {
	defer func() {
		if p := recover(); p != nil {
			w.log.ErrorContext(ctx, "worker: panic answering a request", "method", msg.Method, "panic", p, "stack", string(debug.Stack()))
			out, outcome = protocol.AppendErrorResponse(nil, msg.ID, protocol.ErrInternalFailure()), "error"
		}
	}()
	var (
		res protocol.Result
		err error
	)
	if mcp.IsCatalogMethod(msg.Method) {
		// Answered from what this worker serves (its filtered catalog).
		res, _, err = w.servedCatalog().Answer(req, msg.Params)
	} else {
		res, err = w.srv.Handle(ctx, req, msg.Params)
	}
	outcome = "ok"
	if err != nil {
		outcome = "error"
		out = protocol.AppendErrorResponse(nil, msg.ID, protocol.AsError(err))
	} else {
		var merr error
		if out, merr = protocol.AppendResultResponse(make([]byte, 0, 256), msg.ID, res); merr != nil {
			w.log.ErrorContext(ctx, "worker: marshalling a result", "method", msg.Method, "err", merr)
			out, outcome = protocol.AppendErrorResponse(nil, msg.ID, protocol.ErrInternalFailure()), "error"
		}
	}
	if limit := w.nc.MaxPayload(); limit > 0 && int64(len(out)+1) > limit {
		// The bus cannot carry it: the client gets an error now rather
		// than a timeout when the worker seems to have died.
		w.log.WarnContext(ctx, "worker: a result is over the bus's payload cap", "method", msg.Method, "bytes", len(out), "max", limit)
		out = protocol.AppendErrorResponse(nil, msg.ID, protocol.NewError(protocol.CodeInternalError,
			"internal error: the result is %d bytes once encoded, over the %d bytes a message between processes may carry", len(out), limit))
		outcome = "error"
	}
	return out, outcome
}

// recovered logs a panic of a worker goroutine instead of letting it take
// the process down. Deferred by every bus callback and goroutine of the
// worker: no message, however malformed, and no server-author code it
// reaches kills the worker.
func (w *Worker) recovered(what string) {
	if p := recover(); p != nil {
		w.log.Error(fmt.Sprintf("worker: panic in %s", what), "panic", p, "stack", string(debug.Stack()))
	}
}

// guard wraps a bus callback with recovered.
func (w *Worker) guard(what string, h nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		defer w.recovered(what)
		h(m)
	}
}
