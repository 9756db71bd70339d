package app

import (
	"context"
	"crypto/rand"
	"io"

	"github.com/mcpfleet/mcpfleet/pkg/stdio"
)

// RunStdio serves the example server's handlers on in and out (the
// process's stdin and stdout) until in ends or ctx is done. Logs go to
// stderr; out carries protocol messages only.
func RunStdio(ctx context.Context, c *Config, in io.Reader, out io.Writer) error {
	log := c.Logger()
	key := make([]byte, 32)
	if c.StateKey != "" {
		k, err := parseStateKey(c.StateKey)
		if err != nil {
			return err
		}
		key = k
	} else if _, err := rand.Read(key); err != nil {
		return err
	}
	srv, err := NewExampleServer(c.Fixture, log, key)
	if err != nil {
		return err
	}
	return stdio.Serve(ctx, srv, in, out, &stdio.Options{
		Logger:         log,
		MaxLineBytes:   int(c.MaxBodyBytes),
		RequestTimeout: c.RequestTimeout,
		DrainTimeout:   c.DrainTimeout,
	})
}
