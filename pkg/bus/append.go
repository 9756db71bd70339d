package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/nats-io/nats.go"
)

// Acked frames. The payload frames of a legacy request (notifications,
// server-to-client requests, the final response, the end of a cancelled
// request) are sent as NATS requests, one outstanding at a time, each
// with its per-request sequence number in the SeqHeader header (1, 2,
// ...). Whoever takes a frame on the request's stream subject (the
// frontend holding the stream, or one that took it over) logs it
// idempotently by that number, then acks it with an empty reply. When the
// stream subject has no responder, does not answer in time, or answers
// AckGone, the worker sends the frame in an append envelope (EncodeAppend)
// to Subjects.Append, where any frontend (queue group AppendQueue) logs it
// and acks it.

// SeqHeader is the NATS header carrying an acked frame's sequence number,
// in decimal.
const SeqHeader = "Mcp-Seq"

// AckGone is the reply of a frontend that has no open stream for an acked
// frame it received: the worker falls back to Subjects.Append at once.
const AckGone = "gone"

// AppendQueue is the queue group of the frontends' append subscriptions.
const AppendQueue = "append"

// Append is where a worker sends an acked frame of frontend fe's stream
// when fe's stream subject does not take it: <prefix>.append.<fe>.<stream>.
func (s Subjects) Append(fe, stream string) string {
	return s.p() + ".append." + Token(fe) + "." + Token(stream)
}

// AllAppends matches every Append subject.
func (s Subjects) AllAppends() string { return s.p() + ".append.>" }

// FrameSeq returns the sequence number of an acked frame (0 for a frame
// sent without one: heartbeats, modern requests' frames).
func FrameSeq(m *nats.Msg) uint64 {
	if m.Header == nil {
		return 0
	}
	v := m.Header.Get(SeqHeader)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// SetFrameSeq sets the sequence number of an acked frame.
func SetFrameSeq(m *nats.Msg, seq uint64) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header.Set(SeqHeader, strconv.FormatUint(seq, 10))
}

// AppendHeader names the stream an append envelope's frame belongs to.
type AppendHeader struct {
	// Session is the legacy session.
	Session string `json:"s"`
	// Frontend and Stream are the request's RequestHeader.Frontend and
	// Stream: the SSE stream is the POST stream they name.
	Frontend string `json:"fe"`
	Stream   string `json:"st"`
	// Seq is the frame's sequence number (at least 1).
	Seq uint64 `json:"q"`
}

// EncodeAppend builds an append envelope: the header as one line of JSON,
// a newline, then the frame (AppendFrame's output) verbatim.
func EncodeAppend(h *AppendHeader, frame []byte) ([]byte, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(hb)+1+len(frame))
	out = append(out, hb...)
	out = append(out, '\n')
	return append(out, frame...), nil
}

// DecodeAppend splits an append envelope; the frame aliases data. A
// header without a session, frontend, stream or sequence number is
// malformed.
func DecodeAppend(data []byte) (*AppendHeader, []byte, error) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil, nil, ErrBadEnvelope
	}
	h := new(AppendHeader)
	if err := json.Unmarshal(data[:i], h); err != nil {
		return nil, nil, errors.Join(ErrBadEnvelope, err)
	}
	if h.Session == "" || h.Frontend == "" || h.Stream == "" || h.Seq == 0 {
		return nil, nil, ErrBadEnvelope
	}
	return h, data[i+1:], nil
}
