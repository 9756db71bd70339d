package mcpfleettest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// maxResumes bounds the resumptions (GET with Last-Event-ID) of one
// legacy request whose stream the server closed before the response.
const maxResumes = 10

// StatusError is an HTTP answer whose status is not 2xx (or not the
// one the exchange needs).
type StatusError struct {
	// Method is the JSON-RPC method (or the HTTP method) refused.
	Method     string
	StatusCode int
	// Body is the start of the answer's body.
	Body []byte
	// RPC is the JSON-RPC error the body carried, if any.
	RPC *protocol.Error
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("mcpfleettest: %s: HTTP %d %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode))
	if e.RPC != nil {
		return msg + ": " + e.RPC.Error()
	}
	if b := bytes.TrimSpace(e.Body); len(b) > 0 {
		return fmt.Sprintf("%s: %.300s", msg, b)
	}
	return msg
}

// Unwrap returns the body's JSON-RPC error.
func (e *StatusError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

func statusError(method string, resp *http.Response) *StatusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &StatusError{Method: method, StatusCode: resp.StatusCode, Body: b}
	if m, err := protocol.Decode(b, 0); err == nil && m.Error != nil {
		e.RPC = m.Error
	}
	return e
}

// roundTrip POSTs one request and reads its answer: the raw result, or
// the error.
func (c *Client) roundTrip(ctx context.Context, method string, p map[string]json.RawMessage, co *callOptions) (json.RawMessage, http.Header, error) {
	id := protocol.Int64ID(c.nextID.Add(1))
	params, err := json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(protocol.AppendRequest(nil, id, method, params)))
	if err != nil {
		return nil, nil, err
	}
	c.setHeaders(req, method)
	if c.era == protocol.EraModern {
		if name, ok := routingName(method, p); ok {
			req.Header.Set("Mcp-Name", EncodeHeaderValue(name))
		}
	}
	for k, vs := range co.header {
		req.Header[k] = vs
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, c.failed(ctx, id, fmt.Errorf("mcpfleettest: %s: %w", method, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.StatusCode == http.StatusAccepted {
		return nil, nil, statusError(method, resp)
	}
	var raw json.RawMessage
	if isSSE(resp.Header) {
		raw, err = c.readStream(ctx, method, id, resp.Body, co)
	} else {
		var b []byte
		if b, err = io.ReadAll(io.LimitReader(resp.Body, maxBody)); err == nil {
			var done bool
			raw, done, err = c.handle(ctx, method, id, b, co)
			if err == nil && !done {
				err = fmt.Errorf("mcpfleettest: %s: the answer is not the response: %s", method, truncate(b))
			}
		}
	}
	if err != nil {
		return nil, nil, c.failed(ctx, id, err)
	}
	return raw, resp.Header, nil
}

// failed returns err, first telling a legacy server that a request
// abandoned by its context is cancelled.
func (c *Client) failed(ctx context.Context, id protocol.ID, err error) error {
	if ctx.Err() != nil && c.session != "" {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = c.notify(nctx, protocol.NotificationCancelled, &protocol.CancelledParams{RequestID: id, Reason: "the caller's context ended"})
	}
	return err
}

// readStream reads a request's SSE stream until its response, resuming
// a legacy stream the server closed early.
func (c *Client) readStream(ctx context.Context, method string, id protocol.ID, body io.ReadCloser, co *callOptions) (json.RawMessage, error) {
	var lastID string
	retry := 100 * time.Millisecond
	for resumes := 0; ; resumes++ {
		events := newSSEReader(body)
		for {
			ev, err := events.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("mcpfleettest: %s: reading the stream: %w", method, err)
			}
			if ev.id != "" {
				lastID = ev.id
			}
			if ev.retry > 0 {
				retry = ev.retry
			}
			if ev.data == "" {
				continue
			}
			raw, done, err := c.handle(ctx, method, id, []byte(ev.data), co)
			if done || err != nil {
				return raw, err
			}
		}
		if c.era != protocol.EraLegacy || lastID == "" || resumes == maxResumes {
			return nil, fmt.Errorf("mcpfleettest: %s: the stream ended without a response", method)
		}
		body.Close()
		var err error
		if body, err = c.resume(ctx, method, lastID, retry); err != nil {
			return nil, err
		}
		defer body.Close()
	}
}

// resume waits retry, then reopens a legacy stream after lastID.
func (c *Client) resume(ctx context.Context, method, lastID string, retry time.Duration) (io.ReadCloser, error) {
	t := time.NewTimer(min(retry, 10*time.Second))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("mcpfleettest: %s: %w", method, ctx.Err())
	case <-t.C:
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, "")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mcpfleettest: %s: resuming the stream: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK || !isSSE(resp.Header) {
		defer resp.Body.Close()
		return nil, statusError(method+" (resuming the stream)", resp)
	}
	return resp.Body, nil
}

// handle handles one message of a request's answer; done reports the
// response (raw is its result).
func (c *Client) handle(ctx context.Context, method string, id protocol.ID, data []byte, co *callOptions) (raw json.RawMessage, done bool, err error) {
	m, err := protocol.Decode(data, 0)
	if err != nil {
		return nil, false, fmt.Errorf("mcpfleettest: %s: the server sent an invalid message (%v): %s", method, err, truncate(data))
	}
	switch m.Kind() {
	case protocol.KindResponse:
		if m.Error != nil && (m.ID == id || !m.ID.IsValid()) {
			return nil, true, m.Error
		}
		if m.ID != id {
			return nil, false, fmt.Errorf("mcpfleettest: %s: a response to request %s, not %s", method, m.ID, id)
		}
		return m.Result, true, nil
	case protocol.KindNotification:
		c.deliver(m.Method, m.Params, co)
		return nil, false, nil
	}
	if c.era == protocol.EraModern {
		return nil, false, fmt.Errorf("mcpfleettest: %s: the server sent a %s request on a 2026-07-28 stream", method, m.Method)
	}
	return nil, false, c.answer(ctx, m)
}

// deliver hands a notification of a call to the callbacks.
func (c *Client) deliver(method string, params json.RawMessage, co *callOptions) {
	switch {
	case method == protocol.NotificationProgress && (co.progress != nil || c.opts.OnProgress != nil):
		var p protocol.ProgressParams
		_ = json.Unmarshal(params, &p)
		if co.progress != nil {
			co.progress(&p)
		} else {
			c.opts.OnProgress(&p)
		}
	case method == protocol.NotificationMessage && c.opts.OnLog != nil:
		var p protocol.LoggingMessageParams
		_ = json.Unmarshal(params, &p)
		c.opts.OnLog(&p)
	case method != protocol.NotificationProgress && method != protocol.NotificationMessage && c.opts.OnNotification != nil:
		c.opts.OnNotification(Notification{Method: method, Params: params})
	}
}

// answer answers a legacy server-to-client request with a POST of the
// JSON-RPC response.
func (c *Client) answer(ctx context.Context, m *protocol.Message) error {
	res, err := c.serve(ctx, m.Method, m.Params)
	var body []byte
	if err == nil {
		var raw []byte
		if raw, err = json.Marshal(res); err == nil {
			body = protocol.AppendResponse(nil, m.ID, raw)
		}
	}
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			pe = protocol.NewError(protocol.CodeInternalError, "%v", err)
		}
		body = protocol.AppendErrorResponse(nil, m.ID, pe)
	}
	return c.post(ctx, "the answer to "+m.Method, body)
}

// Notify sends a notification to the server (legacy: on the session).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	ctx, done, err := c.enter(ctx)
	if err != nil {
		return err
	}
	defer done()
	return c.notify(ctx, method, params)
}

func (c *Client) notify(ctx context.Context, method string, params any) error {
	b, err := protocol.EncodeNotification(method, params)
	if err != nil {
		return fmt.Errorf("mcpfleettest: %s: %w", method, err)
	}
	return c.post(ctx, method, b)
}

// post sends a message that is not a request: the server answers 202.
func (c *Client) post(ctx context.Context, what string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	c.setHeaders(req, "")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("mcpfleettest: %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return statusError(what, resp)
	}
	return nil
}

// setHeaders sets the headers of the era; method is the JSON-RPC method
// of a request ("" otherwise).
func (c *Client) setHeaders(req *http.Request, method string) {
	h := req.Header
	if req.Method == http.MethodPost {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	} else {
		h.Set("Accept", "text/event-stream")
	}
	if method != protocol.MethodInitialize {
		h.Set("MCP-Protocol-Version", c.version)
	}
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
	}
	if c.era == protocol.EraModern && method != "" {
		h.Set("Mcp-Method", method)
	}
	for k, vs := range c.opts.Header {
		h[k] = vs
	}
}

// routingName returns the Mcp-Name of a modern request.
func routingName(method string, p map[string]json.RawMessage) (string, bool) {
	var key string
	switch method {
	case protocol.MethodToolsCall, protocol.MethodPromptsGet:
		key = "name"
	case protocol.MethodResourcesRead:
		key = "uri"
	case protocol.MethodTasksGet, protocol.MethodTasksUpdate, protocol.MethodTasksCancel:
		key = "taskId"
	default:
		return "", false
	}
	var s string
	if json.Unmarshal(p[key], &s) != nil {
		return "", false
	}
	return s, true
}

// EncodeHeaderValue returns v as an Mcp-Name or Mcp-Param-* header value
// (2026-07-28): as is when it is printable ASCII without surrounding
// spaces, else in the =?base64?…?= form.
func EncodeHeaderValue(v string) string {
	plain := v == strings.TrimSpace(v) && !(strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

func isSSE(h http.Header) bool { return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") }

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func randomToken() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
