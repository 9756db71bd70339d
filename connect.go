package mcpfleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultConnectTimeout is how long the first connection to NATS and to
// Redis is retried when none is configured.
const DefaultConnectTimeout = time.Minute

// permanent marks a connection error that waiting cannot mend (a bad URL,
// refused credentials): retryConnect returns it at once.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retryConnect calls connect until it succeeds, ctx ends or timeout has
// passed since the first attempt (zero: DefaultConnectTimeout; negative:
// one attempt), waiting between attempts with a backoff that doubles from
// 250 ms to 5 s, jittered; each failure is logged with the next wait. A
// service started beside its NATS or Redis (compose, Kubernetes) comes up
// once they do, instead of exiting.
func retryConnect(ctx context.Context, log *slog.Logger, what string, timeout time.Duration, connect func(context.Context) error) error {
	if timeout == 0 {
		timeout = DefaultConnectTimeout
	}
	start := time.Now()
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := connect(ctx)
		var perm permanent
		if errors.As(err, &perm) {
			return perm.error
		}
		if err == nil {
			if attempt > 1 {
				log.Info("connected", "to", what, "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		left := timeout - time.Since(start)
		if timeout < 0 || left <= 0 || ctx.Err() != nil {
			if attempt > 1 {
				return fmt.Errorf("%w (gave up after %d attempts in %s)", err, attempt, time.Since(start).Round(time.Second))
			}
			return err
		}
		d := min(wait/2+rand.N(wait/2+1), left)
		log.Warn("cannot connect yet; retrying", "to", what, "attempt", attempt, "retry_in", d.Round(time.Millisecond), "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// natsRetryable marks a NATS connection error permanent unless waiting
// may mend it: no server reachable yet, or a timeout.
func natsRetryable(err error) error {
	if err == nil || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return err
	}
	return permanent{err}
}
