package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Error kinds. HTTP statuses are "http_<status>" (with ":rpc_<code>" when
// the body is a JSON-RPC error); JSON-RPC errors in a 200 reply are
// "rpc_<code>".
const (
	KindTransport   = "transport"    // connection refused, reset, closed early
	KindTimeout     = "timeout"      // the exchange took longer than its timeout
	KindBadResponse = "bad_response" // unexpected Content-Type, bad JSON, SSE without the response
	KindToolError   = "tool_error"   // a result with isError: true
)

// CallError is a failed exchange, classified by Kind.
type CallError struct {
	Kind string
	Msg  string
}

func (e *CallError) Error() string { return e.Kind + ": " + e.Msg }

func callErr(kind, format string, args ...any) *CallError {
	return &CallError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// classifyTransport turns an error of http.Client.Do or of reading a body
// into a CallError.
func classifyTransport(err error) *CallError {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return callErr(KindTimeout, "%v", err)
	case errors.Is(err, context.Canceled):
		return callErr("canceled", "%v", err)
	}
	return callErr(KindTransport, "%v", err)
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// rpcResult holds the result fields the load generator looks at.
type rpcResult struct {
	IsError         bool   `json:"isError"`
	ProtocolVersion string `json:"protocolVersion"`
}

// rpcMsg is a loosely decoded JSON-RPC message.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *rpcResult      `json:"result"`
	Error  *rpcError       `json:"error"`
}

// client sends MCP POSTs round-robin over its URLs, or, when alternate is
// set, each session's (each worker's, when modern) next request to the URL
// after the one its last request went to.
type client struct {
	urls      []string
	next      atomic.Uint64
	alternate bool
	hc        *http.Client
	tr        *http.Transport
	timeout   time.Duration
}

func newClient(urls []string, conns int, timeout time.Duration) *client {
	tr := &http.Transport{
		Proxy:                 nil, // never through a proxy: loopback only
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   max(conns, 2),
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	return &client{urls: urls, tr: tr, hc: &http.Client{Transport: tr, Timeout: timeout}, timeout: timeout}
}

func (c *client) close() { c.tr.CloseIdleConnections() }

func (c *client) pickURL() string {
	if len(c.urls) == 1 {
		return c.urls[0]
	}
	return c.urls[(c.next.Add(1)-1)%uint64(len(c.urls))]
}

// urlAt returns the URL of turn i (taken modulo the number of URLs).
func (c *client) urlAt(i uint64) string { return c.urls[i%uint64(len(c.urls))] }

// Header values shared by every request (never modified).
var (
	hvJSON   = []string{"application/json"}
	hvAccept = []string{"application/json, text/event-stream"}
)

// conn is one worker's reusable buffers.
type conn struct {
	body []byte
	buf  bytes.Buffer
	sse  sseReader
	// next is the turn of the worker's next session-less request when the
	// client alternates.
	next uint64
}

// reply is what one exchange produced.
type reply struct {
	msg    rpcMsg
	header http.Header
	sse    bool // the reply was an SSE stream
}

// post sends body to u (the next URL of the round-robin when empty) with
// the headers set by hdr, and reads
// the JSON-RPC response whose id is wantID (nil for a notification, which
// expects 2xx and no response). The latency ends when the response is
// decoded; the rest of the body is drained afterwards so the connection
// is reused.
func (c *client) post(ctx context.Context, w *conn, u string, body []byte, hdr func(http.Header), wantID []byte) (*reply, *CallError) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if u == "" {
		u = c.pickURL()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, callErr(KindTransport, "%v", err)
	}
	req.Header["Content-Type"] = hvJSON
	req.Header["Accept"] = hvAccept
	if hdr != nil {
		hdr(req.Header)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, classifyTransport(err)
	}
	defer resp.Body.Close()
	if wantID == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 != 2 {
			return nil, callErr("http_"+strconv.Itoa(resp.StatusCode), "notification answered HTTP %d", resp.StatusCode)
		}
		return &reply{header: resp.Header}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	r := &reply{header: resp.Header}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		w.buf.Reset()
		if _, err := w.buf.ReadFrom(io.LimitReader(resp.Body, maxBody)); err != nil {
			return nil, classifyTransport(err)
		}
		if err := json.Unmarshal(w.buf.Bytes(), &r.msg); err != nil {
			return nil, callErr(KindBadResponse, "decoding the JSON reply: %v", err)
		}
		if !bytes.Equal(r.msg.ID, wantID) {
			return nil, callErr(KindBadResponse, "reply id %s, want %s", r.msg.ID, wantID)
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		r.sse = true
		w.sse.reset(resp.Body)
		found := false
		for !found {
			data, err := w.sse.next()
			if data != nil {
				var m rpcMsg
				if jerr := json.Unmarshal(data, &m); jerr != nil {
					return nil, callErr(KindBadResponse, "decoding an SSE event: %v", jerr)
				}
				// Notifications and server-to-client requests carry a
				// method; the response does not.
				if m.Method == "" && bytes.Equal(m.ID, wantID) {
					r.msg, found = m, true
					break
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil, callErr(KindBadResponse, "the SSE stream ended before the response with id %s", wantID)
				}
				return nil, classifyTransport(err)
			}
		}
		// Let the stream end (the server closes it after the response)
		// so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	default:
		return nil, callErr(KindBadResponse, "unexpected Content-Type %q", ct)
	}
	if r.msg.Error != nil {
		return r, callErr("rpc_"+strconv.FormatInt(r.msg.Error.Code, 10), "%s", r.msg.Error.Message)
	}
	if r.msg.Result == nil {
		return r, callErr(KindBadResponse, "response with neither result nor error")
	}
	return r, nil
}

// statusError reads the start of a non-200 body and classifies it by
// status (and JSON-RPC error code, when the body has one).
func statusError(resp *http.Response) *CallError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	kind := "http_" + strconv.Itoa(resp.StatusCode)
	var m rpcMsg
	if json.Unmarshal(b, &m) == nil && m.Error != nil {
		return callErr(kind+":rpc_"+strconv.FormatInt(m.Error.Code, 10), "HTTP %d: %s", resp.StatusCode, m.Error.Message)
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return callErr(kind, "HTTP %d: %s", resp.StatusCode, msg)
}

// session is one initialized legacy session.
type session struct {
	id      []string // Mcp-Session-Id header value (nil when none)
	version []string // MCP-Protocol-Version header value
	// next is the turn of the session's next request when the client
	// alternates (workers may share a session).
	next atomic.Uint64
}

// initialize opens a legacy session: initialize, then
// notifications/initialized. When the client alternates, the sessions
// start on the URLs in turn and every message after the first goes to the
// URL after the one before it.
func (c *client) initialize(ctx context.Context, w *conn) (*session, *CallError) {
	var u0, u1 string
	var turn uint64
	if c.alternate {
		turn = c.next.Add(1) - 1
		u0, u1 = c.urlAt(turn), c.urlAt(turn+1)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":%q,"version":"1.0"}}}`, LegacyVersion, ClientName)
	r, cerr := c.post(ctx, w, u0, []byte(body), nil, []byte("0"))
	if cerr != nil {
		return nil, cerr
	}
	ver := r.msg.Result.ProtocolVersion
	if ver == "" {
		return nil, callErr(KindBadResponse, "initialize result without protocolVersion")
	}
	s := &session{version: []string{ver}}
	s.next.Store(turn + 2)
	if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
		s.id = []string{sid}
	}
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, cerr := c.post(ctx, w, u1, note, s.setHeaders, nil); cerr != nil {
		return nil, cerr
	}
	return s, nil
}

func (s *session) setHeaders(h http.Header) {
	h["Mcp-Protocol-Version"] = s.version
	if s.id != nil {
		h["Mcp-Session-Id"] = s.id
	}
}

// modernMeta is the per-request _meta of a 2026-07-28 request.
var modernMeta = fmt.Sprintf(`{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{}}`, ModernVersion, ClientName)

// call is a prepared tools/call: the body around the id and the headers.
type call struct {
	prefix, suffix []byte
	hdrModern      func(http.Header)
}

func newCall(proto Proto, tool string, args []byte) *call {
	name, _ := json.Marshal(tool)
	c := &call{prefix: []byte(`{"jsonrpc":"2.0","id":`)}
	s := `,"method":"tools/call","params":{"name":` + string(name) + `,"arguments":` + string(args)
	if proto == Modern {
		s += `,"_meta":` + modernMeta
		method, ver, nm := []string{"tools/call"}, []string{ModernVersion}, []string{headerValue(tool)}
		c.hdrModern = func(h http.Header) {
			h["Mcp-Protocol-Version"] = ver
			h["Mcp-Method"] = method
			h["Mcp-Name"] = nm
		}
	}
	c.suffix = []byte(s + `}}`)
	return c
}

// do sends one tools/call with id on session s (nil when modern) and
// reports whether the reply was an SSE stream.
func (c *client) do(ctx context.Context, w *conn, k *call, s *session, id int64) (bool, *CallError) {
	w.body = append(w.body[:0], k.prefix...)
	w.body = strconv.AppendInt(w.body, id, 10)
	idStart := len(k.prefix)
	idEnd := len(w.body)
	w.body = append(w.body, k.suffix...)
	hdr := k.hdrModern
	if s != nil {
		hdr = s.setHeaders
	}
	var u string
	if c.alternate {
		if s != nil {
			u = c.urlAt(s.next.Add(1) - 1)
		} else {
			u = c.urlAt(w.next)
			w.next++
		}
	}
	r, cerr := c.post(ctx, w, u, w.body, hdr, w.body[idStart:idEnd])
	if cerr != nil {
		return r != nil && r.sse, cerr
	}
	if r.msg.Result.IsError {
		return r.sse, callErr(KindToolError, "the tool answered isError: true")
	}
	return r.sse, nil
}

// headerValue encodes v for Mcp-Name / Mcp-Param-* (2026-07-28): as is
// when it is plain header-safe ASCII, else =?base64?...?=.
func headerValue(v string) string {
	safe := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, "=?base64?")
	for i := 0; safe && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			safe = false
		}
	}
	if safe {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// sseReader reads the data of SSE events.
type sseReader struct {
	br      *bufio.Reader
	size    int // buffer size; zero means 4 KiB
	scratch []byte
	data    []byte
}

func (s *sseReader) bufSize() int {
	if s.size > 0 {
		return s.size
	}
	return 4096
}

func (s *sseReader) reset(r io.Reader) {
	if s.br == nil {
		s.br = bufio.NewReaderSize(r, s.bufSize())
	} else {
		s.br.Reset(r)
	}
	s.data = s.data[:0]
}

// next returns the data of the next event that has some (valid until the
// next call), or an error at the end of the stream; it may return both
// the last event's data and io.EOF. Comments, ids, event names and retry
// fields are skipped.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if hasData {
				return s.data, err
			}
			return nil, err
		}
		if len(line) == 0 {
			if hasData && len(s.data) > 0 {
				return s.data, nil
			}
			s.data, hasData = s.data[:0], false
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
			hasData = true
		}
	}
}

// readLine returns one line without its end (\n, \r\n); valid until the
// next read.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.scratch = append(s.scratch[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.br.ReadSlice('\n')
			s.scratch = append(s.scratch, line...)
			if len(s.scratch) > maxBody {
				return nil, errors.New("SSE line too long")
			}
		}
		line = s.scratch
	}
	if err != nil && len(line) > 0 && line[len(line)-1] != '\n' {
		// A last line without its end: treat as complete, report err next.
		if err == io.EOF {
			return bytes.TrimRight(line, "\r"), nil
		}
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
