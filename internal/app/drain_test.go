package app

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// returns runs waitNone in a goroutine and reports whether it returned
// before the hang guard (the behaviour under test is "returns", not how
// fast).
func returns(o *openConns, ctx context.Context, grace time.Duration, after func()) bool {
	done := make(chan struct{})
	go func() { o.waitNone(ctx, grace); close(done) }()
	if after != nil {
		after()
	}
	select {
	case <-done:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// The drain grace waits for open connections only, within the grace or
// the drain's context.
func TestOpenConnsWaitNone(t *testing.T) {
	var o openConns
	if !returns(&o, context.Background(), time.Hour, nil) {
		t.Fatal("no connection open, yet waitNone did not return")
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateActive)
	if !returns(&o, context.Background(), time.Millisecond, nil) {
		t.Fatal("a connection open: waitNone outlived its grace")
	}
	if !returns(&o, context.Background(), time.Hour, func() { o.track(nil, http.StateClosed) }) {
		t.Fatal("the connection closed, yet waitNone did not return")
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateHijacked) // a listen stream taken over by the hub
	if n := o.n.Load(); n != 0 {
		t.Fatalf("%d connections counted after a hijack", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.track(nil, http.StateNew)
	if !returns(&o, ctx, time.Hour, cancel) {
		t.Fatal("a cancelled drain: waitNone did not return")
	}
}
