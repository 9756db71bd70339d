package stream

import "time"

// Loop is the one select loop every client stream runs, whatever its kind
// (a POST exchange attached or detached, a GET stream, a resumed stream, a
// legacy tasks/result stream (pkg/tasks/taskhttp), a
// listen stream served by its handler, a client writer): events from one
// source, keepalives, a probe, a deadline, a liveness timer, and the four
// ways a stream ends from outside (its source ended, the server stops, the
// client's request is gone, the client's writer stopped). Every field is
// optional: a nil channel or a zero duration is a case that never fires.
//
// Run reads the channel fields anew each round, so a handler may set one
// (e.g. Writer, once the writer starts). Handlers run on Run's goroutine;
// those returning bool end the loop with false, the others always end it.
type Loop[T any] struct {
	// Events are the stream's events, each handed to OnEvent; a closed
	// channel ends the loop.
	Events  <-chan T
	OnEvent func(T) bool

	// KeepAlive is the interval of OnKeepAlive; not positive: none.
	KeepAlive   time.Duration
	OnKeepAlive func() bool

	// Probe is the interval of OnProbe until StopProbe; not positive:
	// none.
	Probe   time.Duration
	OnProbe func() bool

	// Deadline, when set, ends the loop with OnDeadline (also when the
	// liveness period ran out by then too).
	Deadline   time.Time
	OnDeadline func()

	// Liveness, when positive, ends the loop with OnLost when that long
	// passes without Alive; with LivenessLater the timer runs only from
	// ArmLiveness on.
	Liveness      time.Duration
	LivenessLater bool
	OnLost        func()

	// Ended (the source ended), Stop (the server stops), Gone (the
	// client's request is over) and Writer (the client's writer stopped)
	// each end the loop, after their handler when it is set.
	Ended    <-chan struct{}
	OnEnded  func()
	Stop     <-chan struct{}
	OnStop   func()
	Gone     <-chan struct{}
	OnGone   func()
	Writer   <-chan struct{}
	OnWriter func()

	// Cases, when set, handles the events, the deadline, the liveness
	// period and the ends of Ended, Gone and Writer in place of OnEvent,
	// OnDeadline, OnLost, OnEnded, OnGone and OnWriter: a stream that
	// keeps its state in a struct saves a closure for each.
	Cases LoopCases[T]

	// wake fires at the deadline or when liveness runs out (liveAt, while
	// liveOn), the earlier: one timer for both. Alive only moves liveAt;
	// a wake before it is set again.
	wake     *time.Timer
	liveAt   time.Time
	liveOn   bool
	probeOff bool
}

// LoopCases handles a Loop's cases in one value (see Loop.Cases).
type LoopCases[T any] interface {
	OnEvent(T) bool
	OnDeadline()
	OnLost()
	OnEnded()
	OnGone()
	OnWriter()
}

// Run runs the loop until a handler ends it.
func (l *Loop[T]) Run() {
	var keepalive <-chan time.Time
	if l.KeepAlive > 0 {
		t := time.NewTicker(l.KeepAlive)
		defer t.Stop()
		keepalive = t.C
	}
	var probeTicker *time.Ticker
	if l.Probe > 0 {
		probeTicker = time.NewTicker(l.Probe)
		defer probeTicker.Stop()
	}
	var wake <-chan time.Time
	if !l.Deadline.IsZero() || l.Liveness > 0 {
		if l.Liveness > 0 && !l.LivenessLater {
			l.liveOn, l.liveAt = true, time.Now().Add(l.Liveness)
		}
		d, ok := l.untilWake()
		l.wake = time.NewTimer(d)
		if !ok {
			l.wake.Stop() // until ArmLiveness
		}
		defer l.wake.Stop()
		wake = l.wake.C
	}
	for {
		var probe <-chan time.Time
		if probeTicker != nil && !l.probeOff {
			probe = probeTicker.C
		}
		select {
		case ev, ok := <-l.Events:
			if !ok || !l.event(ev) {
				return
			}
		case <-keepalive:
			if !l.OnKeepAlive() {
				return
			}
		case <-probe:
			if !l.OnProbe() {
				return
			}
		case <-wake:
			now := time.Now()
			if !l.Deadline.IsZero() && !now.Before(l.Deadline) {
				l.end(l.OnDeadline, LoopCases[T].OnDeadline)
				return
			}
			if l.liveOn && !now.Before(l.liveAt) {
				l.end(l.OnLost, LoopCases[T].OnLost)
				return
			}
			if d, ok := l.untilWake(); ok { // Alive moved liveAt on
				l.wake.Reset(d)
			}
		case <-l.Ended:
			l.end(l.OnEnded, LoopCases[T].OnEnded)
			return
		case <-l.Stop:
			run(l.OnStop)
			return
		case <-l.Gone:
			l.end(l.OnGone, LoopCases[T].OnGone)
			return
		case <-l.Writer:
			l.end(l.OnWriter, LoopCases[T].OnWriter)
			return
		}
	}
}

// event hands ev to Cases or OnEvent.
func (l *Loop[T]) event(ev T) bool {
	if l.Cases != nil {
		return l.Cases.OnEvent(ev)
	}
	return l.OnEvent(ev)
}

// end runs the handler of an ending case: Cases' method c, or f.
func (l *Loop[T]) end(f func(), c func(LoopCases[T])) {
	if l.Cases != nil {
		c(l.Cases)
		return
	}
	run(f)
}

func run(f func()) {
	if f != nil {
		f()
	}
}

// untilWake returns how long until the deadline or, while liveness is
// on, until it runs out, the earlier; ok is false for neither.
func (l *Loop[T]) untilWake() (d time.Duration, ok bool) {
	at := l.Deadline
	if l.liveOn && (at.IsZero() || l.liveAt.Before(at)) {
		at = l.liveAt
	}
	if at.IsZero() {
		return 0, false
	}
	return time.Until(at), true
}

// Alive restarts the liveness period (from a handler).
func (l *Loop[T]) Alive() {
	if l.wake != nil && l.Liveness > 0 {
		l.liveAt = time.Now().Add(l.Liveness)
	}
}

// ArmLiveness restarts the liveness period and lets it end the loop (from
// a handler, with LivenessLater).
func (l *Loop[T]) ArmLiveness() {
	if l.wake != nil && l.Liveness > 0 {
		l.liveOn, l.liveAt = true, time.Now().Add(l.Liveness)
		if d, ok := l.untilWake(); ok {
			l.wake.Reset(d)
		}
	}
}

// StopProbe ends the OnProbe calls (from a handler).
func (l *Loop[T]) StopProbe() { l.probeOff = true }
