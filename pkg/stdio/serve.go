package stdio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
	"github.com/mcpfleet/mcpfleet/pkg/sessionstore"
)

// forever is the lifetime of what the private store keeps for the process
// (the session record, a claim): it ends with the process, or with End.
const forever = 100 * 365 * 24 * time.Hour

// readerGrace is how long Serve waits for its reader goroutine once it has
// cancelled it.
const readerGrace = 100 * time.Millisecond

// Serve serves srv on r and w until r ends (EOF: the client closed stdin)
// or ctx is done, then lets requests in flight finish within
// DrainTimeout, ends listen streams with their result, and returns. It
// returns nil at the end of the input, ctx's error when ctx ended it, an
// error wrapping ErrInvalidOptions (before reading anything) for invalid
// opts, and the error of a failed read or write otherwise. srv's change
// events go to this client while Serve runs (srv.SetEvents).
func Serve(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer, opts *Options) error {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	mem, err := sessionstore.NewMemory(&sessionstore.Options{TTL: forever, MaxSessions: -1, MaxSessionBytes: -1})
	if err != nil {
		return fmt.Errorf("stdio: %w", err)
	}
	defer func() { _ = mem.Close(context.WithoutCancel(ctx)) }() // returns at once: it only stops the janitor
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newSession(ctx, srv, &o, &writer{w: w}, mem)
	srv.SetEvents(s)
	defer srv.SetEvents(nil)

	lines := make(chan lineOrErr)
	readerDone := make(chan struct{})
	go readLines(ctx, newLineReader(r, o.MaxLineBytes), lines, readerDone) // owned by Serve: ends at EOF, on a read error, or with ctx

	result := s.serveLines(ctx, lines)
	s.finish(result == nil)
	cancel()
	// The reader goroutine ends with ctx unless it is blocked in a read
	// that never returns (stdin left open by a parent that stopped
	// reading us): that read ends with the process.
	select {
	case <-readerDone:
	case <-time.After(readerGrace):
	}
	if result == nil {
		result = s.out.failed()
	}
	return result
}

// lineOrErr is what the reader goroutine hands to the serving loop.
type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

// readLines sends the lines of lr on lines until the input ends (the last
// item then carries the error, io.EOF at the end) or ctx is done, and
// closes done.
func readLines(ctx context.Context, lr *lineReader, lines chan<- lineOrErr, done chan<- struct{}) {
	defer close(done)
	for {
		line, tooLong, err := lr.next()
		var item lineOrErr
		if err == nil {
			item = lineOrErr{line: append([]byte(nil), line...), tooLong: tooLong}
		} else {
			item = lineOrErr{err: err}
		}
		select {
		case lines <- item:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// serveLines serves the incoming lines until the input ends (nil), ctx is
// done (its error), or a read or write fails (that error).
func (s *session) serveLines(ctx context.Context, lines <-chan lineOrErr) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case item := <-lines:
			if item.err != nil {
				if errors.Is(item.err, io.EOF) {
					return nil
				}
				return item.err
			}
			if item.tooLong {
				s.writeError(protocol.ID{}, protocol.NewError(protocol.CodeInvalidRequest,
					"invalid request: the message exceeds the %d-byte limit", s.opts.MaxLineBytes))
				continue
			}
			s.handleLine(item.line)
			if err := s.out.failed(); err != nil {
				return err
			}
		}
	}
}

// handleLine serves one incoming line.
func (s *session) handleLine(line []byte) {
	if len(trimSpace(line)) == 0 {
		return // blank lines between messages are tolerated
	}
	var head protocol.ParamsHead
	msg, headErr, err := protocol.DecodeWithHead(line, s.opts.MaxDepth, &head)
	if err != nil {
		var de *protocol.DecodeError
		if errors.As(err, &de) {
			s.writeError(de.ID, de.Err)
		} else {
			s.writeError(protocol.ID{}, protocol.ErrUnparsable())
		}
		return
	}
	if headErr != nil {
		if msg.Kind() == protocol.KindRequest {
			s.writeError(msg.ID, protocol.ErrBadParams(headErr))
		}
		return
	}
	switch msg.Kind() {
	case protocol.KindResponse:
		s.clientResponse(msg)
	case protocol.KindNotification:
		s.notification(msg, &head)
	case protocol.KindRequest:
		s.request(msg, &head)
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// finish ends the session: requests in flight get DrainTimeout to finish
// (when the input ended; none when ctx ended Serve), then are cancelled;
// listen streams end with their result.
func (s *session) finish(drain bool) {
	s.mu.Lock()
	s.closing = true
	// Nobody can answer a server-to-client request any more.
	for key, ch := range s.pending {
		delete(s.pending, key)
		ch <- clientAnswer{err: protocol.NewError(protocol.CodeInternalError, "the client closed its input")}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { // ends when every handler has returned
		s.wg.Wait()
		close(done)
	}()
	if drain {
		select {
		case <-done:
		case <-time.After(s.opts.drain()):
		}
	}
	s.mu.Lock()
	for _, c := range s.calls {
		c.cancelled = true
		c.cancel()
	}
	s.endListens()
	s.mu.Unlock()
	select {
	case <-done:
	case <-time.After(s.opts.cancelWait()):
		s.log.Warn("stdio: handlers still running after cancellation")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
