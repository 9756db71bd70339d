package worker

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// The cancellations kept for requests not taken yet: each is found once,
// within earlyCancelTTL; the expired go, and the oldest past
// maxEarlyCancels; a key noted again outlives its first note.
func TestEarlyCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &Worker{}
		w.noteEarlyCancel("a")
		if !w.cancelledEarly("a") {
			t.Fatal("a cancellation just noted is not found")
		}
		if w.cancelledEarly("a") {
			t.Fatal("a cancellation is found twice")
		}

		w.noteEarlyCancel("old")
		time.Sleep(earlyCancelTTL / 2)
		w.noteEarlyCancel("again")
		w.noteEarlyCancel("old") // noted again: its first note expires first
		time.Sleep(earlyCancelTTL/2 + time.Millisecond)
		w.noteEarlyCancel("new") // pops the first note of "old"
		if !w.cancelledEarly("old") {
			t.Error("a key noted again was dropped with its first note")
		}
		time.Sleep(earlyCancelTTL + time.Millisecond)
		if w.cancelledEarly("again") {
			t.Error("an expired cancellation is found")
		}
		w.noteEarlyCancel("x") // pops the expired
		if _, ok := w.early.by["new"]; ok {
			t.Error("an expired cancellation is still kept")
		}

		for i := range 3 * maxEarlyCancels {
			w.noteEarlyCancel(strconv.Itoa(i))
		}
		if n := len(w.early.by); n > maxEarlyCancels {
			t.Errorf("%d cancellations kept, want at most %d", n, maxEarlyCancels)
		}
		if n := len(w.early.order) - w.early.head; n > maxEarlyCancels {
			t.Errorf("%d notes in order, want at most %d", n, maxEarlyCancels)
		}
		if !w.cancelledEarly(strconv.Itoa(3*maxEarlyCancels - 1)) {
			t.Error("the newest cancellation was dropped")
		}
		if w.cancelledEarly("0") {
			t.Error("the oldest cancellation was kept past the cap")
		}
	})
}
