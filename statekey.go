package mcpfleet

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
)

// StateKeyEnv is the environment variable of --state-key.
const StateKeyEnv = "MCPFLEET_STATE_KEY"

// ErrNoStateKey is returned when a worker on an external NATS has no
// requestState key: neither StateKey in its options nor
// mcp.ServerOptions.StateKey. A random key per worker would make every
// multi-round request whose retry lands on another worker fail. It wraps
// ErrInvalidOptions.
var ErrNoStateKey error = &optionsError{msg: "no requestState key: every worker of a cluster must seal 2026-07-28 requestState with the same key; set " +
	StateKeyEnv + " (or --state-key) on every worker to the same base64 of 32 random bytes (openssl rand -base64 32)"}

// ParseStateKeys decodes a --state-key value: comma-separated base64
// (standard or URL alphabet, padded or not) keys of mcp.StateKeySize
// bytes. The first key seals; the others only open states sealed before
// a rotation. Errors never quote the value.
func ParseStateKeys(s string) (key []byte, old [][]byte, err error) {
	parts := strings.Split(s, ",")
	keys := make([][]byte, 0, len(parts))
	for i, p := range parts {
		k, err := decodeStateKey(strings.TrimSpace(p))
		if err != nil {
			return nil, nil, fmt.Errorf("state key %d of %d: %w", i+1, len(parts), err)
		}
		keys = append(keys, k)
	}
	return keys[0], keys[1:], nil
}

func decodeStateKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != mcp.StateKeySize {
				return nil, fmt.Errorf("must decode to %d bytes, got %d", mcp.StateKeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// installStateKey gives srv its requestState keys: key (and old) when
// set; else the server's own configured key; else, for a single process
// (shared false), the server's random key; else ErrNoStateKey. A key of
// the wrong size is an error wrapping ErrInvalidOptions (with
// mcp.SetStateKeys's message).
func installStateKey(srv *mcp.Server, key []byte, old [][]byte, shared bool) error {
	switch {
	case key != nil:
		return invalidOptions(srv.SetStateKeys(key, old...))
	case srv.StateKeyConfigured() || !shared:
		return nil
	default:
		return ErrNoStateKey
	}
}
