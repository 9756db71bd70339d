package worker

import (
	"context"
	"time"
)

// requestCtx is a request's context: one standard cancelCtx (made by
// context.WithCancelCause, so context.Cause gives a handler the reason its
// request ended: the client's cancellation, the deadline, the shutdown)
// that also reports the request's deadline. The deadline is a timer of
// the request's own (inflight.end), not a context.WithDeadline under the
// cancelCtx, and the request's end is a call from inflight.end, not a
// context.AfterFunc: one context and one timer per request instead of
// three contexts, two children maps and two channels, on every request.
//
// Err is context.DeadlineExceeded once the deadline passed, as a
// context.WithDeadline's; a context derived from it (context.WithCancel
// and the like) ends at the same time with context.Canceled and the
// cause context.DeadlineExceeded.
type requestCtx struct {
	context.Context // the cancelCtx: Done, Value and the cause are its
	deadline        time.Time
}

func (c *requestCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *requestCtx) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

func (c *requestCtx) String() string { return "worker.requestCtx" }

// The states of a request's end (inflight.state): who answers it, the
// handler's goroutine (run) or expire, is decided once, by a
// compare-and-swap from reqRunning.
const (
	reqQueued   int32 = iota // the handler has not started: run arms the end
	reqRunning               // the handler runs: the first of run and end wins
	reqAnswered              // run answers (the handler returned first)
	reqExpired               // expire answers (the context ended first)
)

// newRequestCtx returns a request's context, ending at deadline, and the
// function that cancels it with a cause (the first cause stays).
func newRequestCtx(parent context.Context, deadline time.Time) (*requestCtx, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	return &requestCtx{Context: ctx, deadline: deadline}, cancel
}

// end ends the request's context with cause and, when its handler runs
// and has not returned, has expire answer the request (on a goroutine of
// its own, as a context.AfterFunc would): every way a request ends early
// (the client's cancellation, its deadline, the shutdown) comes here.
func (f *inflight) end(cause error) {
	f.cancel(cause)
	if f.state.CompareAndSwap(reqRunning, reqExpired) {
		go f.w.expire(f) // owned by the request: answers it and returns
	}
}

// armEnd marks the handler started (from run, before it calls the
// handler): from now on, end has expire answer the request. A request
// whose context ended while it waited for a handler goroutine is expired
// at once.
func (f *inflight) armEnd() {
	f.state.Store(reqRunning)
	if f.ctx.Err() != nil && f.state.CompareAndSwap(reqRunning, reqExpired) {
		go f.w.expire(f)
	}
}

// claimAnswer reports whether the handler's answer is the request's (from
// run, once the handler returned): false when expire answers instead.
func (f *inflight) claimAnswer() bool {
	return f.state.CompareAndSwap(reqRunning, reqAnswered)
}

// startDeadline starts the timer that ends the request at its deadline
// (before its handler is queued). A deadline already past ends the
// request's context now, as context.WithDeadline would: its handler then
// starts with the context done, and expire answers the timeout.
func (f *inflight) startDeadline(deadline time.Time) {
	d := time.Until(deadline)
	if d <= 0 {
		f.end(context.DeadlineExceeded)
	}
	f.timer = time.AfterFunc(max(d, 0), func() { f.end(context.DeadlineExceeded) })
}
