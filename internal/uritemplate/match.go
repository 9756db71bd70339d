package uritemplate

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// capture describes one submatch of Template.re.
type capture struct {
	// spec is the variable a value capture holds; unused for parameters.
	spec varspec
	// params is non-nil for a ;, ? or & section: the declared parameters,
	// by name. The section is matched whole and split by parseParams.
	params map[string]varspec
	// sep separates parameters: ';' or '&'.
	sep byte
}

// compile builds the anchored regular expression Match uses. See the
// package documentation for the rules it encodes.
func (t *Template) compile() error {
	var re strings.Builder
	re.WriteString(`^(?s:`)
	for i := 0; i < len(t.parts); i++ {
		p := t.parts[i]
		if p.expr == nil {
			re.WriteString(regexp.QuoteMeta(p.literal))
			continue
		}
		switch op := p.expr.op; op {
		case opParam:
			re.WriteString(`((?:;` + unit(`/?#;`) + `*)*)`)
			t.captures = append(t.captures, capture{params: paramSpecs(p.expr.specs), sep: ';'})
		case opQuery, opCont:
			// A query and the continuations right after it are one
			// section whose parameters may come in any order.
			specs := slices.Clone(p.expr.specs)
			lead := `\?`
			if op == opCont {
				lead = `&`
			}
			for i+1 < len(t.parts) && t.parts[i+1].expr != nil && t.parts[i+1].expr.op == opCont {
				i++
				specs = append(specs, t.parts[i].expr.specs...)
				lead = `[?&]`
			}
			re.WriteString(`((?:` + lead + unit(`#`) + `*)?)`)
			t.captures = append(t.captures, capture{params: paramSpecs(specs), sep: '&'})
		default:
			re.WriteString(valuePattern(p.expr))
			for _, spec := range p.expr.specs {
				t.captures = append(t.captures, capture{spec: spec})
			}
		}
	}
	re.WriteString(`)$`)
	var err error
	t.re, err = regexp.Compile(re.String())
	return err
}

func paramSpecs(specs []varspec) map[string]varspec {
	m := make(map[string]varspec, len(specs))
	for _, s := range specs {
		if _, ok := m[s.name]; !ok {
			m[s.name] = s
		}
	}
	return m
}

// pctTriplet matches one percent-encoded octet. Values are matched as
// sequences of whole triplets and other characters, so a split between two
// variables never falls inside a triplet and invalid percent-encoding never
// matches.
const pctTriplet = `%[0-9A-Fa-f]{2}`

// unit returns a pattern for one character of an encoded value: a triplet,
// or a character other than '%' and those in exclude (a bracket expression
// body, already escaped).
func unit(exclude string) string {
	return `(?:[^%` + exclude + `]|` + pctTriplet + `)`
}

// valuePattern returns the pattern of an expression whose values are not
// named (operators none, +, #, . and /), with one group per variable.
func valuePattern(e *expression) string {
	op := e.op
	multi := len(e.specs) > 1
	var u string
	switch op {
	case opReserved, opFragment:
		if multi {
			u = unit(`,`)
		} else {
			u = unit(``)
		}
	case opLabel:
		u = unit(`/?#.`)
	case opPath:
		u = unit(`/?#`)
	default:
		if multi {
			u = unit(`/?#,`)
		} else {
			u = unit(`/?#`)
		}
	}
	sep := regexp.QuoteMeta(op.sep)
	var b strings.Builder
	if op.first == "" {
		// Simple and reserved expansion have no leading character: the
		// first value is required and non-empty.
		b.WriteString(`(` + u + `+?)`)
	} else {
		b.WriteString(`(?:` + regexp.QuoteMeta(op.first) + `(` + u + `*?)`)
	}
	for range e.specs[1:] {
		b.WriteString(`(?:` + sep + `(` + u + `*?))?`)
	}
	if op.first != "" {
		b.WriteString(`)?`)
	}
	return b.String()
}

type observation struct {
	spec  varspec
	value string
}

// Match reports whether uri is an expansion of the template and, if so,
// returns the percent-decoded value of each variable it defines. Variables
// that the URI leaves undefined (an absent optional expression or query
// parameter) are not in the map. URIs longer than [MaxURILength] bytes never
// match. See the package documentation for the matching rules.
func (t *Template) Match(uri string) (map[string]string, bool) {
	if len(uri) > MaxURILength {
		return nil, false
	}
	m := t.re.FindStringSubmatchIndex(uri)
	if m == nil {
		return nil, false
	}
	var obs []observation
	for i, c := range t.captures {
		lo, hi := m[2*i+2], m[2*i+3]
		if lo < 0 {
			continue
		}
		raw := uri[lo:hi]
		if c.params == nil {
			v, err := url.PathUnescape(raw)
			if err != nil {
				return nil, false
			}
			obs = append(obs, observation{spec: c.spec, value: v})
			continue
		}
		var ok bool
		if obs, ok = parseParams(raw, c, obs); !ok {
			return nil, false
		}
	}
	return resolve(obs)
}

// parseParams splits a matched ;, ? or & section into observations. It fails
// on undeclared or repeated parameters and on invalid percent-encoding.
func parseParams(raw string, c capture, obs []observation) ([]observation, bool) {
	if raw == "" {
		return obs, true
	}
	seen := map[string]bool{}
	for piece := range strings.SplitSeq(raw[1:], string(c.sep)) {
		if piece == "" {
			continue
		}
		name, value, _ := strings.Cut(piece, "=")
		spec, ok := c.params[name]
		if !ok || seen[name] {
			return nil, false
		}
		seen[name] = true
		v, err := url.PathUnescape(value)
		if err != nil {
			return nil, false
		}
		obs = append(obs, observation{spec: spec, value: v})
	}
	return obs, true
}

// resolve merges the observations of each variable: a full occurrence
// determines the value (the longest prefix occurrence if there is none), and
// every other occurrence must agree with it.
func resolve(obs []observation) (map[string]string, bool) {
	vals := make(map[string]string, len(obs))
	full := map[string]bool{}
	for _, o := range obs {
		if o.spec.prefix == 0 && !full[o.spec.name] {
			vals[o.spec.name] = o.value
			full[o.spec.name] = true
		}
	}
	for _, o := range obs {
		if o.spec.prefix == 0 || full[o.spec.name] {
			continue
		}
		if cur, ok := vals[o.spec.name]; !ok || runeCount(o.value) > runeCount(cur) {
			vals[o.spec.name] = o.value
		}
	}
	for _, o := range obs {
		v := vals[o.spec.name]
		if o.spec.prefix > 0 {
			v = truncate(v, o.spec.prefix)
		}
		if v != o.value {
			return nil, false
		}
	}
	return vals, true
}
