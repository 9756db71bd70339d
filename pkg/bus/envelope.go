package bus

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/mcpfleet/mcpfleet/internal/decodecache"
	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// SessionInfo is the snapshot of a legacy session a request carries, so the
// worker never reads the store.
type SessionInfo struct {
	ID                 string                       `json:"id"`
	ProtocolVersion    string                       `json:"v,omitempty"`
	ClientInfo         *protocol.Implementation     `json:"ci,omitempty"`
	ClientCapabilities *protocol.ClientCapabilities `json:"cc,omitempty"`
	LogLevel           protocol.LoggingLevel        `json:"ll,omitempty"`
}

// RequestHeader is the frontend's part of a request envelope.
type RequestHeader struct {
	// Era is the protocol era the request is served under.
	Era protocol.Era `json:"era"`
	// Method and ID, when Method is set, are the request's method and id
	// as the frontend decoded them, and the envelope's body is the
	// request's raw params (empty when it had none): the worker does not
	// decode the message a second time. When Method is empty the body is
	// the whole JSON-RPC message.
	Method string      `json:"m,omitempty"`
	ID     protocol.ID `json:"id,omitzero"`
	// Target is what the request addresses, as the frontend decoded it
	// from the params' head: the tool of tools/call, the prompt of
	// prompts/get, the URI of resources/read, subscribe and unsubscribe
	// ("" otherwise). The worker's metrics label the request by it
	// without decoding the params a second time.
	Target string `json:"tg,omitempty"`
	// Frontend and Stream name the stream waiting for the frames; the
	// reply subject is Subjects.Stream(Frontend, Stream).
	Frontend string `json:"fe"`
	Stream   string `json:"st"`
	// Session is the legacy session snapshot (nil for modern requests and
	// for initialize).
	Session *SessionInfo `json:"s,omitempty"`
	// Principal is the authenticated subject ("" when auth is off).
	Principal string `json:"p,omitempty"`
	// DeadlineMs is the absolute deadline in Unix milliseconds (0: none).
	DeadlineMs int64 `json:"dl,omitempty"`
	// Traceparent and Tracestate carry the request's W3C trace context:
	// the frontend's PRODUCER span of the publish (the parent of the
	// worker's spans), or with tracing off the caller's context (its
	// _meta.traceparent, else its traceparent header).
	Traceparent string `json:"tp,omitempty"`
	Tracestate  string `json:"ts,omitempty"`
	// ParamHeaders are a modern request's Mcp-Param-* headers (name after
	// the prefix, lower-cased), checked by the worker against the tool's
	// x-mcp-header arguments.
	ParamHeaders map[string]string `json:"ph,omitempty"`
	// Listen and SessionStream say what the transport delivers: modern
	// subscriptions/listen streams, legacy GET streams. Capabilities
	// advertised to the client are derived from them.
	Listen        bool `json:"ls,omitempty"`
	SessionStream bool `json:"ss,omitempty"`
	// Tasks says the frontends keep task state (the tasks extension):
	// tools may run as tasks.
	Tasks bool `json:"tk,omitempty"`
	// CheckParamHeaders is set for modern requests that came over HTTP:
	// the worker checks x-mcp-header arguments against ParamHeaders (also
	// when there are none: an argument without its header is refused).
	CheckParamHeaders bool `json:"cph,omitempty"`
}

// RequestFormat is the newest request header format this version writes
// and reads: 1, the binary header (headerFormat1). Format 0 is the JSON
// header of earlier versions, which every version reads.
const RequestFormat = 1

// EncodeRequest builds a request envelope: the header in the binary
// format 1 (see headerFormat1), then msg verbatim (msg is never
// re-marshalled): the whole message, or only its params when h.Method is
// set. The envelope is the one allocation.
//
// Rolling upgrades: DecodeRequest reads both this header and the JSON
// header that earlier versions wrote (one line of JSON, a newline, then
// the message), so a worker of this version serves frontends of either.
// A worker of an earlier version cannot read the binary header: it drops
// the envelope ("dropping a malformed envelope") and the client gets an
// error once the frontend's worker timeout passes. Frontends therefore
// write with EncodeRequestAs the newest format every live worker
// announces (fleet.Announcement.RequestFormat; workers of earlier
// versions announce none: JSON).
func EncodeRequest(h *RequestHeader, msg []byte) ([]byte, error) {
	return encodeRequest1(h, msg)
}

// EncodeRequestAs builds a request envelope in format: the JSON header of
// earlier versions for 0 (or less), the binary one (EncodeRequest)
// otherwise. A format newer than RequestFormat is written as
// RequestFormat, which its readers read too.
func EncodeRequestAs(format int, h *RequestHeader, msg []byte) ([]byte, error) {
	if format < 1 {
		return encodeRequestJSON(h, msg)
	}
	return encodeRequest1(h, msg)
}

// encodeRequestJSON builds the envelope of earlier versions: the header as
// one line of JSON, a newline, then msg verbatim.
func encodeRequestJSON(h *RequestHeader, msg []byte) ([]byte, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(hb)+1+len(msg))
	out = append(out, hb...)
	out = append(out, '\n')
	return append(out, msg...), nil
}

// ErrBadEnvelope is returned for a malformed envelope.
var ErrBadEnvelope = errors.New("bus: malformed envelope")

// DecodeRequest splits an envelope, of the binary format (EncodeRequest)
// or the JSON one of earlier versions, into its header and the raw
// message. A truncated or corrupt envelope is ErrBadEnvelope.
//
// The returned message aliases data; the header's strings do not (they
// share one copy of the header, made here), so data may be reused once the
// message is done with. The header's Session may be shared with other
// headers decoded from the same snapshot: treat it as read-only.
func DecodeRequest(data []byte) (*RequestHeader, []byte, error) {
	if len(data) > 0 && data[0] == headerFormat1 {
		return decodeRequest1(data)
	}
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil, nil, ErrBadEnvelope
	}
	var w struct {
		RequestHeader
		Session json.RawMessage `json:"s,omitempty"`
	}
	if err := json.Unmarshal(data[:i], &w); err != nil {
		return nil, nil, errors.Join(ErrBadEnvelope, err)
	}
	h := &w.RequestHeader
	if len(w.Session) > 0 && string(w.Session) != "null" {
		s, err := jsonSnapshots.GetBytes(w.Session, decodeSnapshotJSON)
		if err != nil {
			return nil, nil, errors.Join(ErrBadEnvelope, err)
		}
		h.Session = s
	}
	return h, data[i+1:], nil
}

func decodeSnapshotJSON(raw string) (*SessionInfo, error) {
	s := new(SessionInfo)
	if err := json.Unmarshal([]byte(raw), s); err != nil {
		return nil, err
	}
	return s, nil
}

// jsonSnapshots and binSnapshots keep decoded session snapshots by their
// encoding: a session sends the same snapshot with each request until its
// log level changes, and decoding client capabilities is most of decoding
// a header. Each header format has its own cache, so that bytes of one
// format never stand for a snapshot decoded from the other.
var (
	jsonSnapshots = decodecache.New[SessionInfo]()
	binSnapshots  = decodecache.New[SessionInfo]()
)

// FrameKind says what a stream frame carries.
type FrameKind byte

// Frame kinds. The byte values are the wire format.
const (
	// FrameNotification is a notification to write on the stream.
	FrameNotification FrameKind = 'N'
	// FrameServerRequest is a server-to-client request to write on the
	// stream.
	FrameServerRequest FrameKind = 'Q'
	// FrameResponse is the final response; the stream ends after it.
	FrameResponse FrameKind = 'R'
	// FrameHeartbeat says a worker holds the request and is alive; its
	// payload is the worker id.
	FrameHeartbeat FrameKind = 'H'
	// FrameEnd ends the stream without a response: the request was
	// cancelled.
	FrameEnd FrameKind = 'E'
	// FrameClose asks the frontend to close the client's connection
	// without ending the logical stream (SSE polling, SEP-1699); the
	// payload is the retry interval in milliseconds, in decimal. The
	// request goes on; the client resumes with GET and Last-Event-ID.
	FrameClose FrameKind = 'C'
	// FrameNoResponders is synthesized by ParseFrame from NATS's "no
	// responders" status: no worker serves the request subject.
	FrameNoResponders FrameKind = '0'
	// FrameInvalid is a frame that could not be parsed.
	FrameInvalid FrameKind = 0
)

// AppendFrame appends a frame of kind k with payload p.
func AppendFrame(b []byte, k FrameKind, p []byte) []byte {
	b = append(b, byte(k))
	return append(b, p...)
}

// ParseFrame splits a frame. status is the NATS "Status" header of the
// message ("" when absent); "503" is NATS's "no responders" answer.
func ParseFrame(data []byte, status string) (FrameKind, []byte) {
	if status == "503" {
		return FrameNoResponders, nil
	}
	if len(data) == 0 {
		return FrameInvalid, nil
	}
	switch k := FrameKind(data[0]); k {
	case FrameNotification, FrameServerRequest, FrameResponse, FrameHeartbeat, FrameEnd, FrameClose:
		return k, data[1:]
	}
	return FrameInvalid, nil
}

// LiveEnd marks the end of a live stream (after its final event).
const LiveEnd = "end"

// AppendLiveEvent encodes one event of a live stream: its decimal index, a
// newline, then the data.
func AppendLiveEvent(b []byte, index uint64, data []byte) []byte {
	b = append(b, itoa(index)...)
	b = append(b, '\n')
	return append(b, data...)
}

// ParseLiveEvent decodes AppendLiveEvent's output; end reports the LiveEnd
// marker.
func ParseLiveEvent(p []byte) (index uint64, data []byte, end bool, ok bool) {
	if string(p) == LiveEnd {
		return 0, nil, true, true
	}
	i := bytes.IndexByte(p, '\n')
	if i <= 0 {
		return 0, nil, false, false
	}
	for _, c := range p[:i] {
		if c < '0' || c > '9' {
			return 0, nil, false, false
		}
		index = index*10 + uint64(c-'0')
	}
	return index, p[i+1:], false, true
}
