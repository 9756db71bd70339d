package bus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

// The binary request header (format 1), written by EncodeRequest:
//
//	0x01                 the format marker (a JSON header starts with '{')
//	uint32, big-endian   n, the length of the header body
//	n bytes              the header body
//	the rest             the message, verbatim
//
// The body is, in this order: Era (1 byte); the flags byte (bit 0 Listen,
// 1 SessionStream, 2 Tasks, 3 CheckParamHeaders); the session snapshot
// (uint32 length, 0 for none, then the snapshot); Method; ID (a kind byte:
// 0 absent, 1 a string that follows, 2 an integer that follows); Target,
// Frontend, Stream, Principal; DeadlineMs; Traceparent, Tracestate;
// ParamHeaders (a count, then name and value of each).
//
// A string is its length (uvarint) and its bytes, an integer a zig-zag
// varint. Whatever can be nil or empty (maps, slices, json.RawMessage)
// starts with a count that is 0 for nil and n+1 for n elements (bytes for a
// RawMessage), so nil and empty round-trip as themselves.
//
// The snapshot is, in this order: ID, ProtocolVersion, LogLevel;
// ClientInfo (a presence byte 0 or 1, then Name, Version, Title,
// Description, WebsiteURL and Icons: a count, then Src, MimeType, Sizes (a
// count of strings), Theme of each); ClientCapabilities (a presence byte,
// then a bits byte (bit 0 Roots, 1 Roots.ListChanged, 2 Sampling, 3
// Sampling.Context, 4 Sampling.Tools, 5 Elicitation, 6 Elicitation.Form, 7
// Elicitation.URL), Experimental (a count, then name and raw value of
// each), Tasks (raw), Extensions (as Experimental)).
//
// Compatibility: a decoder ignores bytes after the fields it knows, in the
// body, in the snapshot and in flag bits it does not know, so a later
// format may append fields (and must keep these in place) without a new
// marker. Changing or removing a field takes a new marker. The field lists
// are pinned by TestRequestHeaderFieldsPinned: a field added to
// RequestHeader, SessionInfo or the protocol types of the snapshot must be
// added here.
const headerFormat1 = 0x01

const (
	flagListen = 1 << iota
	flagSessionStream
	flagTasks
	flagCheckParamHeaders
)

const (
	capRoots = 1 << iota
	capRootsListChanged
	capSampling
	capSamplingContext
	capSamplingTools
	capElicitation
	capElicitationForm
	capElicitationURL
)

const (
	idKindAbsent = iota
	idKindString
	idKindInt
)

// errHeaderTooLarge is returned for a header (or a snapshot) over 4 GiB.
var errHeaderTooLarge = errors.New("bus: request header too large")

// scratch holds the buffers EncodeRequest builds headers in, so that an
// envelope costs one allocation: the envelope itself.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxScratch is the largest buffer put back in scratch.
const maxScratch = 64 << 10

// encodeRequest1 builds the envelope of format 1: exactly sized, the only
// allocation.
func encodeRequest1(h *RequestHeader, msg []byte) ([]byte, error) {
	bp := scratch.Get().(*[]byte)
	body := appendHeaderBody((*bp)[:0], h)
	defer func() {
		if cap(body) <= maxScratch {
			*bp = body[:0]
			scratch.Put(bp)
		}
	}()
	if uint64(len(body)) > math.MaxUint32 {
		return nil, errHeaderTooLarge
	}
	out := make([]byte, 0, 5+len(body)+len(msg))
	out = append(out, headerFormat1)
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	return append(out, msg...), nil
}

func appendHeaderBody(b []byte, h *RequestHeader) []byte {
	flags := bit(h.Listen, flagListen) | bit(h.SessionStream, flagSessionStream) |
		bit(h.Tasks, flagTasks) | bit(h.CheckParamHeaders, flagCheckParamHeaders)
	b = append(b, byte(h.Era), flags)
	b = appendSnapshot(b, h.Session)
	b = appendStr(b, h.Method)
	switch {
	case h.ID.IsString():
		b = appendStr(append(b, idKindString), h.ID.Str())
	case h.ID.IsValid():
		b = binary.AppendVarint(append(b, idKindInt), h.ID.Int())
	default:
		b = append(b, idKindAbsent)
	}
	for _, s := range [...]string{h.Target, h.Frontend, h.Stream, h.Principal} {
		b = appendStr(b, s)
	}
	b = binary.AppendVarint(b, h.DeadlineMs)
	b = appendStr(b, h.Traceparent)
	b = appendStr(b, h.Tracestate)
	b = appendCount(b, len(h.ParamHeaders), h.ParamHeaders == nil)
	for k, v := range h.ParamHeaders {
		b = appendStr(appendStr(b, k), v)
	}
	return b
}

// appendSnapshot appends the snapshot's length (uint32, 0 for nil) and the
// snapshot.
func appendSnapshot(b []byte, s *SessionInfo) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	if s == nil {
		return b
	}
	b = appendStr(b, s.ID)
	b = appendStr(b, s.ProtocolVersion)
	b = appendStr(b, string(s.LogLevel))
	b = appendImplementation(b, s.ClientInfo)
	b = appendCapabilities(b, s.ClientCapabilities)
	// A snapshot over 4 GiB makes the header too large: encodeRequest1
	// fails.
	binary.BigEndian.PutUint32(b[at:], uint32(min(uint64(len(b)-at-4), math.MaxUint32)))
	return b
}

func appendImplementation(b []byte, ci *protocol.Implementation) []byte {
	if ci == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	for _, s := range [...]string{ci.Name, ci.Version, ci.Title, ci.Description, ci.WebsiteURL} {
		b = appendStr(b, s)
	}
	b = appendCount(b, len(ci.Icons), ci.Icons == nil)
	for _, ic := range ci.Icons {
		b = appendStr(b, ic.Src)
		b = appendStr(b, ic.MimeType)
		b = appendCount(b, len(ic.Sizes), ic.Sizes == nil)
		for _, s := range ic.Sizes {
			b = appendStr(b, s)
		}
		b = appendStr(b, ic.Theme)
	}
	return b
}

func appendCapabilities(b []byte, cc *protocol.ClientCapabilities) []byte {
	if cc == nil {
		return append(b, 0)
	}
	r, s, e := cc.Roots, cc.Sampling, cc.Elicitation
	bits := bit(r != nil, capRoots) | bit(r != nil && r.ListChanged, capRootsListChanged) |
		bit(s != nil, capSampling) | bit(s != nil && s.Context != nil, capSamplingContext) |
		bit(s != nil && s.Tools != nil, capSamplingTools) |
		bit(e != nil, capElicitation) | bit(e != nil && e.Form != nil, capElicitationForm) |
		bit(e != nil && e.URL != nil, capElicitationURL)
	b = append(b, 1, bits)
	b = appendRawMap(b, cc.Experimental)
	b = appendRaw(b, cc.Tasks)
	return appendRawMap(b, cc.Extensions)
}

// bit is b when on, 0 otherwise.
func bit(on bool, b byte) byte {
	if on {
		return b
	}
	return 0
}

// appendRawMap appends m with its keys sorted: a snapshot's bytes are the
// key of the decoders' snapshot cache, the same for the same snapshot.
func appendRawMap(b []byte, m map[string]json.RawMessage) []byte {
	b = appendCount(b, len(m), m == nil)
	keys := make([]string, 0, 8)
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendRaw(appendStr(b, k), m[k])
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendRaw(b []byte, r json.RawMessage) []byte {
	b = appendCount(b, len(r), r == nil)
	return append(b, r...)
}

// appendCount appends 0 for nil, n+1 otherwise.
func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

// decodeRequest1 decodes an envelope of format 1 (data[0] is the marker).
// The header's strings are substrings of one copy of the header body, made
// here: they alias neither data nor any buffer reused later, so the caller
// may reuse data once it is done with the message (which aliases data).
func decodeRequest1(data []byte) (*RequestHeader, []byte, error) {
	if len(data) < 5 {
		return nil, nil, ErrBadEnvelope
	}
	n := binary.BigEndian.Uint32(data[1:5])
	if uint64(n) > uint64(len(data)-5) {
		return nil, nil, ErrBadEnvelope
	}
	r := reader{s: string(data[5 : 5+n])}
	h := new(RequestHeader)
	h.Era = protocol.Era(r.byte())
	flags := r.byte()
	h.Listen = flags&flagListen != 0
	h.SessionStream = flags&flagSessionStream != 0
	h.Tasks = flags&flagTasks != 0
	h.CheckParamHeaders = flags&flagCheckParamHeaders != 0
	if snap := r.fixed(); len(snap) > 0 && !r.bad {
		s, err := binSnapshots.Get(snap, decodeSnapshot1)
		if err != nil {
			return nil, nil, errors.Join(ErrBadEnvelope, err)
		}
		h.Session = s
	}
	h.Method = r.str()
	switch r.byte() {
	case idKindAbsent:
	case idKindString:
		h.ID = protocol.StringID(r.str())
	case idKindInt:
		h.ID = protocol.Int64ID(r.varint())
	default:
		r.bad = true
	}
	h.Target, h.Frontend, h.Stream, h.Principal = r.str(), r.str(), r.str(), r.str()
	h.DeadlineMs = r.varint()
	h.Traceparent, h.Tracestate = r.str(), r.str()
	if n, ok := r.count(2); ok {
		h.ParamHeaders = make(map[string]string, n)
		for range n {
			k := r.str()
			h.ParamHeaders[k] = r.str()
		}
	}
	if r.bad {
		return nil, nil, ErrBadEnvelope
	}
	return h, data[5+n:], nil
}

// errBadSnapshot is joined to ErrBadEnvelope for a malformed snapshot.
var errBadSnapshot = errors.New("bus: malformed session snapshot")

// decodeSnapshot1 decodes a snapshot of format 1; its strings are
// substrings of raw.
func decodeSnapshot1(raw string) (*SessionInfo, error) {
	r := reader{s: raw}
	s := &SessionInfo{ID: r.str(), ProtocolVersion: r.str(), LogLevel: protocol.LoggingLevel(r.str())}
	if r.byte() == 1 {
		ci := &protocol.Implementation{Name: r.str(), Version: r.str(), Title: r.str(), Description: r.str(), WebsiteURL: r.str()}
		if n, ok := r.count(4); ok {
			ci.Icons = make([]protocol.Icon, n)
			for i := range ci.Icons {
				ic := &ci.Icons[i]
				ic.Src, ic.MimeType = r.str(), r.str()
				if n, ok := r.count(1); ok {
					ic.Sizes = make([]string, n)
					for j := range ic.Sizes {
						ic.Sizes[j] = r.str()
					}
				}
				ic.Theme = r.str()
			}
		}
		s.ClientInfo = ci
	}
	if r.byte() == 1 {
		s.ClientCapabilities = decodeCapabilities1(&r)
	}
	if r.bad {
		return nil, errBadSnapshot
	}
	return s, nil
}

func decodeCapabilities1(r *reader) *protocol.ClientCapabilities {
	cc := new(protocol.ClientCapabilities)
	bits := r.byte()
	if bits&capRoots != 0 {
		cc.Roots = &protocol.RootsCapability{ListChanged: bits&capRootsListChanged != 0}
	}
	if bits&capSampling != 0 {
		cc.Sampling = &protocol.SamplingCapability{Context: present(bits & capSamplingContext), Tools: present(bits & capSamplingTools)}
	}
	if bits&capElicitation != 0 {
		cc.Elicitation = &protocol.ElicitationCapability{Form: present(bits & capElicitationForm), URL: present(bits & capElicitationURL)}
	}
	cc.Experimental = r.rawMap()
	cc.Tasks = r.raw()
	cc.Extensions = r.rawMap()
	return cc
}

// present is a *struct{} set when bit is.
func present(bit byte) *struct{} {
	if bit == 0 {
		return nil
	}
	return &struct{}{}
}

// reader reads the fields of a binary header. Reading past the end or a
// malformed field sets bad and yields zero values from then on: callers
// check bad once at the end.
type reader struct {
	s   string
	off int
	bad bool
}

func (r *reader) byte() byte {
	if r.bad || r.off >= len(r.s) {
		r.bad = true
		return 0
	}
	r.off++
	return r.s[r.off-1]
}

func (r *reader) uvarint() uint64 {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c := r.byte()
		if r.bad {
			return 0
		}
		if shift == 63 && c > 1 {
			break // overflow
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	r.bad = true
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// take returns the next n bytes.
func (r *reader) take(n uint64) string {
	if r.bad || n > uint64(len(r.s)-r.off) {
		r.bad = true
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) str() string { return r.take(r.uvarint()) }

// fixed reads a uint32 length and that many bytes.
func (r *reader) fixed() string {
	var n uint64
	for range 4 {
		n = n<<8 | uint64(r.byte())
	}
	return r.take(n)
}

// count reads a count (appendCount); ok is false for nil (or when bad). An
// element takes at least minSize bytes, so a count larger than what is
// left is malformed (and never allocates).
func (r *reader) count(minSize int) (n int, ok bool) {
	c := r.uvarint()
	if c == 0 || r.bad {
		return 0, false
	}
	if c-1 > uint64(len(r.s)-r.off)/uint64(minSize) {
		r.bad = true
		return 0, false
	}
	return int(c - 1), true
}

func (r *reader) raw() json.RawMessage {
	n, ok := r.count(1)
	if !ok {
		return nil
	}
	return json.RawMessage(r.take(uint64(n)))
}

func (r *reader) rawMap() map[string]json.RawMessage {
	n, ok := r.count(2)
	if !ok {
		return nil
	}
	m := make(map[string]json.RawMessage, n)
	for range n {
		k := r.str()
		m[k] = r.raw()
	}
	return m
}
