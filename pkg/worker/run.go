package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
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
func (w *Worker) run(ctx context.Context, f *inflight, req *mcp.Request, msg *protocol.Message) {
	start := w.opts.Metrics.start(f, msg.Method)
	f.start = start
	f.armEnd()
	a := w.answerTraced(ctx, req, msg)
	// Ended before its answer was claimed: the handler may have returned
	// only because its context ended (its deadline's timer and the
	// context end together, and the handler can win the race to the
	// claim), so the request is answered as expire would answer it (the
	// timeout or shutdown error, or no response for a cancellation),
	// never with what the handler made of its context's end.
	ended := f.ctx.Err() != nil
	answered := !f.claimAnswer() // expire runs (or ran): the request is its to answer
	f.timer.Stop()
	f.cancel(context.Canceled) // what the handler left waiting on its context ends
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
	if ended {
		w.expire(f)
		return
	}
	f.publish(bus.FrameResponse, a.out, true)
	w.endRequest(f, msg.Method, a.outcome, a.errType, start)
}

// expire answers a request whose context ended before its handler
// returned: a timeout or shutdown error, or (cancelled by the client) the
// end of its stream and no response.
func (w *Worker) expire(f *inflight) {
	method, id, start := f.method, f.id, f.start
	cause := context.Cause(f.ctx)
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
	w.endRequest(f, method, outcome, "", start)
}

// endRequest forgets an answered request: its cancel key may be used
// again, and Shutdown no longer waits for it. errType is the answer's
// (answer.errType; "" when expire ended the request).
func (w *Worker) endRequest(f *inflight, method, outcome, errType string, start time.Time) {
	w.mu.Lock()
	if w.inflight[f.key] == f {
		delete(w.inflight, f.key)
	}
	w.mu.Unlock()
	w.opts.Metrics.done(f, method, outcome, errType, start)
	endConsume(f.ctx, outcome, nil)
	w.wg.Done()
}

// answer is a request's encoded answer and what it says, worked out once
// from the handler's values for the metrics and the trace alike (neither
// scans out).
type answer struct {
	out []byte
	// outcome is "error" for an error response, "ok" otherwise.
	outcome string
	// errType is the error response's code in decimal, "tool_error" for
	// a tools/call result with isError true, "" otherwise.
	errType string
}

// failed is the answer of an error response of e to the request id.
func failed(id protocol.ID, e *protocol.Error) answer {
	return answer{protocol.AppendErrorResponse(nil, id, e), "error", strconv.FormatInt(e.Code, 10)}
}

// answer runs the handler and encodes its answer. A panic anywhere in it
// (the catalog path, a handler, a result's MarshalJSON) becomes -32603.
func (w *Worker) answer(ctx context.Context, req *mcp.Request, msg *protocol.Message) (a answer) {
	defer func() {
		if p := recover(); p != nil {
			w.log.ErrorContext(ctx, "worker: panic answering a request", "method", msg.Method, "panic", p, "stack", string(debug.Stack()))
			a = failed(msg.ID, protocol.ErrInternalFailure())
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
	if err != nil {
		a = failed(msg.ID, protocol.AsError(err))
	} else {
		a = encodeResult(ctx, w, msg, res)
	}
	if limit := w.nc.MaxPayload(); limit > 0 && int64(len(a.out)+1) > limit {
		// The bus cannot carry it: the client gets an error now rather
		// than a timeout when the worker seems to have died.
		w.log.WarnContext(ctx, "worker: a result is over the bus's payload cap", "method", msg.Method, "bytes", len(a.out), "max", limit)
		a = failed(msg.ID, protocol.NewError(protocol.CodeInternalError,
			"internal error: the result is %d bytes once encoded, over the %d bytes a message between processes may carry", len(a.out), limit))
	}
	return a
}

// resultEncoder encodes results into a buffer it keeps: the result's JSON
// is copied once, into the response, instead of allocated and then copied.
type resultEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var resultEncoders = sync.Pool{New: func() any {
	e := new(resultEncoder)
	e.enc = json.NewEncoder(&e.buf) // escapes HTML, as json.Marshal does
	return e
}}

// maxKeptEncoder is the largest buffer a resultEncoder goes back to the
// pool with.
const maxKeptEncoder = 64 << 10

// encodeResult encodes the response of a request's result res.
func encodeResult(ctx context.Context, w *Worker, msg *protocol.Message, res protocol.Result) answer {
	if r, ok := res.(*protocol.CallToolResult); ok && r != nil {
		// Written by hand, straight into the response.
		out, err := protocol.AppendResultResponse(make([]byte, 0, 256), msg.ID, r)
		if err != nil {
			w.log.ErrorContext(ctx, "worker: marshalling a result", "method", msg.Method, "err", err)
			return failed(msg.ID, protocol.ErrInternalFailure())
		}
		a := answer{out: out, outcome: "ok"}
		if msg.Method == protocol.MethodToolsCall && isToolError(r, nil) {
			a.errType = "tool_error"
		}
		return a
	}
	e := resultEncoders.Get().(*resultEncoder)
	e.buf.Reset()
	if err := e.enc.Encode(res); err != nil {
		resultEncoders.Put(e)
		w.log.ErrorContext(ctx, "worker: marshalling a result", "method", msg.Method, "err", err)
		return failed(msg.ID, protocol.ErrInternalFailure())
	}
	raw := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")) // Encode ends it with a newline
	a := answer{out: protocol.AppendResponse(make([]byte, 0, len(raw)+48), msg.ID, raw), outcome: "ok"}
	if msg.Method == protocol.MethodToolsCall && isToolError(res, raw) {
		a.errType = "tool_error"
	}
	if e.buf.Cap() <= maxKeptEncoder {
		resultEncoders.Put(e)
	}
	return a
}

// isToolError reports whether a tools/call result, encoded as raw, is a
// tool's error: from its value when it is a CallToolResult, else (a
// middleware's own result type) from its encoding.
func isToolError(res protocol.Result, raw []byte) bool {
	if r, ok := res.(*protocol.CallToolResult); ok {
		return r != nil && r.IsError
	}
	return protocol.IsToolError(raw)
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
