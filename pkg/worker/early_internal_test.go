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
		w.noteEarlyCancel("a", 10)
		if !w.cancelledEarly("a", 5) {
			t.Fatal("a cancellation just noted is not found")
		}
		if w.cancelledEarly("a", 5) {
			t.Fatal("a cancellation is found twice")
		}
		w.noteEarlyCancel("later", 10)
		if w.cancelledEarly("later", 11) {
			t.Fatal("a cancellation ends a request queued after it")
		}

		w.noteEarlyCancel("old", 10)
		time.Sleep(earlyCancelTTL / 2)
		w.noteEarlyCancel("again", 10)
		w.noteEarlyCancel("old", 10) // noted again: its first note expires first
		time.Sleep(earlyCancelTTL/2 + time.Millisecond)
		w.noteEarlyCancel("new", 10) // pops the first note of "old"
		if !w.cancelledEarly("old", 5) {
			t.Error("a key noted again was dropped with its first note")
		}
		time.Sleep(earlyCancelTTL + time.Millisecond)
		if w.cancelledEarly("again", 5) {
			t.Error("an expired cancellation is found")
		}
		w.noteEarlyCancel("x", 10) // pops the expired
		if _, ok := w.early.by["new"]; ok {
			t.Error("an expired cancellation is still kept")
		}

		for i := range 3 * maxEarlyCancels {
			w.noteEarlyCancel(strconv.Itoa(i), 10)
		}
		if n := len(w.early.by); n > maxEarlyCancels {
			t.Errorf("%d cancellations kept, want at most %d", n, maxEarlyCancels)
		}
		if n := len(w.early.order) - w.early.head; n > maxEarlyCancels {
			t.Errorf("%d notes in order, want at most %d", n, maxEarlyCancels)
		}
		if !w.cancelledEarly(strconv.Itoa(3*maxEarlyCancels-1), 5) {
			t.Error("the newest cancellation was dropped")
		}
		if w.cancelledEarly("0", 5) {
			t.Error("the oldest cancellation was kept past the cap")
		}
	})
}
