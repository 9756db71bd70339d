package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// ID is a JSON-RPC request id: a string or an integer, never null. The zero
// ID is "absent" (a notification, or an error response to an unparseable
// request) and is not valid as a request id.
type ID struct {
	str  string
	num  int64
	kind idKind
}

type idKind uint8

const (
	idAbsent idKind = iota
	idString
	idInt
)

// StringID returns an ID holding s.
func StringID(s string) ID { return ID{str: s, kind: idString} }

// Int64ID returns an ID holding n.
func Int64ID(n int64) ID { return ID{num: n, kind: idInt} }

// IsValid reports whether the ID is present (string or integer).
func (id ID) IsValid() bool { return id.kind != idAbsent }

// IsString reports whether the ID is a string.
func (id ID) IsString() bool { return id.kind == idString }

// Str returns the string value of a string ID, "" otherwise.
func (id ID) Str() string { return id.str }

// Int returns the integer value of an integer ID, 0 otherwise.
func (id ID) Int() int64 { return id.num }

// String renders the ID for logs and keys: strings are quoted, so "1" and 1
// never collide.
func (id ID) String() string {
	switch id.kind {
	case idString:
		return strconv.Quote(id.str)
	case idInt:
		return strconv.FormatInt(id.num, 10)
	}
	return "<absent>"
}

// AppendJSON appends the JSON form of the ID (null when absent).
func (id ID) AppendJSON(b []byte) []byte {
	switch id.kind {
	case idString:
		s, _ := json.Marshal(id.str)
		return append(b, s...)
	case idInt:
		return strconv.AppendInt(b, id.num, 10)
	}
	return append(b, "null"...)
}

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) { return id.AppendJSON(nil), nil }

// ErrInvalidID is returned when an id is null, a fraction, a bool, an object
// or an array.
var ErrInvalidID = errors.New("protocol: id must be a string or an integer")

// UnmarshalJSON implements json.Unmarshaler. null is rejected.
func (id *ID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return ErrInvalidID
	}
	switch data[0] {
	case '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return ErrInvalidID
		}
		*id = StringID(s)
		return nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			// Accept integral values written with an exponent or ".0".
			f, ferr := strconv.ParseFloat(string(data), 64)
			if ferr != nil || f != float64(int64(f)) {
				return ErrInvalidID
			}
			n = int64(f)
		}
		*id = Int64ID(n)
		return nil
	}
	return ErrInvalidID
}
