package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Kind tells what a decoded JSON-RPC message is.
type Kind uint8

// The message kinds.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse // a result or an error response
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// Message is one decoded JSON-RPC 2.0 message. Params and Result are kept
// raw; Error is decoded. The fields are plain so a Message can be built by
// hand; use [Decode] to parse one from the wire.
type Message struct {
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// Kind classifies the message. Decode only returns messages of a valid kind.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && m.ID.IsValid() && m.Result == nil && m.Error == nil:
		return KindRequest
	case m.Method != "" && !m.ID.IsValid() && m.Result == nil && m.Error == nil:
		return KindNotification
	case m.Method == "" && (m.Result != nil) != (m.Error != nil):
		return KindResponse
	}
	return KindInvalid
}

// DefaultMaxDepth is the nesting cap [Decode] applies when given 0.
const DefaultMaxDepth = 64

// DecodeError is what Decode returns: a JSON-RPC error (-32700 or -32600)
// plus whatever id could be recovered, so the error response can echo it.
type DecodeError struct {
	Err *Error
	ID  ID
	// Batch is set when the body was a JSON array.
	Batch bool
}

func (e *DecodeError) Error() string { return e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// wireMessage is the on-the-wire shape; id stays raw so null can be told
// apart from absent.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Decode parses exactly one JSON-RPC message from data in one pass.
//
// It rejects: invalid JSON and nesting deeper than maxDepth (0 means
// DefaultMaxDepth) with -32700; arrays (batches), non-objects, a missing or
// wrong "jsonrpc", a null or non-integer id, a non-object params, and
// inconsistent member combinations with -32600. The returned message is
// valid: Kind() is never KindInvalid.
func Decode(data []byte, maxDepth int) (*Message, error) {
	m, _, err := decode(data, maxDepth, nil)
	return m, err
}

// DecodeWithHead is Decode followed, when the message it returns has
// params, by DecodeParamsHead of them into head, with the same results as
// the two calls in sequence, but in one pass over data when the message
// can be read plainly. err is Decode's error (head is then left as it
// is); otherwise head is set (the zero ParamsHead for a message without
// params) and headErr is DecodeParamsHead's error.
func DecodeWithHead(data []byte, maxDepth int, head *ParamsHead) (m *Message, headErr, err error) {
	return decode(data, maxDepth, head)
}

// decode is Decode, and DecodeWithHead when head is not nil.
func decode(data []byte, maxDepth int, head *ParamsHead) (m *Message, headErr, err error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	first := firstByte(data)
	switch first {
	case '{':
	case '[':
		if !json.Valid(data) {
			return nil, nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		return nil, nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message per request"), Batch: true}
	default:
		if !json.Valid(data) {
			return nil, nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		return nil, nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object")}
	}
	// The fast path: one valid object no deeper than maxDepth (so
	// CheckDepth, which only a deeper one fails, is not needed) whose
	// members scan reads plainly.
	var w wireMessage
	var hv [6][]byte
	hm := newMembers(paramsHeadMembers, hv[:])
	hmp := &hm
	if head == nil {
		hmp = nil
	}
	if w.scan(data, min(maxDepth, maxScanDepth), hmp) {
		m, err := finishDecode(&w)
		if err != nil || head == nil {
			return m, nil, err
		}
		// A message with params that scan read has one params member,
		// an object, whose members hm got.
		*head = ParamsHead{}
		if m.Params != nil && (!hm.fast || !head.fill(&hv)) {
			headErr = DecodeParamsHead(m.Params, head)
		}
		return m, headErr, nil
	}
	if err := CheckDepth(data, maxDepth); err != nil {
		return nil, nil, &DecodeError{Err: NewError(CodeParseError, "parse error: %v", err)}
	}
	w = wireMessage{}
	if err := json.Unmarshal(data, &w); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(data) {
			return nil, nil, &DecodeError{Err: NewError(CodeParseError, "parse error: invalid JSON")}
		}
		// A member of the wrong type ("method":5): Unmarshal still filled
		// the others, so echo the id when it is readable.
		de := &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: %v", err)}
		if len(w.ID) > 0 {
			_ = de.ID.UnmarshalJSON(w.ID)
		}
		return nil, nil, de
	}
	m, err = finishDecode(&w)
	if err != nil || head == nil {
		return m, nil, err
	}
	*head = ParamsHead{}
	if m.Params != nil {
		headErr = DecodeParamsHead(m.Params, head)
	}
	return m, headErr, nil
}

// wireMembers are wireMessage's json names, in the order scan reads them.
var wireMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// scan fills w as json.Unmarshal does, without a reflection walk, when
// data is one valid object nested at most limit deep (at most
// maxScanDepth) whose members ScanMembers can read and whose jsonrpc and
// method are plain strings; false means the caller decodes with
// encoding/json (w is then partly filled: reset it). head, when not nil,
// gets the members of the params, when they are an object, as they are
// read.
func (w *wireMessage) scan(data []byte, limit int, head *members) bool {
	var v [6][]byte
	wm := newMembers(wireMembers, v[:])
	s := scanner{b: data, limit: limit}
	if !s.top(nil, &wm, "params", head) || !wm.fast {
		return false
	}
	if v[0] != nil {
		if string(v[0]) == `"2.0"` {
			w.JSONRPC = "2.0" // the only valid one: no copy
		} else {
			s, ok := PlainString(v[0])
			if !ok {
				return false
			}
			w.JSONRPC = s
		}
	}
	if v[2] != nil {
		if m := knownMethods[string(v[2])]; m != nil {
			w.Method = m // read-only, as every w.Method is
		} else {
			s, ok := PlainString(v[2])
			if !ok {
				return false
			}
			w.Method = &s
		}
	}
	// Copies, as encoding/json's: the caller may reuse data.
	w.ID, w.Params, w.Result, w.Error = rawCopy(v[1]), rawCopy(v[3]), rawCopy(v[4]), rawCopy(v[5])
	return true
}

// knownMethods maps the JSON encoding of every method either era serves
// to its name, so that decoding one copies nothing.
var knownMethods = func() map[string]*string {
	m := map[string]*string{}
	for _, methods := range eraMethods {
		for name := range methods {
			name := name
			m[`"`+name+`"`] = &name
		}
	}
	return m
}()

func rawCopy(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// finishDecode checks a decoded wire message and builds the Message.
func finishDecode(w *wireMessage) (*Message, error) {
	m := &Message{Params: nonNull(w.Params), Result: nonNull(w.Result)}
	if w.Method != nil {
		m.Method = *w.Method
	}
	idOK := true
	if len(w.ID) > 0 {
		if err := m.ID.UnmarshalJSON(w.ID); err != nil {
			idOK = false
		}
	}
	fail := func(msg string) (*Message, error) {
		return nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: "+msg), ID: m.ID}
	}
	if w.JSONRPC != "2.0" {
		return fail(`"jsonrpc" must be "2.0"`)
	}
	if !idOK {
		return fail("id must be a string or an integer, never null")
	}
	if w.Method != nil && m.Method == "" {
		return fail("method must be a non-empty string")
	}
	if len(w.Error) > 0 && !isNull(w.Error) {
		var e Error
		if err := json.Unmarshal(w.Error, &e); err != nil {
			return fail("error must be an object with an integer code and a message")
		}
		m.Error = &e
	}
	if m.Params != nil && firstByte(m.Params) != '{' {
		return fail("params must be an object")
	}
	if m.Kind() == KindInvalid {
		return fail("not a request, notification or response")
	}
	if m.Kind() == KindResponse && m.Result != nil && firstByte(m.Result) != '{' {
		return fail("result must be an object")
	}
	if m.Kind() == KindResponse && m.Result != nil && !m.ID.IsValid() {
		// Only an error response may omit the id.
		return fail("a result response must have an id")
	}
	return m, nil
}

func nonNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || isNull(r) {
		return nil
	}
	return r
}

func isNull(r []byte) bool { return string(bytes.TrimSpace(r)) == "null" }

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// ErrTooDeep is returned by CheckDepth.
var ErrTooDeep = errors.New("JSON nesting exceeds the limit")

// CheckDepth scans data once and fails if objects/arrays nest deeper than
// max. It does not validate the JSON otherwise.
func CheckDepth(data []byte, max int) error {
	depth := 0
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				return ErrTooDeep
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// ErrTooLong reports a string or an array over CheckSizes' caps.
var ErrTooLong = errors.New("protocol: a string or an array is over the size limit")

// CheckSizes scans JSON data for strings longer than maxString bytes (as
// written, escapes included; member names too) and for arrays of more
// than maxArray elements or objects of more than maxArray members; a cap
// of 0 or less is not checked. The values of the object members named in
// exempt (anywhere in data, whatever they hold) are not checked. data is
// assumed well-formed enough to scan (run it after Decode or CheckDepth,
// which bound the nesting).
func CheckSizes(data []byte, maxString, maxArray int, exempt ...string) error {
	if (maxString <= 0 || len(data) <= maxString) && (maxArray <= 0 || len(data) <= 2*maxArray) {
		return nil // too short to hold either
	}
	// open holds, per open container, whether it is an object and how
	// many elements or members it has shown so far (commas + 1 once
	// non-empty).
	type container struct {
		object bool
		n      int
	}
	var open []container
	var (
		inStr      bool
		isKey      bool // the string being read is a member name
		skipStr    bool // the string being read is an exempt value
		afterColon bool // a member's value comes next
		exemptNext bool // the value that comes next is exempt
		exemptAt   = -1 // >= 0: inside an exempt container opened at that depth
		start      int
	)
	inExempt := func() bool { return exemptAt >= 0 && len(open) > exemptAt }
	// first marks the first element (a value in an array) or member (a
	// name in an object) of the innermost container.
	first := func(object bool) {
		if n := len(open); n > 0 && open[n-1].object == object && open[n-1].n == 0 {
			open[n-1].n = 1
		}
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
				if !skipStr && !inExempt() && maxString > 0 && i-start-1 > maxString {
					return fmt.Errorf("%w: a string of %d bytes (at most %d)", ErrTooLong, i-start-1, maxString)
				}
				if isKey {
					exemptNext = len(exempt) > 0 && isOneOf(data[start+1:i], exempt)
				}
			}
			continue
		}
		switch c {
		case '"':
			isKey = len(open) > 0 && open[len(open)-1].object && !afterColon
			skipStr = false
			if isKey {
				first(true)
			} else {
				skipStr, exemptNext = exemptNext, false
				first(false)
			}
			afterColon = false
			inStr, start = true, i
		case '{', '[':
			first(false)
			afterColon = false
			if exemptNext && exemptAt < 0 {
				exemptAt = len(open)
			}
			exemptNext = false
			open = append(open, container{object: c == '{'})
		case '}', ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			if exemptAt >= 0 && len(open) <= exemptAt {
				exemptAt = -1
			}
			afterColon = false
		case ',':
			afterColon = false
			if n := len(open); n > 0 && !inExempt() {
				open[n-1].n++
				if maxArray > 0 && open[n-1].n > maxArray {
					if open[n-1].object {
						return fmt.Errorf("%w: an object of more than %d members", ErrTooLong, maxArray)
					}
					return fmt.Errorf("%w: an array of more than %d elements", ErrTooLong, maxArray)
				}
			}
		case ':':
			afterColon = true
		case ' ', '\t', '\r', '\n':
		default:
			// a number, true, false or null
			first(false)
			afterColon = false
			exemptNext = false
		}
	}
	return nil
}

func isOneOf(name []byte, names []string) bool {
	for _, n := range names {
		if string(name) == n {
			return true
		}
	}
	return false
}

// ResponseErrorCode reads the error code of a response encoded by
// AppendResponse / AppendErrorResponse (or encoding/json) without decoding
// it: an error response has "error" where a result has "result", before
// any nested content, so a result that merely contains an "error" member
// is not mistaken for one. ok is false for a result.
func ResponseErrorCode(resp []byte) (code int64, ok bool) {
	const key = `"error":{"code":`
	i := bytes.Index(resp, []byte(key))
	if i < 0 {
		return 0, false
	}
	if j := bytes.Index(resp, []byte(`"result":`)); j >= 0 && j < i {
		return 0, false
	}
	rest := resp[i+len(key):]
	j := bytes.IndexAny(rest, ",}")
	if j < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// IsToolErrorResult reports whether an encoded tools/call response has a
// result whose own isError member is true. Only a response holding the
// bytes "isError":true (as encoding/json writes the member; inside a
// JSON string its quotes would be escaped) is read further, so the common
// answer costs one search: then the result's members are read, and an
// isError member deeper down (in structuredContent, say) is not the
// result's.
func IsToolErrorResult(resp []byte) bool {
	if !bytes.Contains(resp, isErrorTrue) {
		return false
	}
	var v [1][]byte
	if ScanMembers(resp, resultMember, v[:]) {
		return v[0] != nil && isErrorMemberTrue(v[0])
	}
	var m struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	return json.Unmarshal(resp, &m) == nil && m.Result != nil && m.Result.IsError
}

// IsToolError is [IsToolErrorResult] for an encoded tools/call result
// (the result object alone, not a response around it).
func IsToolError(result []byte) bool {
	return bytes.Contains(result, isErrorTrue) && isErrorMemberTrue(result)
}

// isErrorMemberTrue reports whether the object result's own isError
// member is true.
func isErrorMemberTrue(result []byte) bool {
	var v [1][]byte
	if ScanMembers(result, isErrorMember, v[:]) {
		return string(v[0]) == "true"
	}
	var m struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &m) == nil && m.IsError
}

var resultMember, isErrorMember = []string{"result"}, []string{"isError"}

var isErrorTrue = []byte(`"isError":true`)
