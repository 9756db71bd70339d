package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Client is a minimal Streamable HTTP client for tests. Each request goes
// to the next of URLs in turn, so a session's requests alternate between
// frontends. Every message received is validated against the schema of
// the negotiated version when Schemas is set.
type Client struct {
	tb              testing.TB
	URLs            []string
	next            int
	HTTP            *http.Client
	SessionID       string
	ProtocolVersion string
	Schemas         *Schemas
	// Header is added to every request.
	Header http.Header
}

// NewClient returns a client over urls.
func NewClient(tb testing.TB, urls ...string) *Client {
	return &Client{tb: tb, URLs: urls, HTTP: &http.Client{Timeout: 60 * time.Second}, Schemas: SchemasFor(tb, "2025-11-25"), Header: http.Header{}}
}

// URL returns the URL the next request will use, and advances.
func (c *Client) URL() string {
	u := c.URLs[c.next%len(c.URLs)]
	c.next++
	return u
}

// Reply is what came back for one POST.
type Reply struct {
	Status   int
	Header   http.Header
	Body     []byte
	SSE      bool
	Messages []json.RawMessage // the JSON body, or each SSE data payload
	EventIDs []string          // SSE ids, parallel to Messages ("" when absent)
	Retry    string            // last SSE retry: value
}

// Response returns the JSON-RPC response among the messages (nil if none).
func (r *Reply) Response() *Message {
	for _, raw := range r.Messages {
		var m Message
		if json.Unmarshal(raw, &m) == nil && m.Method == "" && (m.Result != nil || m.Error != nil) {
			return &m
		}
	}
	return nil
}

// Notifications returns the messages that carry a method.
func (r *Reply) Notifications() []Message {
	var out []Message
	for _, raw := range r.Messages {
		var m Message
		if json.Unmarshal(raw, &m) == nil && m.Method != "" {
			out = append(out, m)
		}
	}
	return out
}

// Message is a loosely decoded JSON-RPC message.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// Do sends a raw request and reads the whole reply. hdr may override the
// defaults (Accept, Content-Type, session and version headers); a header
// set to "" is removed.
func (c *Client) Do(method, url string, body []byte, hdr map[string]string) *Reply {
	c.tb.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		c.tb.Fatalf("client: %v", err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.SessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.SessionID)
	}
	if c.ProtocolVersion != "" {
		req.Header.Set("Mcp-Protocol-Version", c.ProtocolVersion)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.tb.Fatalf("client: %s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	r := &Reply{Status: resp.StatusCode, Header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.SSE = true
		ParseSSE(resp.Body, func(ev Event) bool {
			if ev.Retry != "" {
				r.Retry = ev.Retry
			}
			if ev.Data != "" {
				r.Messages = append(r.Messages, json.RawMessage(ev.Data))
				r.EventIDs = append(r.EventIDs, ev.ID)
			}
			return true
		})
		return r
	}
	r.Body, err = io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatalf("client: reading the body: %v", err)
	}
	if len(bytes.TrimSpace(r.Body)) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		r.Messages = []json.RawMessage{r.Body}
	}
	return r
}

// Post sends a JSON-RPC message (any value, marshalled) to the next URL and
// validates every message received.
func (c *Client) Post(msg any, hdr map[string]string) *Reply {
	c.tb.Helper()
	body, ok := msg.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(msg); err != nil {
			c.tb.Fatalf("client: %v", err)
		}
	}
	var head struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &head)
	r := c.Do(http.MethodPost, c.URL(), body, hdr)
	c.validate(head.Method, r)
	return r
}

func (c *Client) validate(method string, r *Reply) {
	c.tb.Helper()
	if c.Schemas == nil {
		return
	}
	for _, m := range r.Messages {
		if err := c.Schemas.ValidateMessage(method, m); err != nil {
			c.tb.Errorf("client: server message fails the schema: %v", err)
		}
	}
}

// Request builds a JSON-RPC request.
func Request(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	return m
}

// Notification builds a JSON-RPC notification.
func Notification(method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	return m
}

// InitParams are typical initialize params.
func InitParams(version string, caps map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	return map[string]any{"protocolVersion": version, "capabilities": caps, "clientInfo": map[string]any{"name": "testenv", "version": "1.0"}}
}

// Initialize runs the handshake (initialize + notifications/initialized)
// and keeps the session id and negotiated version.
func (c *Client) Initialize(caps map[string]any) *Reply {
	c.tb.Helper()
	r := c.Post(Request(0, "initialize", InitParams("2025-11-25", caps)), nil)
	if r.Status != 200 {
		c.tb.Fatalf("client: initialize: HTTP %d: %s", r.Status, r.Body)
	}
	c.SessionID = r.Header.Get("Mcp-Session-Id")
	if c.SessionID == "" {
		c.tb.Fatalf("client: initialize returned no Mcp-Session-Id")
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(r.Response().Result, &res)
	c.ProtocolVersion = res.ProtocolVersion
	if n := c.Post(Notification("notifications/initialized", nil), nil); n.Status != 202 {
		c.tb.Fatalf("client: notifications/initialized: HTTP %d", n.Status)
	}
	return r
}

// Call sends a request and returns its result, failing the test on an
// error response or a non-200 status.
func (c *Client) Call(id any, method string, params any) json.RawMessage {
	c.tb.Helper()
	r := c.Post(Request(id, method, params), nil)
	if r.Status != 200 {
		c.tb.Fatalf("client: %s: HTTP %d: %s", method, r.Status, r.Body)
	}
	resp := r.Response()
	if resp == nil {
		c.tb.Fatalf("client: %s: no response in %d messages", method, len(r.Messages))
	}
	if resp.Error != nil {
		c.tb.Fatalf("client: %s: error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

// Event is one SSE event.
type Event struct {
	ID, Event, Data, Retry string
	Comment                bool
}

// ParseSSE reads events from r and calls f for each (comments included)
// until f returns false or the stream ends.
func ParseSSE(r io.Reader, f func(Event) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev Event
	var data []string
	dirty := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if dirty {
				ev.Data = strings.Join(data, "\n")
				if !f(ev) {
					return
				}
			}
			ev, data, dirty = Event{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			if !f(Event{Comment: true, Data: strings.TrimSpace(line[1:])}) {
				return
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		dirty = true
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			ev.Retry = value
		}
	}
}

// Stream is an open SSE response (a GET stream) read in the background.
type Stream struct {
	Status int
	Header http.Header
	Events chan Event
	// Body is the body of a non-SSE response.
	Body []byte
	// SchemaErrors collects schema violations of received messages (read
	// it after the stream ended).
	SchemaErrors []error
	body         io.Closer
}

// Close closes the stream.
func (s *Stream) Close() { s.body.Close() }

// Next returns the next non-comment event within timeout, or fails.
func (s *Stream) Next(tb testing.TB, timeout time.Duration) Event {
	tb.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				tb.Fatalf("stream: closed while waiting for an event")
			}
			if ev.Comment {
				continue
			}
			return ev
		case <-t.C:
			tb.Fatalf("stream: no event within %s", timeout)
			return Event{}
		}
	}
}

// OpenGet opens the session's GET stream on the next URL.
func (c *Client) OpenGet(hdr map[string]string) *Stream {
	c.tb.Helper()
	return c.open(http.MethodGet, nil, hdr)
}

// PostStream sends a request to the next URL and returns its response
// stream, read in the background (for SSE responses; a JSON response
// arrives as one event).
func (c *Client) PostStream(msg any, hdr map[string]string) *Stream {
	c.tb.Helper()
	body, err := json.Marshal(msg)
	if err != nil {
		c.tb.Fatal(err)
	}
	return c.open(http.MethodPost, body, hdr)
}

func (c *Client) open(method string, body []byte, hdr map[string]string) *Stream {
	c.tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, c.URL(), rd)
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
	}
	if c.SessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.SessionID)
	}
	if c.ProtocolVersion != "" {
		req.Header.Set("Mcp-Protocol-Version", c.ProtocolVersion)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	hc := &http.Client{} // no timeout: the stream may be long-lived
	resp, err := hc.Do(req)
	if err != nil {
		c.tb.Fatalf("client: %s: %v", method, err)
	}
	s := &Stream{Status: resp.StatusCode, Header: resp.Header, Events: make(chan Event, 1024), body: resp.Body}
	c.tb.Cleanup(func() { resp.Body.Close() })
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.Body = b
		if resp.StatusCode == 200 && len(b) > 0 {
			s.Events <- Event{Data: string(b)}
		}
		close(s.Events)
		return s
	}
	schemas := c.Schemas
	go func() {
		defer close(s.Events)
		ParseSSE(resp.Body, func(ev Event) bool {
			if schemas != nil && ev.Data != "" {
				if err := schemas.ValidateMessage("", []byte(ev.Data)); err != nil {
					s.SchemaErrors = append(s.SchemaErrors, err)
				}
			}
			s.Events <- ev
			return true
		})
	}()
	return s
}

// NextMessage returns the next event that carries data, decoded.
func (s *Stream) NextMessage(tb testing.TB, timeout time.Duration) (Event, Message) {
	tb.Helper()
	for {
		ev := s.Next(tb, timeout)
		if ev.Data == "" {
			continue // priming event
		}
		var m Message
		if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
			tb.Fatalf("stream: event data is not JSON: %q", ev.Data)
		}
		return ev, m
	}
}

// Rest reads the stream to its end (or timeout) and returns the data
// events; ended is false when the timeout came first.
func (s *Stream) Rest(timeout time.Duration) (msgs []Message, ids []string, ended bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				return msgs, ids, true
			}
			if ev.Comment || ev.Data == "" {
				continue
			}
			var m Message
			_ = json.Unmarshal([]byte(ev.Data), &m)
			msgs = append(msgs, m)
			ids = append(ids, ev.ID)
		case <-t.C:
			return msgs, ids, false
		}
	}
}

// ErrorCode returns the JSON-RPC error code of a reply (0 if none).
func (r *Reply) ErrorCode() int64 {
	if m := r.Response(); m != nil && m.Error != nil {
		return m.Error.Code
	}
	return 0
}

// String summarizes a reply for failure messages.
func (r *Reply) String() string {
	return fmt.Sprintf("HTTP %d sse=%v body=%s messages=%d", r.Status, r.SSE, truncate(r.Body, 300), len(r.Messages))
}

// ModernMeta returns the per-request _meta of a 2026-07-28 request with the
// given client capabilities (nil means {}).
func ModernMeta(caps map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "testenv", "version": "1.0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// ModernRequest builds a 2026-07-28 request (params gets the _meta) and
// the headers it needs (MCP-Protocol-Version, Mcp-Method, Mcp-Name).
func ModernRequest(id any, method string, params map[string]any, caps map[string]any) (map[string]any, map[string]string) {
	if params == nil {
		params = map[string]any{}
	}
	meta := ModernMeta(caps)
	if m, ok := params["_meta"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	params["_meta"] = meta
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	switch method {
	case "tools/call", "prompts/get":
		if n, ok := params["name"].(string); ok {
			hdr["Mcp-Name"] = n
		}
	case "resources/read":
		if u, ok := params["uri"].(string); ok {
			hdr["Mcp-Name"] = u
		}
	case "tasks/get", "tasks/update", "tasks/cancel":
		if id, ok := params["taskId"].(string); ok {
			hdr["Mcp-Name"] = id
		}
	}
	return Request(id, method, params), hdr
}

// NewModernClient returns a client that validates against the 2026-07-28
// schema.
func NewModernClient(tb testing.TB, urls ...string) *Client {
	c := NewClient(tb, urls...)
	c.Schemas = SchemasFor(tb, "2026-07-28")
	return c
}

// Next returns the index of the URL the next request will use.
func (c *Client) Next() int { return c.next % len(c.URLs) }
