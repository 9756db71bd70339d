package uritemplate

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInvalidTemplate is wrapped by every error [Parse] returns.
var ErrInvalidTemplate = errors.New("uritemplate: invalid template")

// Template is a parsed URI template. It is immutable and safe for concurrent
// use.
type Template struct {
	raw   string
	parts []part
	vars  []string // distinct variable names, in order of first appearance

	// re matches a whole URI; captures[i] describes submatch i+1.
	re       *regexp.Regexp
	captures []capture
}

// part is a literal or an expression. Literals are stored percent-encoded as
// they appear in an expansion.
type part struct {
	literal string
	expr    *expression
}

type expression struct {
	op    *operator
	specs []varspec
}

type varspec struct {
	name    string
	prefix  int // maximum length in characters; 0 means no prefix modifier
	explode bool
}

// operator holds the expansion rules of RFC 6570 appendix A.
type operator struct {
	char     byte   // 0 for simple string expansion
	first    string // written before the first defined value
	sep      string // written between defined values
	named    bool   // values are written as name=value
	ifEmpty  string // written after the name when the value is empty
	reserved bool   // reserved characters and pct-encoded triplets pass through
}

var (
	opSimple   = &operator{char: 0, first: "", sep: ","}
	opReserved = &operator{char: '+', first: "", sep: ",", reserved: true}
	opFragment = &operator{char: '#', first: "#", sep: ",", reserved: true}
	opLabel    = &operator{char: '.', first: ".", sep: "."}
	opPath     = &operator{char: '/', first: "/", sep: "/"}
	opParam    = &operator{char: ';', first: ";", sep: ";", named: true}
	opQuery    = &operator{char: '?', first: "?", sep: "&", named: true, ifEmpty: "="}
	opCont     = &operator{char: '&', first: "&", sep: "&", named: true, ifEmpty: "="}
)

func lookupOperator(c byte) (*operator, bool) {
	for _, op := range []*operator{opReserved, opFragment, opLabel, opPath, opParam, opQuery, opCont} {
		if op.char == c {
			return op, true
		}
	}
	return nil, false
}

const (
	// maxPrefix is the largest prefix modifier RFC 6570 allows (four
	// digits).
	maxPrefix = 9999

	// MaxVarspecs bounds the number of variable occurrences in a template
	// (a variable used twice counts twice). The cost of [Template.Match]
	// grows with it; real templates use a handful.
	MaxVarspecs = 64

	// MaxTemplateLength bounds the length in bytes of a template given to
	// [Parse].
	MaxTemplateLength = 8 << 10

	// MaxURILength bounds the length in bytes of a URI that
	// [Template.Match] considers; longer URIs never match. With
	// [MaxVarspecs] it bounds the time one match can take.
	MaxURILength = 16 << 10
)

// Parse parses an RFC 6570 template. It fails, wrapping
// [ErrInvalidTemplate], on unbalanced braces, empty expressions, reserved
// operators (= , ! @ |), invalid variable names, invalid modifiers, more
// than [MaxVarspecs] variable occurrences and templates longer than
// [MaxTemplateLength] bytes.
// Literal characters that may not appear in a URI are accepted and
// percent-encoded, as RFC 6570 section 3.1 requires.
func Parse(s string) (*Template, error) {
	if len(s) > MaxTemplateLength {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidTemplate, MaxTemplateLength)
	}
	t := &Template{raw: s}
	seen := map[string]bool{}
	nspecs := 0
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{literal: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '{':
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] == '{' {
				return nil, fmt.Errorf("%w at offset %d: unclosed %q", ErrInvalidTemplate, i, "{")
			}
			expr, err := parseExpression(s[i+1:i+1+end], i)
			if err != nil {
				return nil, err
			}
			if nspecs += len(expr.specs); nspecs > MaxVarspecs {
				return nil, fmt.Errorf("%w at offset %d: more than %d variables", ErrInvalidTemplate, i, MaxVarspecs)
			}
			flush()
			t.parts = append(t.parts, part{expr: expr})
			for _, v := range expr.specs {
				if !seen[v.name] {
					seen[v.name] = true
					t.vars = append(t.vars, v.name)
				}
			}
			i += end + 2
		case '}':
			return nil, fmt.Errorf("%w at offset %d: unmatched %q", ErrInvalidTemplate, i, "}")
		default:
			if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				lit.WriteString(s[i : i+3])
				i += 3
				continue
			}
			if isUnreserved(s[i]) || isReserved(s[i]) {
				lit.WriteByte(s[i])
			} else {
				writePctEncoded(&lit, s[i])
			}
			i++
		}
	}
	flush()
	if err := t.compile(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTemplate, err)
	}
	return t, nil
}

// parseExpression parses the text between braces; offset locates the
// opening brace for error messages.
func parseExpression(body string, offset int) (*expression, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w at offset %d: %s", ErrInvalidTemplate, offset, fmt.Sprintf(format, args...))
	}
	if body == "" {
		return nil, fail("empty expression")
	}
	expr := &expression{op: opSimple}
	if op, ok := lookupOperator(body[0]); ok {
		expr.op = op
		body = body[1:]
	} else if strings.IndexByte("=,!@|", body[0]) >= 0 {
		return nil, fail("reserved operator %q", body[0])
	}
	for spec := range strings.SplitSeq(body, ",") {
		v := varspec{name: spec}
		if name, ok := strings.CutSuffix(spec, "*"); ok {
			v.name, v.explode = name, true
		} else if name, digits, ok := strings.Cut(spec, ":"); ok {
			n, err := strconv.Atoi(digits)
			if err != nil || digits == "" || digits[0] < '1' || digits[0] > '9' || len(digits) > 4 || n > maxPrefix {
				return nil, fail("invalid prefix modifier %q", spec)
			}
			v.name, v.prefix = name, n
		}
		if !validVarName(v.name) {
			return nil, fail("invalid variable name %q", v.name)
		}
		expr.specs = append(expr.specs, v)
	}
	return expr, nil
}

// validVarName implements varname = varchar *( ["."] varchar ), with
// varchar = ALPHA / DIGIT / "_" / pct-encoded.
func validVarName(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// String returns the template exactly as given to [Parse].
func (t *Template) String() string { return t.raw }

// Vars returns the distinct variable names of the template in order of
// first appearance. The caller may modify the returned slice.
func (t *Template) Vars() []string {
	return append([]string(nil), t.vars...)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isUnreserved reports whether c is ALPHA / DIGIT / "-" / "." / "_" / "~".
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// isReserved reports whether c is a gen-delim or sub-delim of RFC 3986.
func isReserved(c byte) bool {
	return strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0
}

func writePctEncoded(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&0xF])
}
