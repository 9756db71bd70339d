package app

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/nats-io/nats.go"
)

// stateKeySubject is where workers share the requestState key when none is
// configured.
const stateKeySubject = "mcp.ctl.statekey"

// parseStateKey decodes --state-key (standard or URL base64 of 32 bytes).
func parseStateKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != mcp.StateKeySize {
				return nil, fmt.Errorf("--state-key must decode to %d bytes, got %d", mcp.StateKeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("--state-key is not base64")
}

// sharedStateKey returns the configured key, or else the key the workers
// already running on the bus use, or else a new one. Every worker then
// answers later workers' requests for it, so the cluster agrees on one key
// without configuration, as long as workers do not all start at the same
// instant with none running; set --state-key in production.
func sharedStateKey(nc *nats.Conn, configured string, log *slog.Logger) ([]byte, *nats.Subscription, error) {
	var key []byte
	if configured != "" {
		k, err := parseStateKey(configured)
		if err != nil {
			return nil, nil, err
		}
		key = k
	} else if m, err := nc.Request(stateKeySubject, nil, time.Second); err == nil && len(m.Data) == mcp.StateKeySize {
		key = m.Data
		log.Info("using the requestState key shared by the running workers")
	} else {
		key = mcp.RandomStateKey()
		log.Warn("no --state-key configured and no worker to share one: generated a key; set MCPFLEET_STATE_KEY on every worker so multi-round requests survive restarts")
	}
	sub, err := nc.QueueSubscribe(stateKeySubject, "statekey", func(m *nats.Msg) { _ = m.Respond(key) })
	if err != nil {
		return nil, nil, err
	}
	return key, sub, nil
}
