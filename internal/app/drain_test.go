package app

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// The drain grace waits for open connections only: none open, no wait;
// one open, until the grace ends or it closes.
func TestOpenConnsWaitNone(t *testing.T) {
	var o openConns
	start := time.Now()
	o.waitNone(context.Background(), time.Hour)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("no connection open, yet waited %s", d)
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateActive)
	start = time.Now()
	o.waitNone(context.Background(), 100*time.Millisecond)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("a connection open, yet the grace ended after %s", d)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		o.track(nil, http.StateClosed)
	}()
	start = time.Now()
	o.waitNone(context.Background(), time.Hour)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the connection closed, yet waited %s", d)
	}
	o.track(nil, http.StateNew)
	o.track(nil, http.StateHijacked) // a listen stream taken over by the hub
	if n := o.n.Load(); n != 0 {
		t.Fatalf("%d connections counted after a hijack", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.track(nil, http.StateNew)
	start = time.Now()
	o.waitNone(ctx, time.Hour)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a cancelled drain waited %s", d)
	}
}
