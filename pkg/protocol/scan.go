package protocol

import "unicode/utf8"

// ScanObject reads b as one JSON object (whitespace around it allowed)
// and calls member for each of its members in order, with the key's
// bytes between the quotes (escapes left as they are: escaped is true
// when the key holds a backslash) and the value's raw bytes. Both alias
// b. It reports false, having called member for some members or none,
// when b is not exactly one valid JSON object (by encoding/json's
// grammar: strings may hold any byte from 0x20 up, escapes are checked),
// or nests deeper than encoding/json's 10000 levels: the caller then
// falls back to encoding/json, which says what is wrong.
//
// It is the fast path for the few members a hot method reads from its
// params, without a reflection walk: a caller that matches keys must
// treat as a reason to fall back a key that matches one of its names
// only in letter case, an escaped key, and a key with a non-ASCII byte
// (encoding/json's decode matches names case-insensitively, folding ſ
// and the Kelvin sign to s and k, and mends invalid UTF-8 in keys).
func ScanObject(b []byte, member func(key []byte, escaped bool, value []byte)) bool {
	s := scanner{b: b, limit: maxScanDepth}
	return s.top(member, nil, "", nil)
}

const maxScanDepth = 10000

type scanner struct {
	b     []byte
	i     int
	depth int
	// limit is the deepest nesting read: deeper is an error.
	limit int
}

// top reads all of s.b as one object, whitespace around it allowed; see
// object for the arguments.
func (s *scanner) top(member func(key []byte, escaped bool, value []byte), into *members, nestedKey string, nested *members) bool {
	s.space()
	if !s.object(member, into, nestedKey, nested) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object at s.i. Its members go to member, when not nil,
// and to into, when not nil; the members of the value of its member named
// nestedKey (unescaped), when that value is an object, go to nested, when
// not nil. (A *members, not its add method: a method value made here
// would escape to the heap.)
func (s *scanner) object(member func(key []byte, escaped bool, value []byte), into *members, nestedKey string, nested *members) bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if s.depth++; s.depth > s.limit {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		start := s.i
		escaped, ok := s.str()
		if !ok {
			return false
		}
		key := s.b[start+1 : s.i-1]
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		vstart := s.i
		if nested != nil && !escaped && s.i < len(s.b) && s.b[s.i] == '{' && string(key) == nestedKey {
			if !s.object(nil, nested, "", nil) {
				return false
			}
		} else if !s.value() {
			return false
		}
		if member != nil {
			member(key, escaped, s.b[vstart:s.i])
		}
		if into != nil {
			into.add(key, escaped, s.b[vstart:s.i])
		}
		if more, ok := s.after('}'); !more {
			return ok
		}
	}
}

func (s *scanner) array() bool {
	if s.depth++; s.depth > s.limit {
		return false
	}
	s.i++ // '['
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !s.value() {
			return false
		}
		if more, ok := s.after(']'); !more {
			return ok
		}
	}
}

// after reads what follows a member or element: a comma (more is true)
// or the closing byte of the object or array (ok is true, and the depth
// goes back up); anything else is an error.
func (s *scanner) after(close byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.space()
		return true, true
	case close:
		s.i++
		s.depth--
		return false, true
	}
	return false, false
}

func (s *scanner) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(nil, nil, "", nil)
	case c == '[':
		return s.array()
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// str reads a string at s.i, reporting whether it holds an escape.
func (s *scanner) str() (escaped, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false, false
	}
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return false, false
					}
				}
				s.i += 6
			default:
				return false, false
			}
		default:
			s.i++
		}
	}
	return false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return false
	}
	if s.b[s.i] == '0' {
		s.i++
	} else if !s.digits() {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// ScanMembers reads the object b for the members named by names (ASCII
// names, as a struct's json tags spell them): vals[i] gets the raw value
// of names[i] (nil when absent; it aliases b). It reports false when
// encoding/json's decode into a struct with those tags could differ or
// fail, so that the caller falls back to it: b is not one valid object
// (ScanObject), a name appears twice, or a key is escaped, not ASCII, or
// matches a name only when letter case is ignored. Other members are
// skipped, as encoding/json skips unknown members.
func ScanMembers(b []byte, names []string, vals [][]byte) bool {
	m := newMembers(names, vals)
	s := scanner{b: b, limit: maxScanDepth}
	return s.top(nil, &m, "", nil) && m.fast
}

// members collects the values of an object's members named by names into
// vals, as ScanMembers does; fast goes false when encoding/json's decode
// could differ.
type members struct {
	names []string
	vals  [][]byte
	fast  bool
}

func newMembers(names []string, vals [][]byte) members {
	clear(vals)
	return members{names: names, vals: vals, fast: true}
}

// add is the member function of ScanObject that collects.
func (m *members) add(key []byte, escaped bool, value []byte) {
	if !m.fast {
		return
	}
	if escaped || !asciiBytes(key) {
		m.fast = false
		return
	}
	for i, n := range m.names {
		if string(key) == n {
			if m.vals[i] != nil {
				m.fast = false
			}
			m.vals[i] = value
			return
		}
	}
	for _, n := range m.names {
		if len(n) == len(key) && equalFoldASCII(key, n) {
			m.fast = false
			return
		}
	}
}

// PlainString returns the JSON string raw holds when decoding it is a
// copy of its bytes: no escape and valid UTF-8 (encoding/json mends
// invalid UTF-8). ok is false for anything else (null, other types).
func PlainString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

func asciiBytes(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func equalFoldASCII(b []byte, s string) bool {
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
