package worker

import (
	"time"
)

// A request that waits in msgs (pool_lead.go) gets no heartbeat: the
// worker sends them for the requests in its books, and a queued request
// is not in them yet. Its frontend, which reports a worker silent for its
// worker timeout (frontend.Options.WorkerTimeout, 4 s by default) as
// lost, hears nothing while it waits. So a request taken from msgs after
// waiting maxQueueWait or more is not run: it is answered "worker busy"
// at once, as a request past MaxInFlight is, and its client may retry.
// Requests wait that long only when the worker gets less CPU than its
// requests need (leaders are added for handlers that run long and for
// backlogs); the bound then sheds the oldest, whose clients have waited
// longest, rather than running them after their frontend gave up on
// them. Shutdown sheds the same way the requests it finds in msgs.
//
// The wait is not measured per message (nats.go puts them in msgs
// itself): a watcher marks, every queueTick, how many requests had come
// into msgs by then (taken plus queued: msgs is first in, first out).
// A request whose rank in msgs is at most the mark of a tick maxQueueWait
// ago or older came in before that tick: it has waited maxQueueWait at
// least. A request is first marked at the tick after it came in, and
// that mark is found old enough at the tick maxQueueWait later (or the
// next one, ticks being late by a little): a request is shed once it has
// waited maxQueueWait plus up to two ticks (1.2 s by default; more when
// the watcher itself waits for a CPU). With the defaults a request is
// then silent for at most about 1.2 s plus a HeartbeatInterval (1 s)
// before its first heartbeat: 2.2 s, under the frontend's 4 s (a
// HeartbeatInterval past about 2.7 s would not leave that margin).
//
// Not early either, within a few ranks: the marks only ever undercount
// (a request taken between the watcher's two reads is counted in
// neither), but ranks are given in the order the leaders take requests
// right after their receive, which two leaders may swap: a request may
// take the rank of one received just before it by another leader, when
// that leader was preempted between its receive and its rank.

const (
	// maxQueueWait is how long a request may wait in msgs and still run.
	maxQueueWait = time.Second
	// queueTick is how often the watcher marks msgs (at most).
	queueTick = 100 * time.Millisecond
)

// queueMark is what the watcher saw at one tick: by at, n requests had
// come into msgs.
type queueMark struct {
	at time.Time
	n  uint64
}

// startWatch starts the watcher of msgs, which ends with reading.
func (p *handlerPool) startWatch() {
	p.watchDone = make(chan struct{})
	go p.watch() // owned by the pool: ends when endMsgs closes; endReading waits for it
}

// watch marks msgs every tick (maxQueueWait/10, between a millisecond
// and queueTick) until reading ends, and sets stale to the mark of the
// newest tick at least maxQueueWait old.
func (p *handlerPool) watch() {
	defer close(p.watchDone)
	wait := time.Duration(p.maxWait.Load())
	t := time.NewTicker(watchTick(wait))
	defer t.Stop()
	var marks []queueMark // oldest first
	for {
		select {
		case <-p.endMsgs:
			return
		case <-t.C:
		}
		if d := time.Duration(p.maxWait.Load()); d != wait {
			wait = d // set by a test
			t.Reset(watchTick(wait))
		}
		// taken first: a request taken between the reads is counted in
		// neither, never twice.
		n := p.taken.Load() + uint64(len(p.msgs))
		now := time.Now()
		if len(p.msgs) == 0 {
			// Nothing waits: every request to come ranks past every
			// mark (an idle worker keeps none).
			marks = marks[:0]
			continue
		}
		marks = append(marks, queueMark{at: now, n: n})
		p.marked.Store(n)
		i := 0
		for i < len(marks) && now.Sub(marks[i].at) >= wait {
			if marks[i].n > p.stale.Load() {
				p.stale.Store(marks[i].n)
			}
			i++
		}
		marks = append(marks[:0], marks[i:]...)
	}
}

// watchTick is the watcher's period for a bound of wait.
func watchTick(wait time.Duration) time.Duration {
	return min(max(wait/10, time.Millisecond), queueTick)
}

// queued is how a request came out of msgs: its rank there (1 for the
// first request the pool ever read; 0 for a request that did not wait in
// msgs, on a bus that runs handlers inline) and whether it waited there
// maxQueueWait or more.
type queued struct {
	rank uint64
	late bool
}

// took ranks the request a leader has just taken from msgs (it is called
// right after the receive).
func (p *handlerPool) took() queued {
	r := p.taken.Add(1)
	return queued{rank: r, late: r <= p.stale.Load()}
}

// queuedMark is the rank of the newest request in msgs now (0 when msgs
// is empty or there is none: nothing waits that a cancellation could
// reach). Read by onCancel: the requests ranked up to it came before.
func (p *handlerPool) queuedMark() uint64 {
	if p.msgs == nil {
		return 0
	}
	n := uint64(len(p.msgs))
	if n == 0 {
		return 0
	}
	return p.taken.Load() + n
}
