package uritemplate

import (
	"strings"
	"unicode/utf8"
)

// Expand expands the template with string values, following RFC 6570
// section 3.2. A variable absent from vars is undefined: it and its
// separator are omitted. Characters outside the set the operator allows are
// percent-encoded as UTF-8.
func (t *Template) Expand(vars map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.literal)
			continue
		}
		p.expr.expand(&b, vars)
	}
	return b.String()
}

func (e *expression) expand(b *strings.Builder, vars map[string]string) {
	op := e.op
	first := true
	for _, spec := range e.specs {
		val, ok := vars[spec.name]
		if !ok {
			continue
		}
		if first {
			b.WriteString(op.first)
			first = false
		} else {
			b.WriteString(op.sep)
		}
		if spec.prefix > 0 {
			val = truncate(val, spec.prefix)
		}
		if op.named {
			b.WriteString(spec.name)
			if val == "" {
				b.WriteString(op.ifEmpty)
				continue
			}
			b.WriteByte('=')
		}
		encode(b, val, op.reserved)
	}
}

// encode writes s with every byte outside the unreserved set (and, if
// reserved, outside the reserved set and pct-encoded triplets)
// percent-encoded.
func encode(b *strings.Builder, s string, reserved bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isUnreserved(c):
			b.WriteByte(c)
		case reserved && isReserved(c):
			b.WriteByte(c)
		case reserved && c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteString(s[i : i+3])
			i += 2
		default:
			writePctEncoded(b, c)
		}
	}
}

// truncate returns the first n characters of s. Bytes that are not valid
// UTF-8 count as one character each.
func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// runeCount counts characters the way truncate does.
func runeCount(s string) int { return utf8.RuneCountInString(s) }
