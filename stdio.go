package mcpfleet

import (
	"context"
	"io"
	"os"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/stdio"
)

// StdioOptions configure [RunStdio]. The zero value serves the process's
// stdin and stdout.
type StdioOptions struct {
	// In carries the client's messages (newline-delimited JSON-RPC).
	// default: os.Stdin
	In io.Reader
	// Out carries the answers and notifications; nothing else is written
	// to it.
	// default: os.Stdout
	Out io.Writer
	// StateKey (mcp.StateKeySize bytes) seals 2026-07-28 requestState;
	// nil keeps the server's key (random unless configured): one process
	// needs no shared key. A key of another size is invalid.
	// default: the server's key
	StateKey []byte
	// OldStateKeys still open states sealed before a rotation (with
	// StateKey only).
	// default: none
	OldStateKeys [][]byte
	// Stdio configures the transport: message cap, timeouts, drain (see
	// stdio.Options, which stdio.Serve validates; zero fields are its
	// defaults). Its Logger, which must not write to Out, defaults to
	// slog.Default().
	// default: the zero stdio.Options
	Stdio stdio.Options
}

// RunStdio serves srv to one client over In and Out until In ends (the
// requests in flight then get Stdio.DrainTimeout to finish) or ctx ends.
// opts may be nil.
func RunStdio(ctx context.Context, srv *mcp.Server, opts *StdioOptions) error {
	if srv == nil {
		return ErrNoServer
	}
	o := StdioOptions{}
	if opts != nil {
		o = *opts
	}
	if o.In == nil {
		o.In = os.Stdin
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if err := installStateKey(srv, o.StateKey, o.OldStateKeys, false); err != nil {
		return err
	}
	return stdio.Serve(ctx, srv, o.In, o.Out, &o.Stdio)
}
