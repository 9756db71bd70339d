package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
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
			// Accept integral values written with an exponent or ".0",
			// but only when exact: a float64 would round 1.00000000000000001
			// or 12345678901234567.0 to another id.
			var ok bool
			if n, ok = integralNumber(data); !ok {
				return ErrInvalidID
			}
		}
		*id = Int64ID(n)
		return nil
	}
	return ErrInvalidID
}

// integralNumber returns the value of the JSON number s when it is exactly
// an integer that fits in int64 ("1.0", "1e2", "-2.50e1"), ok=false
// otherwise.
func integralNumber(s []byte) (n int64, ok bool) {
	if !json.Valid(s) {
		return 0, false
	}
	str := string(s)
	neg := strings.HasPrefix(str, "-")
	str = strings.TrimPrefix(str, "-")
	exp := 0
	if i := strings.IndexAny(str, "eE"); i >= 0 {
		e, err := strconv.Atoi(str[i+1:])
		if err != nil {
			return 0, false // an exponent beyond int: never an int64
		}
		str, exp = str[:i], e
	}
	whole, frac, _ := strings.Cut(str, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	exp -= len(frac)
	for exp < 0 && strings.HasSuffix(digits, "0") {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	switch {
	case digits == "":
		return 0, true
	case exp < 0 || exp > 19 || len(digits)+exp > 19:
		return 0, false
	}
	digits += strings.Repeat("0", exp)
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}
