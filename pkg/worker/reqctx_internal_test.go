package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request's context reports its deadline, ends with DeadlineExceeded
// (its Err and its cause) when the deadline's end comes, and otherwise
// with Canceled and the cause it was cancelled with; a context derived
// from it ends with it, its cause the request's.
func TestRequestCtx(t *testing.T) {
	dl := time.Now().Add(time.Hour)
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")

	ctx, cancel := newRequestCtx(parent, dl)
	if got, ok := ctx.Deadline(); !ok || !got.Equal(dl) {
		t.Errorf("Deadline = %v, %v; want %v, true", got, ok, dl)
	}
	if ctx.Value(key{}) != "v" {
		t.Errorf("Value: the parent's values are lost")
	}
	if ctx.Err() != nil || context.Cause(ctx) != nil {
		t.Fatalf("a new request's context is done: %v", ctx.Err())
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	sub, subStop := context.WithTimeout(ctx, 2*time.Hour) // later than the request's: the request's deadline holds
	defer subStop()
	if got, _ := sub.Deadline(); !got.Equal(dl) {
		t.Errorf("a derived context's deadline = %v, want the request's %v", got, dl)
	}
	cancel(context.DeadlineExceeded) // as the deadline's timer does
	cancel(errors.New("later"))      // the first cause stays
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", ctx.Err())
	}
	if c := context.Cause(ctx); c != context.DeadlineExceeded {
		t.Errorf("Cause = %v, want DeadlineExceeded", c)
	}
	for _, c := range []context.Context{child, sub} {
		<-c.Done()
		if cause := context.Cause(c); cause != context.DeadlineExceeded {
			t.Errorf("a derived context's cause = %v, want DeadlineExceeded", cause)
		}
	}

	ctx, cancel = newRequestCtx(parent, dl)
	reason := errors.New("cancelled by the client")
	cancel(reason)
	if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != reason {
		t.Errorf("after a cancel: Err %v, cause %v; want Canceled, %v", ctx.Err(), context.Cause(ctx), reason)
	}
}
