package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/mcp"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// writer writes one message per line; safe for concurrent use. After a
// failed write every later write is dropped and failed reports the error.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error
}

func (w *writer) write(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = append(append(w.buf[:0], msg...), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	}
	return nil
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (s *session) write(msg []byte) {
	if err := s.out.write(msg); err != nil {
		s.log.Debug("stdio: write failed", "err", err)
	}
}

func (s *session) writeError(id protocol.ID, e *protocol.Error) {
	s.write(protocol.AppendErrorResponse(nil, id, e))
}

func (s *session) writeResult(id protocol.ID, res protocol.Result) {
	raw, err := json.Marshal(res)
	if err != nil {
		s.log.Error("stdio: marshalling a result", "err", err)
		s.writeError(id, protocol.ErrInternalFailure())
		return
	}
	s.write(protocol.AppendResponse(nil, id, raw))
}

// clientAnswer is the client's answer to a server-to-client request.
type clientAnswer struct {
	result json.RawMessage
	err    *protocol.Error
}

// outbound sends a request's notifications and server-to-client requests
// on stdout.
type outbound struct {
	s   *session
	c   *call
	era protocol.Era
}

// Notify implements mcp.Outbound: the notification goes to stdout unless
// the request was cancelled.
func (o *outbound) Notify(_ context.Context, method string, params any) error {
	o.s.mu.Lock()
	cancelled := o.c.cancelled
	o.s.mu.Unlock()
	if cancelled {
		return errors.New("stdio: the request was cancelled")
	}
	n, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return o.s.out.write(n)
}

// Call sends a server-to-client request (legacy era) and waits for the
// client's answer; when ctx ends first the client is told with
// notifications/cancelled.
func (o *outbound) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if o.era != protocol.EraLegacy {
		return nil, mcp.ErrNotSupported
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	s := o.s
	ch := make(chan clientAnswer, 1)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, errors.New("stdio: the session is ending")
	}
	s.nextOut++
	id := protocol.StringID(fmt.Sprintf("s-%d", s.nextOut))
	key := id.String()
	s.pending[key] = ch
	s.mu.Unlock()
	if err := s.out.write(protocol.AppendRequest(nil, id, method, p)); err != nil {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
		return nil, err
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		return a.result, nil
	case <-ctx.Done():
		s.mu.Lock()
		_, waiting := s.pending[key]
		delete(s.pending, key)
		s.mu.Unlock()
		if waiting {
			n, _ := protocol.EncodeNotification(protocol.NotificationCancelled,
				&protocol.CancelledParams{RequestID: id, Reason: "the server request was cancelled"})
			_ = s.out.write(n)
		}
		return nil, ctx.Err()
	}
}
