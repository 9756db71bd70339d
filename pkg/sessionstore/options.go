package sessionstore

import (
	"context"
	"fmt"
	"time"
)

// Pinger is an optional capability of a [Store]: Ping reports whether the
// backend is reachable, for readiness probes. Check for it with a type
// assertion; both [Memory] and [Redis] implement it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// resolve applies the defaults to opts (nil means all defaults) and
// validates the result.
func resolve(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TTL < 0 {
		return o, fmt.Errorf("%w: negative TTL %v", ErrInvalidConfig, o.TTL)
	}
	if o.MaxEvents < 0 {
		return o, fmt.Errorf("%w: negative MaxEvents %d", ErrInvalidConfig, o.MaxEvents)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionBytes == 0 {
		o.MaxSessionBytes = DefaultMaxSessionBytes
	}
	return o, nil
}

// nowMilli is the current time at the precision stores keep: UTC,
// milliseconds, no monotonic reading.
func nowMilli() time.Time {
	return time.UnixMilli(time.Now().UnixMilli()).UTC()
}
