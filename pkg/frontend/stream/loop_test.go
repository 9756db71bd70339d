package stream

import (
	"testing"
	"testing/synctest"
	"time"
)

// loopEnd is how a Loop run ended and when (on synctest's fake clock).
type loopEnd struct {
	how   string
	after time.Duration
}

// runLoop runs l with handlers that record how it ends, events that call
// onEvent, and returns the end.
func runLoop(l *Loop[int], onEvent func(l *Loop[int], ev int)) loopEnd {
	start := time.Now()
	var how string
	l.OnDeadline = func() { how = "deadline" }
	l.OnLost = func() { how = "lost" }
	l.OnEvent = func(ev int) bool {
		if onEvent != nil {
			onEvent(l, ev)
		}
		return true
	}
	l.Run()
	return loopEnd{how, time.Since(start)}
}

// TestLoopTimers: the deadline and the liveness period (one timer for
// both) end the loop at their time, the earlier first; Alive restarts the
// liveness period, ArmLiveness starts it with LivenessLater, and a loop
// with neither never ends by time.
func TestLoopTimers(t *testing.T) {
	const s = time.Second
	// events sends one event at each of the times given (since the start).
	events := func(at ...time.Duration) <-chan int {
		ch := make(chan int)
		go func() {
			start := time.Now()
			for i, d := range at {
				time.Sleep(d - time.Since(start))
				ch <- i
			}
		}()
		return ch
	}
	for _, tt := range []struct {
		name     string
		loop     Loop[int]
		events   []time.Duration
		arm      int // the event that calls ArmLiveness (-1: none)
		want     loopEnd
		useAlive bool
	}{
		{name: "deadline", loop: Loop[int]{Deadline: time.Now().Add(0)}, arm: -1, want: loopEnd{"deadline", 0}},
		{name: "deadline only", loop: Loop[int]{}, arm: -1, want: loopEnd{"deadline", 5 * s}},
		{name: "liveness before deadline", loop: Loop[int]{Liveness: 2 * s}, arm: -1, want: loopEnd{"lost", 2 * s}},
		{name: "deadline before liveness", loop: Loop[int]{Liveness: 9 * s}, arm: -1, want: loopEnd{"deadline", 5 * s}},
		{name: "alive moves liveness", loop: Loop[int]{Liveness: 2 * s}, events: []time.Duration{1 * s, 2500 * time.Millisecond}, useAlive: true, arm: -1,
			want: loopEnd{"lost", 4500 * time.Millisecond}},
		{name: "alive until the deadline", loop: Loop[int]{Liveness: 2 * s}, events: []time.Duration{1 * s, 2 * s, 3 * s, 4 * s}, useAlive: true, arm: -1,
			want: loopEnd{"deadline", 5 * s}},
		{name: "events without alive", loop: Loop[int]{Liveness: 2 * s}, events: []time.Duration{1 * s, 1500 * time.Millisecond}, arm: -1,
			want: loopEnd{"lost", 2 * s}},
		{name: "liveness later", loop: Loop[int]{Liveness: 2 * s, LivenessLater: true}, arm: -1, want: loopEnd{"deadline", 5 * s}},
		{name: "alive does not arm", loop: Loop[int]{Liveness: 2 * s, LivenessLater: true}, events: []time.Duration{1 * s}, useAlive: true, arm: -1,
			want: loopEnd{"deadline", 5 * s}},
		{name: "armed", loop: Loop[int]{Liveness: 2 * s, LivenessLater: true}, events: []time.Duration{1 * s}, arm: 0, want: loopEnd{"lost", 3 * s}},
		{name: "armed, no deadline", loop: Loop[int]{Liveness: 2 * s, LivenessLater: true, Deadline: time.Time{}}, events: []time.Duration{3 * s}, arm: 0,
			want: loopEnd{"lost", 5 * s}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := tt.loop
				switch {
				case tt.name == "deadline":
					l.Deadline = time.Now().Add(-time.Second) // already past
				case tt.name != "armed, no deadline":
					l.Deadline = time.Now().Add(5 * s)
				}
				l.Events = events(tt.events...)
				got := runLoop(&l, func(l *Loop[int], ev int) {
					if tt.useAlive {
						l.Alive()
					}
					if ev == tt.arm {
						l.ArmLiveness()
					}
				})
				if got != tt.want {
					t.Errorf("ended by %s after %v, want %s after %v", got.how, got.after, tt.want.how, tt.want.after)
				}
			})
		})
	}
}

// TestLoopNoTimer: without a deadline or a liveness period in force, only
// an event source ends the loop, however long it waits.
func TestLoopNoTimer(t *testing.T) {
	for _, l := range []*Loop[int]{{}, {Liveness: time.Second, LivenessLater: true}} {
		synctest.Test(t, func(t *testing.T) {
			ended := make(chan struct{})
			var how string
			l.Ended = ended
			l.OnEnded = func() { how = "ended" }
			l.OnLost = func() { how = "lost" }
			l.OnDeadline = func() { how = "deadline" }
			done := make(chan struct{})
			go func() {
				defer close(done)
				l.Run()
			}()
			time.Sleep(24 * time.Hour) // the fake clock: a timer would have fired
			synctest.Wait()
			select {
			case <-done:
				t.Fatalf("the loop ended by itself (%s)", how)
			default:
			}
			close(ended)
			<-done
			if how != "ended" {
				t.Errorf("ended by %q, want the source's end", how)
			}
		})
	}
}

// recordCases is a LoopCases that records what ended the loop.
type recordCases struct {
	events int
	ended  string
}

func (c *recordCases) OnEvent(int) bool { c.events++; return c.events < 3 }
func (c *recordCases) OnDeadline()      { c.ended = "deadline" }
func (c *recordCases) OnLost()          { c.ended = "lost" }
func (c *recordCases) OnEnded()         { c.ended = "ended" }
func (c *recordCases) OnGone()          { c.ended = "gone" }
func (c *recordCases) OnWriter()        { c.ended = "writer" }

// TestLoopCases: with Cases set, its methods handle every case they
// cover, and the On* funcs are not called.
func TestLoopCases(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	never := func() { t.Error("an On* func ran with Cases set") }
	for _, tt := range []struct {
		want string
		set  func(l *Loop[int])
	}{
		{"deadline", func(l *Loop[int]) { l.Deadline = time.Now().Add(time.Second) }},
		{"lost", func(l *Loop[int]) { l.Liveness = time.Second }},
		{"ended", func(l *Loop[int]) { l.Ended = closed }},
		{"gone", func(l *Loop[int]) { l.Gone = closed }},
		{"writer", func(l *Loop[int]) { l.Writer = closed }},
		{"events", func(l *Loop[int]) {
			ch := make(chan int, 3)
			ch <- 1
			ch <- 2
			ch <- 3
			l.Events = ch
		}},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := &recordCases{}
			l := &Loop[int]{Cases: c, OnEvent: func(int) bool { never(); return false },
				OnDeadline: never, OnLost: never, OnEnded: never, OnGone: never, OnWriter: never}
			tt.set(l)
			l.Run()
			got := c.ended
			if tt.want == "events" && c.events == 3 && got == "" {
				got = "events"
			}
			if got != tt.want {
				t.Errorf("ended by %q (%d events), want %s", got, c.events, tt.want)
			}
		})
	}
}
