package mcpfleettest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// Stream is an open stream of change notifications (see [Client.Listen]).
// Its reader goroutine is stopped by Close, by the end of Listen's
// context, by the client's Close, or by the server ending the stream.
type Stream struct {
	c      *Client
	filter protocol.SubscriptionFilter
	ctx    context.Context
	cancel context.CancelFunc
	legacy bool

	mu    sync.Mutex
	queue []Notification
	err   error         // why the stream ended, once done is closed
	wake  chan struct{} // signalled when the queue grows
	done  chan struct{} // closed when the reader returned
}

// Listen opens a stream of the change notifications filter asks for,
// active when Listen returns: what the server raises afterwards reaches
// it. It lives until ctx ends, Close, or the client's Close.
//
// Modern: a subscriptions/listen stream; Filter returns the filter the
// server acknowledged. Legacy: each filter.ResourceSubscriptions URI is
// subscribed (resources/subscribe), then the session's GET stream is
// opened; it carries the list_changed notifications the filter asks for,
// resources/updated of every URI the session subscribed to, and the other
// notifications of the session; server-to-client requests on it are
// answered with the option handlers. A session has one GET stream, so a
// legacy client has at most one open Stream (opening a second is an
// error). Legacy subscriptions belong to the session and outlive the
// stream; end them with Unsubscribe.
func (c *Client) Listen(ctx context.Context, filter *protocol.SubscriptionFilter) (*Stream, error) {
	if filter == nil {
		return nil, errors.New("mcpfleettest: Listen needs a filter")
	}
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel)
	s := &Stream{c: c, filter: *filter, ctx: sctx, cancel: func() { stop(); cancel() },
		legacy: c.era == protocol.EraLegacy, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		s.cancel()
		return nil, ErrClosed
	case s.legacy && c.getOpen:
		c.mu.Unlock()
		s.cancel()
		return nil, errors.New("mcpfleettest: this legacy session already has a Listen stream (a session has one GET stream): close it first, or ask for everything in one filter")
	}
	c.streams[s] = struct{}{}
	if s.legacy {
		c.getOpen = true
	}
	c.mu.Unlock()
	body, events, err := s.open()
	if err != nil {
		s.cancel()
		s.forget()
		s.err = err
		close(s.done) // a concurrent Client.Close may wait for it
		return nil, err
	}
	go s.read(body, events)
	return s, nil
}

// open starts the stream: the legacy GET, or the modern listen request
// up to its acknowledgement.
func (s *Stream) open() (io.ReadCloser, *sseReader, error) {
	c := s.c
	method := protocol.MethodSubscriptionsListen
	var req *http.Request
	if s.legacy {
		method = "GET stream"
		s.filter.TaskIDs = nil
		for _, uri := range s.filter.ResourceSubscriptions {
			if err := c.Subscribe(s.ctx, uri); err != nil {
				return nil, nil, err
			}
		}
		var err error
		if req, err = http.NewRequestWithContext(s.ctx, http.MethodGet, c.url, nil); err != nil {
			return nil, nil, err
		}
		c.setHeaders(req, "")
	} else {
		p, err := c.buildParams(method, &protocol.ListenParams{Notifications: &s.filter}, &callOptions{})
		if err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(p)
		id := protocol.StringID(c.prefix + "-listen-" + strconv.FormatInt(c.nextID.Add(1), 10))
		if req, err = http.NewRequestWithContext(s.ctx, http.MethodPost, c.url, strings.NewReader(string(protocol.AppendRequest(nil, id, method, b)))); err != nil {
			return nil, nil, err
		}
		c.setHeaders(req, method)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpfleettest: %s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK || !isSSE(resp.Header) {
		defer resp.Body.Close()
		se := statusError(method, resp)
		if resp.StatusCode == http.StatusOK && se.RPC != nil {
			return nil, nil, se.RPC
		}
		return nil, nil, se
	}
	events := newSSEReader(resp.Body)
	if s.legacy {
		return resp.Body, events, nil
	}
	for { // the acknowledgement comes first
		ev, err := events.next()
		if err != nil {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("mcpfleettest: %s: no acknowledgement: %w", method, err)
		}
		if ev.data == "" {
			continue
		}
		var ack struct {
			Method string                          `json:"method"`
			Params protocol.SubscriptionsAckParams `json:"params"`
			Error  *protocol.Error                 `json:"error"`
		}
		switch err := json.Unmarshal([]byte(ev.data), &ack); {
		case err == nil && ack.Method == protocol.NotificationSubscriptionsAck:
			s.filter = ack.Params.Notifications
			return resp.Body, events, nil
		case err == nil && ack.Error != nil:
			resp.Body.Close()
			return nil, nil, ack.Error
		}
		resp.Body.Close()
		return nil, nil, fmt.Errorf("mcpfleettest: %s: the first message is not the acknowledgement: %s", method, truncate([]byte(ev.data)))
	}
}

// read queues the stream's notifications until it ends.
func (s *Stream) read(body io.ReadCloser, events *sseReader) {
	var err error
	defer func() {
		body.Close()
		if err == nil || s.ctx.Err() != nil {
			err = io.EOF
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		s.cancel()
		s.forget()
		close(s.done)
	}()
	for {
		var ev sseEvent
		if ev, err = events.next(); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return
		}
		if ev.data == "" {
			continue
		}
		m, derr := protocol.Decode([]byte(ev.data), 0)
		switch {
		case derr != nil:
			err = fmt.Errorf("mcpfleettest: the server sent an invalid message on a stream (%v): %s", derr, truncate([]byte(ev.data)))
			return
		case m.Kind() == protocol.KindRequest && s.legacy:
			if aerr := s.c.answer(s.ctx, m); aerr != nil {
				err = aerr
				return
			}
		case m.Kind() == protocol.KindResponse:
			if m.Error != nil {
				err = m.Error
			}
			return // the final result of a listen stream
		case m.Kind() == protocol.KindNotification && s.wants(m.Method):
			s.mu.Lock()
			s.queue = append(s.queue, Notification{Method: m.Method, Params: m.Params})
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// wants filters a legacy GET stream's list_changed notifications.
func (s *Stream) wants(method string) bool {
	if !s.legacy {
		return true
	}
	switch method {
	case protocol.NotificationToolsListChanged:
		return s.filter.ToolsListChanged
	case protocol.NotificationPromptsListChanged:
		return s.filter.PromptsListChanged
	case protocol.NotificationResourcesListChanged:
		return s.filter.ResourcesListChanged
	}
	return true
}

func (s *Stream) forget() {
	s.c.mu.Lock()
	delete(s.c.streams, s)
	if s.legacy {
		s.c.getOpen = false
	}
	s.c.mu.Unlock()
}

// Filter returns what the stream delivers: the acknowledged filter
// (modern) or the one asked for (legacy, without task ids).
func (s *Stream) Filter() protocol.SubscriptionFilter {
	f := s.filter
	f.ResourceSubscriptions = slices.Clone(f.ResourceSubscriptions)
	f.TaskIDs = slices.Clone(f.TaskIDs)
	return f
}

// Next returns the next notification, waiting until one arrives or ctx
// ends (ctx.Err()). Once the stream has ended and its notifications have
// been returned, it returns io.EOF, or the error that ended it.
func (s *Stream) Next(ctx context.Context) (Notification, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			n := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.done:
			s.mu.Lock()
			empty, err := len(s.queue) == 0, s.err
			s.mu.Unlock()
			if empty {
				return Notification{}, err
			}
		case <-ctx.Done():
			return Notification{}, ctx.Err()
		}
	}
}

// WaitFor returns the next notification of the given method, skipping
// others, as Next does.
func (s *Stream) WaitFor(ctx context.Context, method string) (Notification, error) {
	for {
		n, err := s.Next(ctx)
		if err != nil || n.Method == method {
			return n, err
		}
	}
}

// Close ends the stream and waits for its reader to stop (an option
// handler answering a server-to-client request on it gets a cancelled
// context). Notifications already received are still returned by Next.
// It is idempotent.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, data string
	retry    time.Duration
}

// sseReader reads server-sent events.
type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBody)
	return &sseReader{sc: sc}
}

// next returns the next event (comments skipped), or io.EOF.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	dirty := false
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if dirty {
				ev.data = strings.Join(data, "\n")
				return ev, nil
			}
			continue
		case line[0] == ':':
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		dirty = true
		switch field {
		case "id":
			ev.id = value
		case "data":
			data = append(data, value)
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
				ev.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}
