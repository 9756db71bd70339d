package frontend

import (
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/limits"
)

// The admission limits live in pkg/limits; the frontend calls f.limits
// with the request's principal (principalOf).

// newLimits builds the limiter from the frontend's options as given (zero
// is a default and negative is off there as here); sessionTTL is the
// resolved session lifetime.
func newLimits(opts *Options, sessionTTL time.Duration, log *slog.Logger) (*limits.Limiter, error) {
	return limits.New(limits.Options{
		Store:                      opts.Store,
		Logger:                     log,
		MaxStringBytes:             opts.MaxStringBytes,
		MaxArrayLen:                opts.MaxArrayLen,
		MaxInFlight:                opts.MaxInFlight,
		MaxInFlightPerSession:      opts.MaxInFlightPerSession,
		MaxInFlightPerPrincipal:    opts.MaxInFlightPerPrincipal,
		RatePerPrincipal:           opts.RatePerPrincipal,
		RateBurst:                  opts.RateBurst,
		MaxSessionsPerPrincipal:    opts.MaxSessionsPerPrincipal,
		MaxSubscriptionsPerSession: opts.MaxSubscriptionsPerSession,
		SessionTTL:                 sessionTTL,
	})
}
