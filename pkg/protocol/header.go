package protocol

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// DecodeHeaderValue decodes an Mcp-Name or Mcp-Param-* header value
// (2026-07-28, SEP-2243), already stripped of surrounding whitespace: the
// =?base64?<standard padded base64>?= form is decoded strictly (bad padding
// or characters, or a result that is not UTF-8, are errors); any other
// value is literal and must be printable ASCII.
func DecodeHeaderValue(v string) (string, error) {
	const pre, suf = "=?base64?", "?="
	if strings.HasPrefix(v, pre) && strings.HasSuffix(v, suf) && len(v) >= len(pre)+len(suf) {
		inner := v[len(pre) : len(v)-len(suf)]
		if strings.ContainsAny(inner, "\r\n") {
			// Strict base64 decoding still skips line breaks.
			return "", errors.New("invalid base64 value")
		}
		b, err := base64.StdEncoding.Strict().DecodeString(inner)
		if err != nil {
			return "", errors.New("invalid base64 value")
		}
		if !utf8.Valid(b) {
			return "", errors.New("the base64 value is not UTF-8")
		}
		return string(b), nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", errors.New("invalid character in the value (non-ASCII values use the =?base64?...?= form)")
		}
	}
	return v, nil
}

// IsToken reports whether s is an HTTP token (RFC 9110 section 5.6.2):
// what a header name, such as the {Name} of Mcp-Param-{Name}, must be.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
